package io.github.pgqueue.listener;

import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.stream.IntStream;

import com.zaxxer.hikari.HikariDataSource;
import io.github.pgqueue.ContextInternals;
import io.github.pgqueue.QueueAdmin;
import io.github.pgqueue.QueueTemplate;
import io.github.pgqueue.internal.ClaimedMessage;
import io.github.pgqueue.internal.ConsumerSession;
import io.github.pgqueue.testing.EmbeddedPostgres;
import io.github.pgqueue.testing.PostgresExtension;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import static io.github.pgqueue.testing.Db.count;
import static io.github.pgqueue.testing.Db.queueOf;
import static io.github.pgqueue.testing.Db.terminateBackend;
import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

/**
 * Messages whose consumer died (orphans) are taken by one poller per process at a time: that
 * poller's turn comes round whatever the other listeners of the process are doing, and a poller
 * whose handler outlives its stop does not keep it.
 */
@ExtendWith(PostgresExtension.class)
class OrphanRecoveryIntegrationTests {

	private static final Logger logger = LoggerFactory.getLogger(OrphanRecoveryIntegrationTests.class);

	private final EmbeddedPostgres postgres = EmbeddedPostgres.get();

	private final QueueTemplate template = QueueTemplate.builder(this.postgres.dataSource()).build();

	private final QueueAdmin admin = new QueueAdmin(this.template.context());

	private final HikariDataSource consumerPool = this.postgres.pool("orphan-consumers", 12);

	private final QueueListenerEndpointRegistry registry = new QueueListenerEndpointRegistry(this.template.context(),
			this.consumerPool, Duration.ofMillis(200));

	@AfterEach
	void stop() {
		this.registry.stop();
		this.consumerPool.close();
	}

	private static QueueListenerEndpoint endpoint(String id, String queue, QueueMessageListener listener) {
		return QueueListenerEndpoint.builder(id)
				.listener(Integer.class, listener)
				.containerProperties(ContainerProperties.builder(List.of(queue))
					.pollInterval(Duration.ofMillis(100))
					.build())
				.build();
	}

	@Test
	void aQuietQueuesOrphanIsHandledWhileABusyListenerOfTheSameProcessRuns() {
		AtomicInteger busyHandled = new AtomicInteger();
		this.template.sendBatch("busy", IntStream.range(0, 50_000).boxed().toList());
		this.registry.registerListenerEndpoint(endpoint("busy", "busy", (message, ack) -> {
			busyHandled.incrementAndGet();
			Thread.sleep(1);
		}));
		this.registry.start();
		await().atMost(Duration.ofSeconds(10)).until(() -> busyHandled.get() > 100);

		long orphan = orphan("quiet");
		Map<Long, Integer> quietHandled = new ConcurrentHashMap<>();
		this.registry.registerListenerEndpoint(endpoint("quiet", "quiet",
				(message, ack) -> quietHandled.put(message.id(), message.attempt())));
		long started = System.nanoTime();
		int busyBefore = busyHandled.get();
		await().atMost(Duration.ofSeconds(10)).until(() -> quietHandled.containsKey(orphan));
		logger.info("The quiet queue's orphan was handled {} ms after its listener started; meanwhile the busy "
				+ "listener handled {} messages", (System.nanoTime() - started) / 1_000_000,
				busyHandled.get() - busyBefore);
		assertThat(quietHandled).as("the orphan, at the attempt after the one its consumer lost")
			.containsExactly(Map.entry(orphan, 2));
		assertThat(this.template.stats("busy").ready()).as("the busy listener still has work").isPositive();
	}

	@Test
	void aHandlerStuckAfterItsListenerStoppedDoesNotKeepOtherListenersFromOrphans() throws Exception {
		CountDownLatch inHandler = new CountDownLatch(1);
		AtomicBoolean release = new AtomicBoolean();
		this.registry.registerListenerEndpoint(endpoint("deaf", "deaf", (message, ack) -> {
			inHandler.countDown();
			while (!release.get()) { // ignores interrupts
				java.util.concurrent.locks.LockSupport.parkNanos(10_000_000);
			}
		}));
		this.template.send("deaf", 1);
		this.registry.start();
		assertThat(inHandler.await(10, TimeUnit.SECONDS)).isTrue();
		List<Thread> deafPollers = Thread.getAllStackTraces().keySet().stream()
			.filter((thread) -> thread.getName().startsWith("pgqueue-deaf-")).toList();
		try {
			this.registry.getListenerContainer("deaf").stop(Duration.ofMillis(100));
			assertThat(deafPollers).as("left running by the stop").anyMatch(Thread::isAlive);

			long orphan = orphan("rescued");
			Map<Long, Integer> handled = new ConcurrentHashMap<>();
			this.registry.registerListenerEndpoint(endpoint("rescuer", "rescued",
					(message, ack) -> handled.put(message.id(), message.attempt())));
			await().atMost(Duration.ofSeconds(30)).until(() -> handled.containsKey(orphan));
			assertThat(handled).containsExactly(Map.entry(orphan, 2));
		}
		finally {
			release.set(true);
			await().atMost(Duration.ofSeconds(30)).until(() -> deafPollers.stream().noneMatch(Thread::isAlive));
		}
	}

	/**
	 * A listener hands the orphans of a claim to its handler one at a time, each completed before
	 * the next is handed over: a message that kills its consumer every time costs the others
	 * nothing (had they been handed out with it, those handled before it would come again, and be
	 * counted) and is dead-lettered after its max attempts.
	 */
	@Test
	void orphansReachTheHandlerInTurnAndOneThatKillsItsConsumerReachesItsMaxAttempts() {
		this.admin.declare(io.github.pgqueue.QueueDefinition.of("orphans").withMaxAttempts(4));
		List<Long> orphans = orphans("orphans", 30);
		long poison = orphans.get(4);
		Map<Long, List<Integer>> attempts = new ConcurrentHashMap<>();
		this.registry.registerListenerEndpoint(endpoint("orphans", "orphans", (message, ack) -> {
			attempts.computeIfAbsent(message.id(), (id) -> new java.util.concurrent.CopyOnWriteArrayList<>())
				.add(message.attempt());
			if (message.id() == poison) {
				this.postgres.terminateSessions("orphan-consumers"); // the handler kills its consumer
				Thread.sleep(300); // the server's goodbye reaches the poller's socket
			}
		}));
		this.registry.start();
		await().atMost(Duration.ofSeconds(60)).until(() -> "orphans.dlq".equals(queueOf(poison))
				&& count("orphans") == 0);
		assertThat(attempts.get(poison)).as("the poison: its consumers' lost attempts, each counted once")
			.containsExactly(2, 3, 4);
		Map<Long, List<Integer>> others = new java.util.HashMap<>(attempts);
		others.remove(poison);
		assertThat(others).as("the others: once each, at the attempt after the one their consumer lost")
			.hasSize(29)
			.allSatisfy((id, seen) -> assertThat(seen).containsExactly(2));
	}

	@Test
	void aBatchListenerGetsOrphansOneAtATime() {
		List<Long> orphans = orphans("orphan-batches", 5);
		List<List<Long>> batches = new java.util.concurrent.CopyOnWriteArrayList<>();
		this.registry.registerListenerEndpoint(QueueListenerEndpoint.builder("orphan-batches")
				.batchListener(Integer.class, (messages) -> batches.add(messages.stream().map((m) -> m.id()).toList()))
				.containerProperties(ContainerProperties.builder(List.of("orphan-batches"))
					.pollInterval(Duration.ofMillis(100))
					.mode(io.github.pgqueue.ConsumptionMode.SESSION)
					.build())
				.build());
		this.registry.start();
		await().atMost(Duration.ofSeconds(20)).until(() -> count("orphan-batches") == 0);
		assertThat(batches).as("each orphan alone, in turn").containsExactlyElementsOf(orphans.stream().map(List::of).toList());
	}

	/** Sends {@code count} messages to {@code queue}, held by a consumer that then died; their ids. */
	private List<Long> orphans(String queue, int count) {
		List<Long> ids = this.template.sendBatch(queue, IntStream.range(0, count).boxed().toList());
		ConsumerSession dying = ContextInternals.openSession(this.template.context());
		assertThat(dying.claim(queue, count).messages()).extracting(ClaimedMessage::id).containsExactlyElementsOf(ids);
		terminate(dying);
		return ids;
	}

	private void terminate(ConsumerSession dying) {
		terminateBackend(dying.backendPid());
		dying.close();
	}

	/** Sends a message to {@code queue} and leaves it held by a consumer that died; its id. */
	private long orphan(String queue) {
		long id = this.template.send(queue, 7);
		ConsumerSession dying = ContextInternals.openSession(this.template.context());
		List<ClaimedMessage> held = dying.claim(queue, 10).messages();
		assertThat(held).extracting(ClaimedMessage::id).containsExactly(id);
		terminate(dying);
		return id;
	}

}
