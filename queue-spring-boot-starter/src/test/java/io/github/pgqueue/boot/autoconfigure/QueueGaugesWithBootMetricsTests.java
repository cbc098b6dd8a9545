package io.github.pgqueue.boot.autoconfigure;

import java.time.Duration;
import java.util.List;

import io.github.pgqueue.QueueAdmin;
import io.github.pgqueue.QueueDefinition;
import io.github.pgqueue.QueueTemplate;
import io.github.pgqueue.SendOptions;
import io.github.pgqueue.testing.EmbeddedPostgres;
import io.github.pgqueue.testing.PostgresExtension;
import io.micrometer.core.instrument.Gauge;
import io.micrometer.core.instrument.MeterRegistry;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;

import org.springframework.boot.autoconfigure.AutoConfigurations;
import org.springframework.boot.jdbc.autoconfigure.DataSourceAutoConfiguration;
import org.springframework.boot.micrometer.metrics.autoconfigure.CompositeMeterRegistryAutoConfiguration;
import org.springframework.boot.micrometer.metrics.autoconfigure.MetricsAutoConfiguration;
import org.springframework.boot.micrometer.metrics.autoconfigure.export.simple.SimpleMetricsExportAutoConfiguration;
import org.springframework.boot.test.context.runner.ApplicationContextRunner;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

/**
 * The queue gauges in an application whose registry comes from Boot's own metrics
 * auto-configuration (as with Actuator), not from the test: the auto-configurations are ordered as
 * in an application, so the registry is defined when pgqueue's configuration asks for it.
 */
@ExtendWith(PostgresExtension.class)
class QueueGaugesWithBootMetricsTests {

	private final EmbeddedPostgres postgres = EmbeddedPostgres.get();

	private final ApplicationContextRunner runner = new ApplicationContextRunner()
		.withConfiguration(AutoConfigurations.of(DataSourceAutoConfiguration.class, PgQueueAutoConfiguration.class,
				MetricsAutoConfiguration.class, SimpleMetricsExportAutoConfiguration.class,
				CompositeMeterRegistryAutoConfiguration.class))
		.withPropertyValues("spring.datasource.url=" + this.postgres.jdbcUrl(),
				"spring.datasource.username=" + this.postgres.username(), "pgqueue.queues.gauged.max-attempts=3");

	@Test
	void theGaugesOfConfiguredQueuesAreInTheRegistryBootDefines() {
		this.runner.run((context) -> {
			assertThat(context).hasNotFailed().hasSingleBean(MeterRegistry.class);
			MeterRegistry registry = context.getBean(MeterRegistry.class);
			QueueTemplate template = context.getBean(QueueTemplate.class);
			template.send("gauged", "one");
			template.send("gauged", "two");

			Gauge ready = registry.find("pgqueue.queue.depth").tags("queue", "gauged", "state", "ready").gauge();
			assertThat(ready).as("pgqueue.queue.depth{queue=gauged,state=ready}").isNotNull();
			assertThat(ready.value()).isEqualTo(2);
			assertThat(registry.find("pgqueue.queue.depth").tags("queue", "gauged", "state", "scheduled").gauge())
				.isNotNull();
			assertThat(registry.find("pgqueue.queue.depth").tags("queue", "gauged", "state", "in_flight").gauge())
				.isNotNull();
			assertThat(registry.find("pgqueue.queue.depth").tags("queue", "gauged.dlq", "state", "ready").gauge())
				.isNotNull();
			assertThat(registry.find("pgqueue.queue.oldest.age").tags("queue", "gauged").gauge()).isNotNull();
		});
	}

	@Test
	void aRateLimitedQueuesGaugeCountsTheMessagesThatWaitForTheLimit() {
		this.runner.withPropertyValues("pgqueue.queues.throttled.rate-limit=2/s").run((context) -> {
			MeterRegistry registry = context.getBean(MeterRegistry.class);
			context.getBean(QueueTemplate.class).sendBatch("throttled", List.of(1, 2, 3, 4, 5));
			Gauge waiting = registry.find("pgqueue.queue.rate.limited").tags("queue", "throttled").gauge();
			assertThat(waiting).as("pgqueue.queue.rate.limited{queue=throttled}").isNotNull();
			assertThat(waiting.value()).as("a full bucket of 2 tokens: 3 of 5 wait").isEqualTo(3);
			assertThat(registry.find("pgqueue.queue.rate.limited").tags("queue", "gauged").gauge().value()).isZero();
		});
	}

	@Test
	void aQueueWithALimitPerKeyHasAGaugeThatCountsTheMessagesThatWaitForTheLimit() {
		this.runner.withPropertyValues("pgqueue.queues.per-key.concurrency-key=tenant",
				"pgqueue.queues.per-key.max-in-flight-per-key=1").run((context) -> {
			MeterRegistry registry = context.getBean(MeterRegistry.class);
			QueueTemplate template = context.getBean(QueueTemplate.class);
			template.sendBatch("per-key", List.of(1, 2, 3), SendOptions.builder().header("tenant", "acme").build());
			template.sendBatch("per-key", List.of(4, 5), SendOptions.builder().header("tenant", "globex").build());
			template.send("per-key", 6);
			Gauge waiting = registry.find("pgqueue.queue.key.limited").tags("queue", "per-key").gauge();
			assertThat(waiting).as("pgqueue.queue.key.limited{queue=per-key}").isNotNull();
			assertThat(waiting.value()).as("one of each key may be in flight: 2 of acme and 1 of globex wait")
				.isEqualTo(3);
			assertThat(registry.find("pgqueue.queue.key.limited").tags("queue", "gauged").gauge())
				.as("a queue without a limit per key has no such gauge").isNull();

			// A limit per key declared or removed at runtime adds or removes the gauge at the next refresh.
			QueueAdmin admin = context.getBean(QueueAdmin.class);
			admin.create(QueueDefinition.of("per-key-later").withConcurrencyKey("tenant", 2));
			admin.alter(QueueDefinition.of("per-key").withConcurrencyKey("tenant"));
			context.getBean(QueueMetrics.class).refresh();
			assertThat(registry.find("pgqueue.queue.key.limited").tags("queue", "per-key-later").gauge()).isNotNull();
			assertThat(registry.find("pgqueue.queue.key.limited").tags("queue", "per-key").gauge()).isNull();
			assertThat(registry.find("pgqueue.queue.depth").tags("queue", "per-key").gauges()).hasSize(3);
		});
	}

	@Test
	void aQueueCreatedAtRuntimeGetsItsGaugesAndADroppedOneLosesThem() {
		this.runner.run((context) -> {
			MeterRegistry registry = context.getBean(MeterRegistry.class);
			QueueAdmin admin = context.getBean(QueueAdmin.class);
			admin.create(QueueDefinition.of("made-later"));
			context.getBean(QueueTemplate.class).send("made-later", "first");

			await().atMost(Duration.ofSeconds(20)).untilAsserted(() -> {
				Gauge ready = registry.find("pgqueue.queue.depth")
					.tags("queue", "made-later", "state", "ready")
					.gauge();
				assertThat(ready).as("pgqueue.queue.depth{queue=made-later,state=ready}").isNotNull();
				assertThat(ready.value()).isEqualTo(1);
			});
			assertThat(registry.find("pgqueue.queue.oldest.age").tags("queue", "made-later").gauge()).isNotNull();
			assertThat(registry.find("pgqueue.queue.depth").tags("queue", "made-later.dlq").gauges()).hasSize(3);

			admin.drop("made-later", true);
			await().atMost(Duration.ofSeconds(20))
				.untilAsserted(() -> assertThat(registry.find("pgqueue.queue.depth").tags("queue", "made-later").gauges())
					.isEmpty());
			assertThat(registry.find("pgqueue.queue.depth").tags("queue", "gauged").gauges()).hasSize(3);
		});
	}

}
