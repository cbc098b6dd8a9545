package io.github.pgqueue.listener;

import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.stream.IntStream;

import ch.qos.logback.classic.Level;
import ch.qos.logback.classic.Logger;
import ch.qos.logback.classic.spi.ILoggingEvent;
import ch.qos.logback.core.read.ListAppender;
import io.github.pgqueue.ConsumptionMode;
import io.github.pgqueue.QueueDefinition;
import io.github.pgqueue.QueueTemplate;
import io.github.pgqueue.testing.EmbeddedPostgres;
import io.github.pgqueue.testing.ListenerFixture;
import io.github.pgqueue.testing.PostgresExtension;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.extension.ExtendWith;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;
import org.slf4j.LoggerFactory;

import org.springframework.jdbc.core.JdbcTemplate;

import static io.github.pgqueue.testing.Db.count;
import static io.github.pgqueue.testing.ListenerFixture.endpoint;
import static io.github.pgqueue.testing.ListenerFixture.properties;
import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

/**
 * Consumers run their statements in READ COMMITTED whatever the database's default isolation
 * (the claim's re-check, the suspect tests and V14's fresh snapshot all depend on it): a drain by
 * concurrent consumers of a database whose default is serializable or repeatable read delivers
 * every message once, at its first attempt, with no failed statement. The database default is
 * put back after each test.
 */
@ExtendWith(PostgresExtension.class)
class DefaultIsolationIntegrationTests {

	private static final int TOTAL = 10_000;

	private final EmbeddedPostgres postgres = EmbeddedPostgres.get();

	private final JdbcTemplate jdbc = new JdbcTemplate(this.postgres.dataSource());

	private final ListAppender<ILoggingEvent> warnings = new ListAppender<>();

	private final Logger pgqueueLogger = (Logger) LoggerFactory.getLogger("io.github.pgqueue");

	/** Its pools open on first use: after the test has set the database's default isolation. */
	@RegisterExtension
	final ListenerFixture listeners = ListenerFixture.pools("iso-app", 8, "iso-consumers", 8);

	@AfterEach
	void restore() {
		this.pgqueueLogger.detachAppender(this.warnings);
		this.jdbc.execute("ALTER DATABASE postgres RESET default_transaction_isolation");
	}

	@ParameterizedTest
	@ValueSource(strings = { "serializable", "repeatable read" })
	void transactionalConsumersDeadLetterNothingWhenNoHandlerFailsWhateverTheDefaultIsolation(String isolation) {
		Map<Long, AtomicInteger> runs = drain(isolation, ConsumptionMode.TRANSACTIONAL);
		assertThat(runs).as("messages handled").hasSize(TOTAL);
		assertThat(runs.values()).as("runs per message").allSatisfy((n) -> assertThat(n).hasValue(1));
		assertThat(count("iso.dlq")).as("dead-lettered").isZero();
		assertThat(this.warnings.list).as("warnings").isEmpty();
	}

	@ParameterizedTest
	@ValueSource(strings = { "serializable", "repeatable read" })
	void sessionConsumersNeitherFailNorRedeliverWhateverTheDefaultIsolation(String isolation) {
		Map<Long, AtomicInteger> runs = drain(isolation, ConsumptionMode.SESSION);
		assertThat(runs).as("messages handled").hasSize(TOTAL);
		assertThat(runs.values()).as("runs per message").allSatisfy((n) -> assertThat(n).hasValue(1));
		assertThat(count("iso.dlq")).as("dead-lettered").isZero();
		assertThat(this.warnings.list).as("warnings (failed claims and completions)").isEmpty();
	}

	/**
	 * Sets the database's default isolation, sends {@link #TOTAL} messages to a queue whose messages
	 * have one attempt, and drains it with four pollers of batch 10 on connections opened since;
	 * how often each message's handler ran (handlers never fail).
	 */
	private Map<Long, AtomicInteger> drain(String isolation, ConsumptionMode mode) {
		this.jdbc.execute("ALTER DATABASE postgres SET default_transaction_isolation = '" + isolation + "'");
		assertThat(new JdbcTemplate(this.listeners.consumerPool())
			.queryForObject("SHOW transaction_isolation", String.class))
			.as("the default of a new connection").isEqualTo(isolation);
		this.warnings.start();
		this.warnings.addFilter(new ch.qos.logback.core.filter.Filter<>() {
			@Override
			public ch.qos.logback.core.spi.FilterReply decide(ILoggingEvent event) {
				return event.getLevel().isGreaterOrEqual(Level.WARN) ? ch.qos.logback.core.spi.FilterReply.NEUTRAL
						: ch.qos.logback.core.spi.FilterReply.DENY;
			}
		});
		this.pgqueueLogger.addAppender(this.warnings);

		QueueTemplate template = this.listeners.template();
		this.listeners.admin().declare(QueueDefinition.of("iso").withMaxAttempts(1));
		List<Integer> payloads = IntStream.range(0, TOTAL).boxed().toList();
		for (int i = 0; i < TOTAL; i += 1000) {
			template.sendBatch("iso", payloads.subList(i, i + 1000));
		}
		Map<Long, AtomicInteger> runs = new ConcurrentHashMap<>();
		this.listeners.start(endpoint("iso", Integer.class,
				(message, ack) -> runs.computeIfAbsent(message.id(), (id) -> new AtomicInteger()).incrementAndGet(),
				properties("iso").concurrency(4).mode(mode)));
		await().atMost(Duration.ofSeconds(120)).until(() -> count("iso") == 0);
		this.listeners.stop();
		return runs;
	}

}
