package io.github.pgqueue.boot.autoconfigure;

import java.time.Duration;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.stream.IntStream;

import io.github.pgqueue.QueueMessage;
import io.github.pgqueue.QueueTemplate;
import io.github.pgqueue.annotation.QueueListener;
import io.github.pgqueue.testing.EmbeddedPostgres;
import io.github.pgqueue.testing.PostgresExtension;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;

import org.springframework.boot.autoconfigure.AutoConfigurations;
import org.springframework.boot.jdbc.autoconfigure.DataSourceAutoConfiguration;
import org.springframework.boot.test.context.runner.ApplicationContextRunner;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

/** {@code @QueueListener(batch = true)} methods: bound to lists of payloads or of messages, or refused at startup. */
@ExtendWith(PostgresExtension.class)
class BatchListenerAutoConfigurationTests {

	private final EmbeddedPostgres postgres = EmbeddedPostgres.get();

	private final ApplicationContextRunner runner = new ApplicationContextRunner()
		.withConfiguration(AutoConfigurations.of(DataSourceAutoConfiguration.class, PgQueueAutoConfiguration.class))
		.withPropertyValues("spring.datasource.url=" + this.postgres.jdbcUrl(),
				"spring.datasource.username=" + this.postgres.username(), "pgqueue.listener.poll-interval=200ms",
				"pgqueue.listener.batch-size=25", "pgqueue.queues.points.max-attempts=3",
				"pgqueue.queues.ticks.max-attempts=3");

	record Point(int x, int y) {
	}

	static class Handlers {

		final List<Integer> batchSizes = new CopyOnWriteArrayList<>();

		final List<Point> points = new CopyOnWriteArrayList<>();

		final List<Long> tickIds = new CopyOnWriteArrayList<>();

		@QueueListener(queues = "points", batch = true)
		void points(List<Point> points) {
			this.batchSizes.add(points.size());
			this.points.addAll(points);
		}

		@QueueListener(queues = "ticks", batch = true)
		void ticks(List<QueueMessage<Integer>> ticks) {
			ticks.forEach((tick) -> {
				assertThat(tick.payload()).isInstanceOf(Integer.class);
				this.tickIds.add(tick.id());
			});
		}

	}

	static class TwoParameters {

		@QueueListener(queues = "points", batch = true)
		void points(List<Point> points, String extra) {
		}

	}

	@Test
	void batchMethodsGetListsOfPayloadsOrMessages() {
		this.runner.withBean(Handlers.class).run((context) -> {
			QueueTemplate template = context.getBean(QueueTemplate.class);
			template.sendBatch("points", IntStream.range(0, 100).mapToObj((i) -> new Point(i, -i)).toList());
			List<Long> ticks = template.sendBatch("ticks", List.of(1, 2, 3));
			Handlers handlers = context.getBean(Handlers.class);
			await().atMost(Duration.ofSeconds(10)).until(() -> handlers.points.size() == 100 && handlers.tickIds.size() == 3);
			assertThat(handlers.points).contains(new Point(42, -42)).doesNotHaveDuplicates();
			assertThat(handlers.batchSizes).allMatch((n) -> n <= 25).anyMatch((n) -> n > 1);
			assertThat(handlers.tickIds).containsExactlyInAnyOrderElementsOf(ticks);
		});
	}

	@Test
	void aBatchMethodWithAnotherParameterFailsStartupSayingWhatItTakes() {
		this.runner.withBean(TwoParameters.class).run((context) -> assertThat(context).hasFailed()
			.getFailure()
			.rootCause()
			.hasMessageContaining("TwoParameters.points")
			.hasMessageContaining("takes exactly one parameter, a List<T> of payloads or a List<QueueMessage<T>>"));
	}

}
