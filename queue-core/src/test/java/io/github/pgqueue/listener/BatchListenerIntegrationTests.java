package io.github.pgqueue.listener;

import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.stream.IntStream;

import com.zaxxer.hikari.HikariDataSource;
import io.github.pgqueue.AckMode;
import io.github.pgqueue.ConsumptionMode;
import io.github.pgqueue.QueueAdmin;
import io.github.pgqueue.QueueDefinition;
import io.github.pgqueue.QueueMessage;
import io.github.pgqueue.QueueTemplate;
import io.github.pgqueue.testing.EmbeddedPostgres;
import io.github.pgqueue.testing.PostgresExtension;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;

import org.springframework.jdbc.core.JdbcTemplate;

import static io.github.pgqueue.testing.Db.count;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatIllegalArgumentException;
import static org.awaitility.Awaitility.await;

/**
 * Batch listeners in both modes: every message once, a named failure acks what came before it
 * (session mode) or rolls everything back (transactional mode), any other failure fails them all.
 */
@ExtendWith(PostgresExtension.class)
class BatchListenerIntegrationTests {

	private final EmbeddedPostgres postgres = EmbeddedPostgres.get();

	private final JdbcTemplate jdbc = new JdbcTemplate(this.postgres.dataSource());

	private final HikariDataSource app = this.postgres.pool("batch-app", 8);

	private final JdbcTemplate appJdbc = new JdbcTemplate(this.app);

	private final QueueTemplate template = QueueTemplate.builder(this.app).build();

	private final QueueAdmin admin = new QueueAdmin(this.template.context());

	private final HikariDataSource consumerPool = this.postgres.pool("batch-consumers", 8);

	private final QueueListenerEndpointRegistry registry = new QueueListenerEndpointRegistry(this.template.context(),
			this.consumerPool, Duration.ofSeconds(5));

	/** Attempts seen per payload, in order. */
	private final Map<Integer, List<Integer>> attempts = new ConcurrentHashMap<>();

	@BeforeEach
	void effects() {
		this.jdbc.execute("DROP TABLE IF EXISTS batch_effect");
		this.jdbc.execute("CREATE TABLE batch_effect (payload int PRIMARY KEY)");
	}

	@AfterEach
	void stop() {
		this.registry.stop();
		this.consumerPool.close();
		this.app.close();
	}

	@Test
	void everyMessageReachesTheListenerOnceInBatchesOfUpToTheBatchSize() {
		List<Integer> sizes = new CopyOnWriteArrayList<>();
		Map<Long, AtomicInteger> seen = new ConcurrentHashMap<>();
		start(ConsumptionMode.SESSION, "many", 3, (messages) -> {
			sizes.add(messages.size());
			messages.forEach((m) -> seen.computeIfAbsent(m.id(), (id) -> new AtomicInteger()).incrementAndGet());
		});
		List<Long> ids = this.template.sendBatch("many", IntStream.range(0, 600).boxed().toList());
		await().atMost(Duration.ofSeconds(20)).until(() -> count("many") == 0);
		assertThat(seen.keySet()).containsExactlyInAnyOrderElementsOf(ids);
		assertThat(seen.values()).allMatch((n) -> n.get() == 1);
		assertThat(sizes).allMatch((n) -> n >= 1 && n <= 10).anyMatch((n) -> n > 1);
	}

	@Test
	void inSessionModeANamedFailureAcksTheMessagesBeforeItAndReleasesTheOnesAfter() {
		declare("named");
		AtomicBoolean first = new AtomicBoolean(true);
		this.template.sendBatch("named", List.of(0, 1, 2, 3, 4));
		start(ConsumptionMode.SESSION, "named", 1, (messages) -> {
			record(messages);
			if (first.getAndSet(false)) {
				throw new BatchListenerFailedException("payment declined", new IllegalStateException("declined"), 2);
			}
		});
		await().atMost(Duration.ofSeconds(20)).until(() -> count("named") == 0);
		assertThat(this.attempts).containsEntry(0, List.of(1)).containsEntry(1, List.of(1))
			.as("the failed one counts an attempt").containsEntry(2, List.of(1, 2))
			.as("the ones after it were released without one").containsEntry(3, List.of(1, 1))
			.containsEntry(4, List.of(1, 1));
	}

	@Test
	void anyOtherFailureFailsEveryMessageOfTheBatch() {
		declare("all");
		AtomicBoolean first = new AtomicBoolean(true);
		this.template.sendBatch("all", List.of(0, 1, 2));
		start(ConsumptionMode.SESSION, "all", 1, (messages) -> {
			record(messages);
			if (first.getAndSet(false)) {
				throw new IllegalStateException("downstream down");
			}
		});
		await().atMost(Duration.ofSeconds(20)).until(() -> count("all") == 0);
		assertThat(this.attempts).containsOnly(Map.entry(0, List.of(1, 2)), Map.entry(1, List.of(1, 2)),
				Map.entry(2, List.of(1, 2)));
	}

	@Test
	void inTransactionalModeANamedFailureRollsTheBatchBackAndCountsOnlyTheFailedMessage() {
		declare("tx");
		AtomicBoolean first = new AtomicBoolean(true);
		this.template.sendBatch("tx", List.of(0, 1, 2, 3));
		start(ConsumptionMode.TRANSACTIONAL, "tx", 1, (messages) -> {
			record(messages);
			for (QueueMessage<Object> message : messages) {
				this.appJdbc.update("INSERT INTO batch_effect (payload) VALUES (?)", message.payload());
			}
			if (first.getAndSet(false)) {
				throw new BatchListenerFailedException("bad row", 1);
			}
		});
		await().atMost(Duration.ofSeconds(20)).until(() -> count("tx") == 0);
		assertThat(this.attempts).as("rolled back, so delivered again; only the named one counted an attempt")
			.containsEntry(0, List.of(1, 1)).containsEntry(1, List.of(1, 2)).containsEntry(2, List.of(1, 1))
			.containsEntry(3, List.of(1, 1));
		assertThat(this.jdbc.queryForList("SELECT payload FROM batch_effect ORDER BY 1", Integer.class))
			.as("every effect once").containsExactly(0, 1, 2, 3);
	}

	@Test
	void anUnreadablePayloadIsDeadLetteredAndTheRestOfTheBatchIsHandled() {
		this.jdbc.update("INSERT INTO pgqueue.message (queue, payload) VALUES ('mixed', '\"not a number\"'), "
				+ "('mixed', '7'), ('mixed', '8')");
		List<Object> payloads = new CopyOnWriteArrayList<>();
		start(ConsumptionMode.SESSION, "mixed", 1, (messages) -> messages.forEach((m) -> payloads.add(m.payload())));
		await().atMost(Duration.ofSeconds(20)).until(() -> count("mixed") == 0);
		assertThat(payloads).containsExactlyInAnyOrder(7, 8);
		assertThat(count("mixed.dlq")).isEqualTo(1);
	}

	@Test
	void aBatchListenerAcknowledgesAutomatically() {
		assertThatIllegalArgumentException()
			.isThrownBy(() -> QueueListenerEndpoint.builder("manual")
					.batchListener(Integer.class, (messages) -> {
					})
					.containerProperties(ContainerProperties.builder(List.of("q"))
						.ackMode(AckMode.MANUAL)
						.pollInterval(Duration.ofSeconds(1))
						.build())
					.build())
			.withMessageContaining("batch listener").withMessageContaining("ackMode AUTO");
	}

	private void declare(String queue) {
		this.admin.declare(QueueDefinition.of(queue).withMaxAttempts(5)
			.withBackoff(Duration.ofMillis(20), 1.0, Duration.ofMillis(20)));
	}

	private void record(List<QueueMessage<Object>> messages) {
		for (QueueMessage<Object> message : messages) {
			this.attempts.computeIfAbsent((Integer) message.payload(), (k) -> new CopyOnWriteArrayList<>())
				.add(message.attempt());
		}
	}

	private void start(ConsumptionMode mode, String queue, int concurrency, QueueBatchListener listener) {
		this.registry.registerListenerEndpoint(QueueListenerEndpoint.builder(queue)
				.batchListener(Integer.class, listener)
				.containerProperties(ContainerProperties.builder(List.of(queue))
					.concurrency(concurrency)
					.pollInterval(Duration.ofMillis(100))
					.mode(mode)
					.build())
				.build());
		this.registry.start();
	}

}
