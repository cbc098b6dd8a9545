package io.github.pgqueue.boot.autoconfigure;

import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.stream.IntStream;

import javax.sql.DataSource;

import io.github.pgqueue.Acknowledgment;
import io.github.pgqueue.AckMode;
import io.github.pgqueue.QueueTemplate;
import io.github.pgqueue.annotation.QueueListener;
import io.github.pgqueue.testing.EmbeddedPostgres;
import io.github.pgqueue.testing.Pollers;
import io.github.pgqueue.testing.PostgresExtension;
import io.micrometer.core.instrument.MeterRegistry;
import io.micrometer.core.instrument.search.MeterNotFoundException;
import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;

import org.springframework.boot.autoconfigure.AutoConfigurations;
import org.springframework.boot.health.contributor.Status;
import org.springframework.boot.jdbc.autoconfigure.DataSourceAutoConfiguration;
import org.springframework.boot.test.context.runner.ApplicationContextRunner;
import org.springframework.jdbc.core.JdbcTemplate;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

/** {@code @QueueListener} methods in a Spring Boot application on a real PostgreSQL. */
@ExtendWith(PostgresExtension.class)
class QueueListenerIntegrationTests {

	private final EmbeddedPostgres postgres = EmbeddedPostgres.get();

	private final ApplicationContextRunner runner = new ApplicationContextRunner()
		.withConfiguration(AutoConfigurations.of(DataSourceAutoConfiguration.class, PgQueueAutoConfiguration.class))
		.withBean(MeterRegistry.class, SimpleMeterRegistry::new)
		.withPropertyValues("spring.datasource.url=" + this.postgres.jdbcUrl(),
				"spring.datasource.username=" + this.postgres.username(), "pgqueue.queues.orders.max-attempts=2",
				"pgqueue.queues.orders.backoff.initial=10ms", "pgqueue.listener.poll-interval=30s");

	static class Orders {

		final Map<Long, AtomicInteger> handled = new ConcurrentHashMap<>();

		final CountDownLatch first = new CountDownLatch(1);

		@QueueListener(queues = "orders", id = "orders", concurrency = "3")
		void on(io.github.pgqueue.QueueMessage<Integer> order) throws InterruptedException {
			if (order.payload() < 0) {
				throw new IllegalArgumentException("negative order " + order.payload());
			}
			this.handled.computeIfAbsent(order.id(), (id) -> new AtomicInteger()).incrementAndGet();
			this.first.countDown();
			Thread.sleep(1);
		}

	}

	@Test
	void idleListenerWithThirtySecondPollIntervalIsWokenByTheInsertWithinASecond() {
		this.runner.withBean(Orders.class).run((context) -> {
			QueueTemplate template = context.getBean(QueueTemplate.class);
			await().atMost(Duration.ofSeconds(5))
				.until(() -> context.getBean(io.github.pgqueue.listener.QueueListenerEndpointRegistry.class).isListening());
			// the pollers' first, empty polls are over: they wait up to 30 s now
			await().atMost(Duration.ofSeconds(30)).until(() -> Pollers.waiting("orders") == 3);
			template.send("orders", 1);
			assertThat(context.getBean(Orders.class).first.await(1, TimeUnit.SECONDS)).isTrue();
		});
	}

	@Test
	void failingOrderIsRetriedThenDeadLetteredAndTheMetricsSaySo() {
		this.runner.withBean(Orders.class).run((context) -> {
			QueueTemplate template = context.getBean(QueueTemplate.class);
			long id = template.send("orders", -1);
			template.send("orders", 1);
			JdbcTemplate jdbc = new JdbcTemplate(context.getBean(DataSource.class));
			// the retry becomes visible after its back-off; the poll interval is 30 s, so wake the pollers
			await().atMost(Duration.ofSeconds(10)).pollInterval(Duration.ofMillis(100)).until(() -> {
				jdbc.execute("NOTIFY pgqueue, 'orders'");
				return "orders.dlq".equals(jdbc.queryForObject("SELECT queue FROM pgqueue.message WHERE id = ?",
						String.class, id));
			});
			MeterRegistry meters = context.getBean(MeterRegistry.class);
			// Boot's metrics auto-configuration binds MeterBinder beans; it is not on this test's classpath
			context.getBean(QueueMetrics.class).bindTo(meters);
			// The counters move after the completing statements commit.
			await().atMost(Duration.ofSeconds(5)).ignoreException(MeterNotFoundException.class).untilAsserted(() -> {
				assertThat(meters.get("pgqueue.messages.processed").tags("queue", "orders", "outcome", "dead")
					.counter()
					.count()).isEqualTo(1);
				assertThat(meters.get("pgqueue.messages.processed").tags("queue", "orders", "outcome", "retry")
					.counter()
					.count()).isEqualTo(1);
			});
			assertThat(meters.get("pgqueue.messages.sent").tags("queue", "orders").counter().count()).isEqualTo(2);
			assertThat(meters.get("pgqueue.queue.depth").tags("queue", "orders.dlq", "state", "ready").gauge().value())
				.isEqualTo(1);
		});
	}

	@Test
	void listenersRecoverAfterEveryConsumerSessionIsTerminatedAndNothingIsLost() {
		this.runner.withBean(Orders.class).run((context) -> {
			QueueTemplate template = context.getBean(QueueTemplate.class);
			Orders orders = context.getBean(Orders.class);
			List<Long> ids = template.sendBatch("orders", IntStream.range(0, 2000).boxed().toList());
			await().atMost(Duration.ofSeconds(10)).until(() -> orders.handled.size() > 100);
			assertThat(this.postgres.terminateSessions(ListenerConnections.APPLICATION_NAME))
				.as("3 pollers and the LISTEN connection").isEqualTo(4);
			try {
				await().atMost(Duration.ofSeconds(60)).until(() -> orders.handled.keySet().containsAll(ids));
			}
			catch (org.awaitility.core.ConditionTimeoutException ex) {
				JdbcTemplate jdbc = new JdbcTemplate(this.postgres.dataSource());
				throw new AssertionError("Not all handled: " + orders.handled.size() + " of " + ids.size() + "; "
						+ template.stats("orders") + "; activity: "
						+ jdbc.queryForList("SELECT pid, state, wait_event_type, wait_event, left(query, 60) AS q "
								+ "FROM pg_stat_activity WHERE application_name = 'pgqueue-listener'")
						+ "; locks: " + jdbc.queryForList("SELECT pid, objid, granted FROM pg_locks WHERE locktype = 'advisory'")
						+ "; threads: " + threads(), ex);
			}
			var health = context.getBean(PgQueueHealthIndicator.class);
			await().atMost(Duration.ofSeconds(10)).until(() -> health.health(true).getStatus().equals(Status.UP));
		});
	}

	private static String threads() {
		StringBuilder dump = new StringBuilder();
		Thread.getAllStackTraces().forEach((thread, stack) -> {
			if (thread.getName().startsWith("pgqueue")) {
				dump.append('\n').append(thread.getName()).append(' ').append(thread.getState());
				for (int i = 0; i < Math.min(12, stack.length); i++) {
					dump.append("\n    at ").append(stack[i]);
				}
			}
		});
		return dump.toString();
	}

	static class Manual {

		final CountDownLatch done = new CountDownLatch(2);

		@QueueListener(queues = "orders", ackMode = AckMode.MANUAL)
		void on(Integer order, Acknowledgment ack) {
			if (order == 1) {
				ack.ack();
			}
			else {
				ack.reject("order " + order + " is not wanted");
			}
			this.done.countDown();
		}

	}

	@Test
	void manualAcknowledgmentAcksOrRejects() {
		this.runner.withBean(Manual.class).run((context) -> {
			QueueTemplate template = context.getBean(QueueTemplate.class);
			template.sendBatch("orders", List.of(1, 2));
			assertThat(context.getBean(Manual.class).done.await(10, TimeUnit.SECONDS)).isTrue();
			await().atMost(Duration.ofSeconds(5)).until(() -> template.stats("orders").deadLettered() == 1
					&& template.stats("orders").ready() + template.stats("orders").inFlight() == 0);
		});
	}

	static class Slow {

		final AtomicInteger started = new AtomicInteger();

		final AtomicInteger finished = new AtomicInteger();

		final CountDownLatch running = new CountDownLatch(1);

		@QueueListener(queues = "orders")
		void on(Integer order) throws InterruptedException {
			this.started.incrementAndGet();
			this.running.countDown();
			Thread.sleep(400);
			this.finished.incrementAndGet();
		}

	}

	@Test
	void closingTheContextLetsTheRunningHandlerFinishAndReleasesTheRest() {
		Slow slow = new Slow();
		JdbcTemplate jdbc = new JdbcTemplate(this.postgres.dataSource());
		this.runner.withBean(Slow.class, () -> slow).run((context) -> {
			context.getBean(QueueTemplate.class).sendBatch("orders", IntStream.range(0, 5).boxed().toList());
			assertThat(slow.running.await(10, TimeUnit.SECONDS)).isTrue();
		});
		assertThat(slow.started.get()).isEqualTo(1);
		assertThat(slow.finished.get()).isEqualTo(1);
		assertThat(jdbc.queryForObject("SELECT count(*) FROM pgqueue.message WHERE queue = 'orders'", Long.class))
			.isEqualTo(4);
		assertThat(jdbc.queryForObject("SELECT count(*) FROM pg_locks WHERE locktype = 'advisory'", Long.class))
			.isZero();
	}

}
