package io.github.pgqueue.listener;

import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.stream.IntStream;

import io.github.pgqueue.QueueTemplate;
import io.github.pgqueue.testing.ListenerFixture;
import io.github.pgqueue.testing.PostgresExtension;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.condition.EnabledForJreRange;
import org.junit.jupiter.api.condition.JRE;
import org.junit.jupiter.api.extension.ExtendWith;
import org.junit.jupiter.api.extension.RegisterExtension;

import org.springframework.core.task.SimpleAsyncTaskExecutor;

import static io.github.pgqueue.testing.Db.advisoryLocks;
import static io.github.pgqueue.testing.Db.count;
import static io.github.pgqueue.testing.Db.queueOf;
import static io.github.pgqueue.testing.ListenerFixture.endpoint;
import static io.github.pgqueue.testing.ListenerFixture.properties;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatIllegalStateException;
import static org.awaitility.Awaitility.await;

/**
 * Listener containers controlled at runtime through the registry: paused and resumed, stopped
 * and started again, started late, run on an executor a customizer gives them.
 */
@ExtendWith(PostgresExtension.class)
class ListenerRuntimeControlIntegrationTests {

	@RegisterExtension
	final ListenerFixture listeners = ListenerFixture.consumers("control", 12);

	private final QueueTemplate template = this.listeners.template();

	@Test
	void aPausedListenerFinishesItsBatchThenClaimsNothingUntilResumed() throws Exception {
		Map<Long, AtomicInteger> seen = new ConcurrentHashMap<>();
		CountDownLatch inHandler = new CountDownLatch(1);
		CountDownLatch release = new CountDownLatch(1);
		this.listeners.start(endpoint("paused", "paused", 3, true, (message, ack) -> {
			seen.computeIfAbsent(message.id(), (id) -> new AtomicInteger()).incrementAndGet();
			inHandler.countDown();
			release.await(10, TimeUnit.SECONDS);
		}));
		QueueListenerContainer container = this.listeners.registry().getListenerContainer("paused");
		this.template.sendBatch("paused", IntStream.range(0, 30).boxed().toList());
		assertThat(inHandler.await(10, TimeUnit.SECONDS)).isTrue();

		container.pause();
		release.countDown();
		// A poller that passed its pause check just before the pause claims one more batch.
		await().atMost(Duration.ofSeconds(10)).until(container::isPauseComplete);
		// pg_locks counts every session: a backend of the test before may still be closing
		await().atMost(Duration.ofSeconds(5)).until(() -> advisoryLocks() == 0);
		int handledWhenPaused = seen.size();
		this.template.sendBatch("paused", IntStream.range(0, 20).boxed().toList());
		Thread.sleep(1_000); // five poll intervals and a notification: a running poller would claim
		assertThat(seen).as("nothing claimed while paused").hasSize(handledWhenPaused);
		assertThat(count("paused")).isEqualTo(50 - handledWhenPaused);
		assertThat(container.isPaused()).isTrue();
		assertThat(container.isRunning()).isTrue();

		container.resume();
		await().atMost(Duration.ofSeconds(20)).until(() -> count("paused") == 0);
		assertThat(seen).hasSize(50);
		assertThat(seen.values()).allMatch((n) -> n.get() == 1);
	}

	@Test
	void aListenerThatDoesNotStartWithTheApplicationStartsLaterAndIsWokenByNotifications() {
		AtomicInteger handled = new AtomicInteger();
		this.listeners.start(endpoint("late", "late", 2, false, (message, ack) -> handled.incrementAndGet(),
				Duration.ofSeconds(60)));
		this.template.send("late", 1);
		assertThat(this.listeners.registry().getListenerContainer("late").isRunning()).isFalse();
		assertThat(this.listeners.registry().getListenerContainerIds()).containsExactly("late");

		this.listeners.registry().getListenerContainer("late").start();
		await().atMost(Duration.ofSeconds(10)).until(() -> handled.get() == 1);
		this.template.send("late", 2); // the poll interval is a minute: only a notification brings it on time
		// The handler counts a message before its ack commits.
		await().atMost(Duration.ofSeconds(10)).until(() -> handled.get() == 2 && count("late") == 0);
	}

	@Test
	void anUnregisteredListenerStopsAndItsIdCanBeRegisteredAgain() {
		AtomicInteger handled = new AtomicInteger();
		this.listeners.start(endpoint("gone", "gone", 1, true, (message, ack) -> handled.incrementAndGet()));
		this.template.send("gone", 1);
		await().atMost(Duration.ofSeconds(10)).until(() -> handled.get() == 1);

		assertThat(this.listeners.registry().unregisterListenerEndpoint("gone")).isTrue();
		assertThat(this.listeners.registry().unregisterListenerEndpoint("gone")).as("once").isFalse();
		assertThat(this.listeners.registry().getListenerContainerIds()).doesNotContain("gone");
		this.template.send("gone", 2);
		assertThat(count("gone")).as("nothing consumes it now").isEqualTo(1);

		this.listeners.start(endpoint("gone", "gone", 1, true, (message, ack) -> handled.incrementAndGet()));
		await().atMost(Duration.ofSeconds(10)).until(() -> handled.get() == 2);
	}

	@Test
	void stoppingAListenerLetsItsRunningHandlerFinishAndStartingItAgainResumesConsumption() throws Exception {
		Map<Long, AtomicInteger> seen = new ConcurrentHashMap<>();
		CountDownLatch inHandler = new CountDownLatch(1);
		this.listeners.start(endpoint("restart", "restart", 1, true, (message, ack) -> {
			seen.computeIfAbsent(message.id(), (id) -> new AtomicInteger()).incrementAndGet();
			inHandler.countDown();
			Thread.sleep(300);
		}));
		QueueListenerContainer container = this.listeners.registry().getListenerContainer("restart");
		long first = this.template.send("restart", 1);
		assertThat(inHandler.await(10, TimeUnit.SECONDS)).isTrue();

		container.stop();
		assertThat(container.isRunning()).isFalse();
		assertThat(queueOf(first)).as("the handler running at stop finished and its message was acked").isNull();
		List<Long> later = this.template.sendBatch("restart", List.of(2, 3, 4));
		Thread.sleep(500);
		assertThat(count("restart")).as("a stopped listener claims nothing").isEqualTo(3);

		container.start();
		await().atMost(Duration.ofSeconds(10)).until(() -> count("restart") == 0);
		assertThat(seen.keySet()).containsExactlyInAnyOrder(first, later.get(0), later.get(1), later.get(2));
		assertThat(seen.values()).allMatch((n) -> n.get() == 1);
	}

	@Test
	void aCustomizerRunsThePollersOnTheApplicationsExecutor() {
		Set<String> threads = ConcurrentHashMap.newKeySet();
		SimpleAsyncTaskExecutor executor = new SimpleAsyncTaskExecutor("app-pool-");
		executor.setDaemon(true);
		this.listeners.registry().setContainerCustomizer((container) -> container.setTaskExecutor(executor));
		this.listeners.start(endpoint("custom", "custom", 2, true,
				(message, ack) -> threads.add(Thread.currentThread().getName())));
		this.template.sendBatch("custom", IntStream.range(0, 20).boxed().toList());
		await().atMost(Duration.ofSeconds(10)).until(() -> count("custom") == 0);
		assertThat(threads).isNotEmpty().allMatch((name) -> name.startsWith("app-pool-"));
		assertThatIllegalStateException()
			.isThrownBy(() -> this.listeners.registry().getListenerContainer("custom").setTaskExecutor(executor))
			.withMessageContaining("'custom' is running");
	}

	@Test
	void aCustomizerThatPausesAContainerMakesItStartPaused() throws Exception {
		AtomicInteger handled = new AtomicInteger();
		this.listeners.registry().setContainerCustomizer(QueueListenerContainer::pause);
		this.listeners.start(endpoint("held", "held", 1, true, (message, ack) -> handled.incrementAndGet()));
		this.template.send("held", 1);
		Thread.sleep(600);
		assertThat(handled.get()).isZero();
		this.listeners.registry().getListenerContainer("held").resume();
		await().atMost(Duration.ofSeconds(10)).until(() -> handled.get() == 1);
	}

	@Test
	@EnabledForJreRange(min = JRE.JAVA_21)
	void pollersRunOnVirtualThreadsWhenAsked() {
		Set<Boolean> virtual = ConcurrentHashMap.newKeySet();
		this.listeners.registry().setVirtualThreads(true);
		this.listeners.start(endpoint("virtual", "virtual", 2, true, (message, ack) -> {
			virtual.add((Boolean) Thread.class.getMethod("isVirtual").invoke(Thread.currentThread()));
		}));
		this.template.sendBatch("virtual", IntStream.range(0, 10).boxed().toList());
		await().atMost(Duration.ofSeconds(10)).until(() -> count("virtual") == 0);
		assertThat(virtual).containsExactly(true);
	}

	private QueueListenerEndpoint endpoint(String id, String queue, int concurrency, boolean autoStartup,
			QueueMessageListener listener) {
		return endpoint(id, queue, concurrency, autoStartup, listener, Duration.ofMillis(200));
	}

	private QueueListenerEndpoint endpoint(String id, String queue, int concurrency, boolean autoStartup,
			QueueMessageListener listener, Duration pollInterval) {
		return ListenerFixture.endpoint(id, Integer.class, listener,
				properties(queue).concurrency(concurrency)
					.autoStartup(autoStartup)
					.batchSize(5)
					.pollInterval(pollInterval));
	}

}
