package io.github.pgqueue.boot.autoconfigure;

import java.time.Duration;
import java.util.List;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;

import io.github.pgqueue.QueueAdmin;
import io.github.pgqueue.QueueDefinition;
import io.github.pgqueue.QueueTemplate;
import io.github.pgqueue.annotation.QueueListener;
import io.github.pgqueue.listener.QueueListenerContainer;
import io.github.pgqueue.listener.QueueListenerContainerCustomizer;
import io.github.pgqueue.listener.QueueListenerEndpointRegistry;
import io.github.pgqueue.testing.EmbeddedPostgres;
import io.github.pgqueue.testing.PostgresExtension;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.condition.EnabledForJreRange;
import org.junit.jupiter.api.condition.JRE;
import org.junit.jupiter.api.extension.ExtendWith;

import org.springframework.boot.autoconfigure.AutoConfigurations;
import org.springframework.boot.health.contributor.Status;
import org.springframework.boot.jdbc.autoconfigure.DataSourceAutoConfiguration;
import org.springframework.boot.test.context.runner.ApplicationContextRunner;
import org.springframework.core.annotation.Order;
import org.springframework.core.task.SimpleAsyncTaskExecutor;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatIllegalStateException;
import static org.awaitility.Awaitility.await;

/**
 * Runtime control in a Spring Boot application: container customizer beans, listeners started
 * later through the registry bean, virtual threads when Boot is asked for them.
 */
@ExtendWith(PostgresExtension.class)
class ListenerRuntimeControlAutoConfigurationTests {

	private final EmbeddedPostgres postgres = EmbeddedPostgres.get();

	private final ApplicationContextRunner runner = new ApplicationContextRunner()
		.withConfiguration(AutoConfigurations.of(DataSourceAutoConfiguration.class, PgQueueAutoConfiguration.class))
		.withPropertyValues("spring.datasource.url=" + this.postgres.jdbcUrl(),
				"spring.datasource.username=" + this.postgres.username(), "pgqueue.listener.poll-interval=200ms", "pgqueue.queues.later.max-attempts=3");

	static class Handlers {

		final Set<String> threads = ConcurrentHashMap.newKeySet();

		final Set<Boolean> virtual = ConcurrentHashMap.newKeySet();

		@QueueListener(queues = "later", id = "later", autoStartup = "false")
		void later(Integer payload) throws Exception {
			this.threads.add(Thread.currentThread().getName());
			this.virtual.add((Boolean) Thread.class.getMethod("isVirtual").invoke(Thread.currentThread()));
		}

	}

	@Test
	void customizerBeansApplyToEveryContainerInOrderAndALateListenerStartsThroughTheRegistry() {
		List<String> applied = new java.util.concurrent.CopyOnWriteArrayList<>();
		this.runner.withBean(Handlers.class)
			.withBean("second", QueueListenerContainerCustomizer.class, () -> new Second(applied))
			.withBean("first", QueueListenerContainerCustomizer.class, () -> new First(applied))
			.run((context) -> {
				QueueListenerEndpointRegistry registry = context.getBean(QueueListenerEndpointRegistry.class);
				QueueListenerContainer container = registry.getListenerContainer("later");
				assertThat(applied).containsExactly("first:later", "second:later");
				assertThat(container.isRunning()).isFalse();
				PgQueueHealthIndicator health = context.getBean(PgQueueHealthIndicator.class);
				assertThat(health.health(true).getStatus()).as("no listener runs, so none needs notifications")
					.isEqualTo(Status.UP);
				assertThat(health.health(true).getDetails()).containsEntry("listener.later", "stopped");
				context.getBean(QueueTemplate.class).send("later", 1);

				container.start();
				Handlers handlers = context.getBean(Handlers.class);
				await().atMost(Duration.ofSeconds(10)).until(() -> !handlers.threads.isEmpty());
				assertThat(handlers.threads).allMatch((name) -> name.startsWith("app-"));
				container.pause();
				await().atMost(Duration.ofSeconds(10))
					.until(() -> "paused".equals(health.health(true).getDetails().get("listener.later")));
				assertThat(health.health(true).getStatus()).isEqualTo(Status.UP);
			});
	}

	@Test
	@EnabledForJreRange(min = JRE.JAVA_21)
	void pollersRunOnVirtualThreadsWhenBootIsAskedForThem() {
		this.runner.withBean(Handlers.class).withPropertyValues("spring.threads.virtual.enabled=true").run((context) -> {
			context.getBean(QueueListenerEndpointRegistry.class).getListenerContainer("later").start();
			context.getBean(QueueTemplate.class).send("later", 1);
			Handlers handlers = context.getBean(Handlers.class);
			await().atMost(Duration.ofSeconds(10)).until(() -> !handlers.virtual.isEmpty());
			assertThat(handlers.virtual).containsExactly(true);
		});
	}

	static class RuntimeQueueHandlers {

		final Set<Integer> received = ConcurrentHashMap.newKeySet();

		@QueueListener(queues = "${runtime.queue}", id = "runtime", autoStartup = "false")
		void onMessage(Integer payload) {
			this.received.add(payload);
		}

	}

	@Test
	void aListenerStartedLaterConsumesAQueueCreatedAtRuntime() {
		this.runner.withBean(RuntimeQueueHandlers.class).withPropertyValues("runtime.queue=created-at-runtime")
			.run((context) -> {
				assertThat(context).hasNotFailed();
				context.getBean(QueueAdmin.class).create(QueueDefinition.of("created-at-runtime"));
				context.getBean(QueueTemplate.class).send("created-at-runtime", 42);
				QueueListenerContainer container = context.getBean(QueueListenerEndpointRegistry.class)
					.getListenerContainer("runtime");

				container.start();

				RuntimeQueueHandlers handlers = context.getBean(RuntimeQueueHandlers.class);
				await().atMost(Duration.ofSeconds(10)).until(() -> handlers.received.contains(42));
			});
	}

	@Test
	void startingAListenerWhoseQueueDoesNotExistFailsAndLeavesItStopped() {
		this.runner.withBean(RuntimeQueueHandlers.class).withPropertyValues("runtime.queue=not-created-yet")
			.run((context) -> {
				assertThat(context).hasNotFailed();
				QueueListenerEndpointRegistry registry = context.getBean(QueueListenerEndpointRegistry.class);
				QueueListenerContainer container = registry.getListenerContainer("runtime");

				assertThatIllegalStateException().isThrownBy(container::start)
					.withMessageStartingWith("Listener 'runtime' cannot start: it consumes queue 'not-created-yet', "
							+ "which does not exist; create it with QueueAdmin.create before starting the listener, "
							+ "or declare it under pgqueue.queues (existing queues: [later, later.dlq])");
				assertThat(container.isRunning()).isFalse();
				assertThat(registry.isListening()).as("no LISTEN connection for a listener that did not start").isFalse();

				context.getBean(QueueAdmin.class).create(QueueDefinition.of("not-created-yet"));
				container.start();
				assertThat(container.isRunning()).isTrue();
			});
	}

	@Order(1)
	record First(List<String> applied) implements QueueListenerContainerCustomizer {

		@Override
		public void customize(QueueListenerContainer container) {
			this.applied.add("first:" + container.endpoint().id());
			SimpleAsyncTaskExecutor executor = new SimpleAsyncTaskExecutor("app-");
			executor.setDaemon(true);
			container.setTaskExecutor(executor);
		}

	}

	@Order(2)
	record Second(List<String> applied) implements QueueListenerContainerCustomizer {

		@Override
		public void customize(QueueListenerContainer container) {
			this.applied.add("second:" + container.endpoint().id());
		}

	}

}
