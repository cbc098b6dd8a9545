package io.github.pgqueue.listener;

import java.lang.reflect.Type;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.stream.IntStream;

import com.zaxxer.hikari.HikariDataSource;
import io.github.pgqueue.AckMode;
import io.github.pgqueue.JacksonPayloadConverter;
import io.github.pgqueue.PayloadConverter;
import io.github.pgqueue.QueueAdmin;
import io.github.pgqueue.QueueContext;
import io.github.pgqueue.QueueDefinition;
import io.github.pgqueue.QueueTemplate;
import io.github.pgqueue.testing.EmbeddedPostgres;
import io.github.pgqueue.testing.PostgresExtension;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;

import org.springframework.jdbc.core.JdbcTemplate;

import static io.github.pgqueue.testing.Db.advisoryLocks;
import static io.github.pgqueue.testing.Db.count;
import static io.github.pgqueue.testing.Db.lastError;
import static io.github.pgqueue.testing.Db.queueOf;
import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

/**
 * What a failure in a handler, a converter, an error handler or a stop costs: only the message
 * it happened to, never its neighbours in the batch.
 */
@ExtendWith(PostgresExtension.class)
class HandlerFailureIntegrationTests {

	private static final int POISON = 3;

	private final EmbeddedPostgres postgres = EmbeddedPostgres.get();

	private final JdbcTemplate jdbc = new JdbcTemplate(this.postgres.dataSource());

	private final HikariDataSource consumerPool = this.postgres.pool("failures", 4);

	private QueueListenerEndpointRegistry registry;

	@AfterEach
	void stop() {
		if (this.registry != null) {
			this.registry.stop();
		}
		this.consumerPool.close();
	}

	/** Ways one message of a batch can blow up its poller. */
	enum Blowup {

		STACK_OVERFLOW_IN_HANDLER, OUT_OF_MEMORY_IN_HANDLER, CONVERTER_THROWS_ILLEGAL_STATE,
		ERROR_HANDLER_RETURNS_NULL, ERROR_HANDLER_THROWS_ERROR

	}

	@ParameterizedTest
	@EnumSource(Blowup.class)
	void aFailureThatBlowsUpThePollerCostsOnlyItsOwnMessage(Blowup blowup) {
		QueueTemplate template = template(converterFor(blowup));
		new QueueAdmin(template.context()).declare(QueueDefinition.of("blast").withMaxAttempts(3)
			.withBackoff(Duration.ofMillis(20), 1.0, Duration.ofMillis(20)));
		List<Long> ids = template.sendBatch("blast", IntStream.rangeClosed(1, 5).boxed().toList());
		long poison = ids.get(POISON - 1);
		Map<Integer, AtomicInteger> handled = new ConcurrentHashMap<>();
		QueueMessageListener listener = (message, ack) -> {
			int n = (Integer) message.payload();
			handled.computeIfAbsent(n, (k) -> new AtomicInteger()).incrementAndGet();
			if (n == POISON) {
				switch (blowup) {
					case STACK_OVERFLOW_IN_HANDLER -> throw new StackOverflowError("deep");
					case OUT_OF_MEMORY_IN_HANDLER -> throw new OutOfMemoryError("Java heap space");
					default -> throw new IllegalStateException("handler failed");
				}
			}
		};
		QueueErrorHandler errorHandler = switch (blowup) {
			case ERROR_HANDLER_RETURNS_NULL -> (message, error, backoff) -> null;
			case ERROR_HANDLER_THROWS_ERROR -> (message, error, backoff) -> {
				throw new AssertionError("error handler broke");
			};
			default -> new DefaultQueueErrorHandler();
		};
		start(template, QueueListenerEndpoint.builder("blast")
				.listener(Integer.class, listener)
				.containerProperties(ContainerProperties.builder(List.of("blast"))
					.errorHandler(errorHandler)
					.batchSize(5)
					.pollInterval(Duration.ofMillis(50))
					.build())
				.build());

		await().atMost(Duration.ofSeconds(30)).until(() -> "blast.dlq".equals(queueOf(poison)));
		await().atMost(Duration.ofSeconds(10)).until(() -> count("blast") == 0);
		for (int n = 1; n <= 5; n++) {
			if (n != POISON) {
				assertThat(handled.get(n)).as("message %d, a neighbour of the poison message", n).hasValue(1);
			}
		}
		assertThat(this.jdbc.queryForObject("SELECT headers->>'pgqueue-dead-lettered-attempts' FROM pgqueue.message "
				+ "WHERE id = ?", String.class, poison)).as("it used its own 3 attempts").isEqualTo("3");
		assertThat(lastError(poison)).doesNotContain("consumer died").contains(switch (blowup) {
			case STACK_OVERFLOW_IN_HANDLER -> "StackOverflowError";
			case OUT_OF_MEMORY_IN_HANDLER -> "OutOfMemoryError";
			case CONVERTER_THROWS_ILLEGAL_STATE -> "converter broke";
			default -> "handler failed";
		});
		await().atMost(Duration.ofSeconds(5)).until(() -> advisoryLocks() == 0);
	}

	@Test
	void handlerInterruptedBecauseTheListenerStopsGetsItsAttemptBack() throws Exception {
		QueueTemplate template = template(new JacksonPayloadConverter());
		new QueueAdmin(template.context()).declare(QueueDefinition.of("patient").withMaxAttempts(2));
		long id = template.send("patient", 1);
		for (int stop = 1; stop <= 3; stop++) {
			CountDownLatch inHandler = new CountDownLatch(1);
			this.registry = new QueueListenerEndpointRegistry(template.context(), this.consumerPool, Duration.ofMillis(200));
			this.registry.registerListenerEndpoint(QueueListenerEndpoint.builder("patient")
					.listener(Integer.class, (message, ack) -> {
						inHandler.countDown();
						Thread.sleep(60_000);
					})
					.containerProperties(ContainerProperties.builder(List.of("patient"))
						.pollInterval(Duration.ofMillis(50))
						.build())
					.build());
			this.registry.start();
			assertThat(inHandler.await(10, TimeUnit.SECONDS)).as("delivery after stop %d", stop - 1).isTrue();
			this.registry.stop();
			assertThat(queueOf(id)).as("after stop %d", stop).isEqualTo("patient");
			assertThat(this.jdbc.queryForMap("SELECT attempts, last_error, visible_at <= now() AS visible "
					+ "FROM pgqueue.message WHERE id = ?", id))
				.as("the stop is not the message's failure")
				.containsEntry("attempts", 0).containsEntry("last_error", null).containsEntry("visible", true);
		}
		assertThat(advisoryLocks()).isZero();
	}

	@Test
	void manualListenerThatReturnsWithoutCompletingIsRetriedAndDeadLetteredSayingSo() {
		QueueTemplate template = template(new JacksonPayloadConverter());
		new QueueAdmin(template.context()).declare(QueueDefinition.of("forgetful").withMaxAttempts(2)
			.withBackoff(Duration.ofMillis(20), 1.0, Duration.ofMillis(20)));
		long id = template.send("forgetful", 1);
		AtomicInteger deliveries = new AtomicInteger();
		start(template, QueueListenerEndpoint.builder("forgetful")
				.listener(Integer.class, (message, ack) -> deliveries.incrementAndGet())
				.containerProperties(ContainerProperties.builder(List.of("forgetful"))
					.ackMode(AckMode.MANUAL)
					.pollInterval(Duration.ofMillis(50))
					.build())
				.build());
		await().atMost(Duration.ofSeconds(20)).until(() -> "forgetful.dlq".equals(queueOf(id)));
		assertThat(deliveries.get()).isEqualTo(2);
		assertThat(lastError(id)).doesNotContain("consumer died").contains("without calling ack(), nack() or reject()");
	}

	private void start(QueueTemplate template, QueueListenerEndpoint endpoint) {
		this.registry = new QueueListenerEndpointRegistry(template.context(), this.consumerPool, Duration.ofSeconds(5));
		this.registry.registerListenerEndpoint(endpoint);
		this.registry.start();
	}

	private QueueTemplate template(PayloadConverter converter) {
		return new QueueTemplate(QueueContext.builder(this.postgres.dataSource()).payloadConverter(converter).build());
	}

	private static PayloadConverter converterFor(Blowup blowup) {
		PayloadConverter json = new JacksonPayloadConverter();
		if (blowup != Blowup.CONVERTER_THROWS_ILLEGAL_STATE) {
			return json;
		}
		return new PayloadConverter() {

			@Override
			public String write(Object payload) {
				return json.write(payload);
			}

			@Override
			public Object read(String payload, Type type) {
				if (payload.equals(String.valueOf(POISON))) {
					throw new IllegalStateException("converter broke");
				}
				return json.read(payload, type);
			}

		};
	}

}
