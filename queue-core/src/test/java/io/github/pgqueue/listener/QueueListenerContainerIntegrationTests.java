package io.github.pgqueue.listener;

import java.sql.Connection;
import java.sql.ResultSet;
import java.sql.Statement;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.stream.IntStream;

import io.github.pgqueue.AckMode;
import io.github.pgqueue.ConsumptionMode;
import io.github.pgqueue.QueueAdmin;
import io.github.pgqueue.QueueContext;
import io.github.pgqueue.QueueDefinition;
import io.github.pgqueue.QueueTemplate;
import io.github.pgqueue.testing.EmbeddedPostgres;
import io.github.pgqueue.testing.ListenerFixture;
import io.github.pgqueue.testing.Pollers;
import io.github.pgqueue.testing.PostgresExtension;
import io.micrometer.core.instrument.search.MeterNotFoundException;
import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;
import org.junit.jupiter.api.extension.RegisterExtension;

import org.springframework.jdbc.core.JdbcTemplate;

import static io.github.pgqueue.testing.Db.advisoryLocks;
import static io.github.pgqueue.testing.Db.count;
import static io.github.pgqueue.testing.Db.queueOf;
import static io.github.pgqueue.testing.ListenerFixture.endpoint;
import static io.github.pgqueue.testing.ListenerFixture.properties;
import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

@ExtendWith(PostgresExtension.class)
class QueueListenerContainerIntegrationTests {

	private final EmbeddedPostgres postgres = EmbeddedPostgres.get();

	private final JdbcTemplate jdbc = new JdbcTemplate(this.postgres.dataSource());

	private final SimpleMeterRegistry meters = new SimpleMeterRegistry();

	@RegisterExtension
	final ListenerFixture listeners = ListenerFixture.consumers("consumers", 12)
		.withTemplate((app) -> new QueueTemplate(QueueContext.builder(app).meterRegistry(this.meters).build()));

	private final QueueTemplate template = this.listeners.template();

	private final QueueAdmin admin = this.listeners.admin();

	private QueueListenerEndpoint endpoint(String id, String queue, int concurrency, AckMode ackMode,
			QueueMessageListener listener) {
		return ListenerFixture.endpoint(id, Integer.class, listener,
				properties(queue).concurrency(concurrency).ackMode(ackMode).pollInterval(Duration.ofMillis(200)));
	}

	@Test
	void listenerReceivesEveryMessageOnceAndAcksOnReturn() {
		Map<Long, AtomicInteger> seen = new ConcurrentHashMap<>();
		this.listeners.start(endpoint("work", "work", 4, AckMode.AUTO,
				(message, ack) -> seen.computeIfAbsent(message.id(), (id) -> new AtomicInteger()).incrementAndGet()));
		List<Long> ids = this.template.sendBatch("work", IntStream.range(0, 500).boxed().toList());
		await().atMost(Duration.ofSeconds(20)).until(() -> seen.size() == ids.size() && count() == 0);
		assertThat(seen.values()).allMatch((n) -> n.get() == 1);
		assertThat(seen.keySet()).containsExactlyInAnyOrderElementsOf(ids);
		// The counter moves after the acknowledgement commits.
		await().atMost(Duration.ofSeconds(5)).ignoreException(MeterNotFoundException.class).untilAsserted(() -> assertThat(
				this.meters.get("pgqueue.messages.processed").tag("outcome", "success").counter().count())
			.isEqualTo(500));
		await().atMost(Duration.ofSeconds(5)).until(() -> advisoryLocks() == 0);
	}

	/** A session sets its own planner settings (see QueueSql.INDEX_PLANS) and gives them back when it ends. */
	@Test
	void connectionsGoBackToThePoolWithTheirOwnPlannerSettings() throws Exception {
		AtomicInteger handled = new AtomicInteger();
		this.listeners.start(endpoint("planned", "planned", 4, AckMode.AUTO,
				(message, ack) -> handled.incrementAndGet()));
		this.template.sendBatch("planned", IntStream.range(0, 200).boxed().toList());
		await().atMost(Duration.ofSeconds(20)).until(() -> handled.get() == 200);
		this.listeners.stop();
		List<Connection> borrowed = new ArrayList<>();
		try {
			Set<String> settings = new HashSet<>();
			for (int i = 0; i < this.listeners.consumerPool().getMaximumPoolSize(); i++) {
				Connection connection = this.listeners.consumerPool().getConnection();
				borrowed.add(connection);
				try (Statement statement = connection.createStatement();
						ResultSet rs = statement.executeQuery(
								"SELECT current_setting('enable_seqscan') || ' ' || current_setting('plan_cache_mode')")) {
					rs.next();
					settings.add(rs.getString(1));
				}
			}
			assertThat(settings).containsExactly("on auto");
		}
		finally {
			for (Connection connection : borrowed) {
				connection.close();
			}
		}
	}

	/**
	 * The first handlers wait until three run at once (so that the test does not depend on the
	 * scheduler overlapping them), and never do more than three run.
	 */
	@Test
	void neverMoreHandlersRunThanTheConcurrency() {
		AtomicInteger running = new AtomicInteger();
		AtomicInteger maxRunning = new AtomicInteger();
		AtomicInteger handled = new AtomicInteger();
		CountDownLatch threeRunning = new CountDownLatch(3);
		this.listeners.start(endpoint("slow", "slow", 3, AckMode.AUTO, (message, ack) -> {
			int now = running.incrementAndGet();
			maxRunning.accumulateAndGet(now, Math::max);
			threeRunning.countDown();
			threeRunning.await(10, TimeUnit.SECONDS);
			Thread.sleep(5);
			running.decrementAndGet();
			handled.incrementAndGet();
		}));
		this.template.sendBatch("slow", IntStream.range(0, 200).boxed().toList());
		await().atMost(Duration.ofSeconds(30)).until(() -> handled.get() == 200);
		assertThat(maxRunning.get()).isEqualTo(3);
	}

	@Test
	void failingMessageIsRetriedWithBackoffThenDeadLettered() {
		this.admin.declare(QueueDefinition.of("flaky").withMaxAttempts(3)
			.withBackoff(Duration.ofMillis(50), 2.0, Duration.ofSeconds(1)));
		List<Integer> attempts = new ArrayList<>();
		this.listeners.start(endpoint("flaky", "flaky", 1, AckMode.AUTO, (message, ack) -> {
			attempts.add(message.attempt());
			throw new IllegalStateException("downstream unavailable");
		}));
		long id = this.template.send("flaky", 1);
		await().atMost(Duration.ofSeconds(10)).until(() -> "flaky.dlq".equals(queueOf(id)));
		assertThat(attempts).containsExactly(1, 2, 3);
		assertThat(this.jdbc.queryForObject("SELECT last_error FROM pgqueue.message WHERE id = ?", String.class, id))
			.contains("Failed 3 of 3 attempts").contains("IllegalStateException: downstream unavailable");
		// The counters move after the completing statements commit.
		await().atMost(Duration.ofSeconds(5)).ignoreException(MeterNotFoundException.class).untilAsserted(() -> {
			assertThat(this.meters.get("pgqueue.messages.processed").tag("outcome", "retry").counter().count())
				.isEqualTo(2);
			assertThat(this.meters.get("pgqueue.messages.processed").tag("outcome", "dead").counter().count())
				.isEqualTo(1);
		});
	}

	@Test
	void unconvertiblePayloadIsDeadLetteredAtOnceAndTheConsumerGoesOn() {
		AtomicInteger handled = new AtomicInteger();
		this.listeners.start(
				endpoint("typed", "typed", 1, AckMode.AUTO, (message, ack) -> handled.incrementAndGet()));
		this.jdbc.update("INSERT INTO pgqueue.message (queue, payload) VALUES ('typed', '\"not a number\"')");
		this.template.send("typed", 42);
		await().atMost(Duration.ofSeconds(10)).until(() -> handled.get() == 1 && count("typed.dlq") == 1);
		assertThat(this.jdbc.queryForObject("SELECT last_error FROM pgqueue.message WHERE queue = 'typed.dlq'",
				String.class)).contains("Cannot read payload as java.lang.Integer");
	}

	@Test
	void manualAckModeCompletesThroughTheAcknowledgment() {
		List<Integer> attempts = new ArrayList<>();
		this.listeners.start(endpoint("manual", "manual", 1, AckMode.MANUAL, (message, ack) -> {
			attempts.add(message.attempt());
			switch ((Integer) message.payload()) {
				case 1 -> ack.ack();
				case 2 -> {
					if (message.attempt() == 1) {
						ack.nack(Duration.ofMillis(10));
					}
					else {
						ack.ack();
					}
				}
				default -> ack.reject("not wanted");
			}
		}));
		this.template.sendBatch("manual", List.of(1, 2, 3));
		await().atMost(Duration.ofSeconds(10)).until(() -> count("manual") == 0 && count("manual.dlq") == 1);
		assertThat(attempts).containsExactlyInAnyOrder(1, 1, 1, 2);
	}

	@Test
	void notificationWakesAnIdleListenerLongBeforeItsPollInterval() throws Exception {
		CountDownLatch received = new CountDownLatch(1);
		this.listeners.start(ListenerFixture.endpoint("idle", Integer.class, (message, ack) -> received.countDown(),
				properties("idle").pollInterval(Duration.ofSeconds(30))));
		await().atMost(Duration.ofSeconds(5)).until(this.listeners.registry()::isListening);
		// the poller's first, empty poll is over: it waits up to 30 s now
		await().atMost(Duration.ofSeconds(30)).until(() -> Pollers.waiting("idle") == 1);
		this.template.send("idle", 1);
		assertThat(received.await(1, TimeUnit.SECONDS)).as("handled within a second").isTrue();
	}

	@Test
	void listenersRecoverAfterEveryConsumerSessionIsTerminatedAndNothingIsLost() {
		Map<Long, AtomicInteger> seen = new ConcurrentHashMap<>();
		AtomicBoolean terminated = new AtomicBoolean();
		this.listeners.start(endpoint("robust", "robust", 3, AckMode.AUTO, (message, ack) -> {
			seen.computeIfAbsent(message.id(), (id) -> new AtomicInteger()).incrementAndGet();
			Thread.sleep(1);
		}));
		List<Long> ids = this.template.sendBatch("robust", IntStream.range(0, 3000).boxed().toList());
		await().atMost(Duration.ofSeconds(10)).until(() -> seen.size() > 300);
		int killed = this.postgres.terminateSessions("consumers");
		assertThat(killed).as("3 pollers and the LISTEN connection").isEqualTo(4);
		terminated.set(true);
		await().atMost(Duration.ofSeconds(30)).until(() -> count() == 0 && seen.keySet().containsAll(ids));
		assertThat(seen.keySet()).containsExactlyInAnyOrderElementsOf(ids);
		await().atMost(Duration.ofSeconds(10)).until(this.listeners.registry()::isListening);
		long redelivered = seen.values().stream().filter((n) -> n.get() > 1).count();
		assertThat(redelivered).as("only the batches in flight when the sessions died").isLessThanOrEqualTo(3 * 10);
	}

	@Test
	void noHandlerStartsAfterItsSessionIsKnownToBeGone() {
		List<String> deliveries = new java.util.concurrent.CopyOnWriteArrayList<>();
		AtomicBoolean killed = new AtomicBoolean();
		this.listeners.registry().registerListenerEndpoint(endpoint("fenced", "fenced", 1, AckMode.AUTO, (message, ack) -> {
			deliveries.add(message.payload() + "@" + message.attempt());
			if (killed.compareAndSet(false, true)) {
				this.postgres.terminateSessions("consumers");
				Thread.sleep(300); // the server's goodbye reaches the poller's socket
			}
		}));
		this.template.sendBatch("fenced", List.of(1, 2, 3, 4, 5));
		this.listeners.registry().start();
		await().atMost(Duration.ofSeconds(20)).until(() -> count() == 0 && deliveries.size() >= 6);
		assertThat(deliveries).as("only the handler running when the session died ran on it")
			.containsExactly("1@1", "1@2", "2@2", "3@2", "4@2", "5@2");
	}

	@Test
	void listenersRecoverAfterPostgresRestartsAndNothingIsLost() {
		Map<Long, AtomicInteger> seen = new ConcurrentHashMap<>();
		this.listeners.start(endpoint("restart", "restart", 2, AckMode.AUTO, (message, ack) -> {
			seen.computeIfAbsent(message.id(), (id) -> new AtomicInteger()).incrementAndGet();
			Thread.sleep(1);
		}));
		List<Long> ids = this.template.sendBatch("restart", IntStream.range(0, 2000).boxed().toList());
		await().atMost(Duration.ofSeconds(10)).until(() -> seen.size() > 200);
		this.postgres.restart();
		await().atMost(Duration.ofSeconds(60)).until(() -> seen.keySet().containsAll(ids));
		await().atMost(Duration.ofSeconds(10)).until(() -> count() == 0 && this.listeners.registry().isListening());
		assertThat(seen.keySet()).containsExactlyInAnyOrderElementsOf(ids);
		assertThat(this.listeners.registry().getListenerContainer("restart").isConnected()).isTrue();
	}

	@Test
	void idleListenerPollsAboutOncePerPollIntervalWhateverItsConcurrencyUntilTheRegistryWatches() throws Exception {
		AtomicInteger claims = new AtomicInteger();
		javax.sql.DataSource counting = countingClaims(this.listeners.consumerPool(), claims);
		// A registry that listens but cannot sweep (its application data source refuses the sweep's
		// statement): its idle pollers poll on their own.
		javax.sql.DataSource app = this.template.context().dataSource();
		javax.sql.DataSource refusingSweeps = (javax.sql.DataSource) java.lang.reflect.Proxy.newProxyInstance(
				getClass().getClassLoader(), new Class<?>[] { javax.sql.DataSource.class }, (proxy, method, args) -> {
					Object result = method.invoke(app, args);
					if (!(result instanceof Connection connection)) {
						return result;
					}
					return java.lang.reflect.Proxy.newProxyInstance(getClass().getClassLoader(),
							new Class<?>[] { Connection.class }, (p, m, a) -> {
								if (m.getName().equals("prepareStatement") && ((String) a[0]).contains("AS q(queue)")) {
									throw new java.sql.SQLException("refused by the test");
								}
								try {
									return m.invoke(connection, a);
								}
								catch (java.lang.reflect.InvocationTargetException ex) {
									throw ex.getCause();
								}
							});
				});
		io.github.pgqueue.QueueContext unsweeping = io.github.pgqueue.QueueContext.builder(refusingSweeps)
			.lockNamespace(this.template.context().lockNamespace())
			.build();
		QueueListenerEndpointRegistry idle = new QueueListenerEndpointRegistry(unsweeping, counting,
				Duration.ofSeconds(5));
		idle.registerListenerEndpoint(QueueListenerEndpoint.builder("idle-cost")
				.listener(Integer.class, (message, ack) -> {
				})
				.containerProperties(ContainerProperties.builder(List.of("idle-cost"))
					.concurrency(4)
					.pollInterval(Duration.ofMillis(200))
					.build())
				.build());
		idle.start();
		try {
			// every poller's first claim is done: each waits, the leader a poll interval, the others ten
			await().atMost(Duration.ofSeconds(30)).until(() -> Pollers.waiting("idle-cost") == 4);
			int before = claims.get();
			long start = System.nanoTime();
			Thread.sleep(2000);
			int during = claims.get() - before;
			long elapsedMillis = (System.nanoTime() - start) / 1_000_000;
			// The leader polls every 200 ms: about 10 in 2 s; the three followers sleep ten intervals,
			// so each polls at most once in 2 s and twice in up to 4 s (an oversleeping machine). Every
			// poller polling every interval would make about 40.
			assertThat(idle.isWatching()).isFalse();
			assertThat(during).as("claims in %d ms", elapsedMillis)
				.isBetween(3, (int) (elapsedMillis / 200) + 2 + 3 * (int) (1 + elapsedMillis / 2000));
		}
		finally {
			idle.stop();
		}
	}

	@ParameterizedTest
	@EnumSource(ConsumptionMode.class)
	void quietListenerClaimsOncePerMessageItIsWokenFor(ConsumptionMode mode) throws Exception {
		AtomicInteger claims = new AtomicInteger();
		javax.sql.DataSource counting = countingClaims(this.listeners.consumerPool(), claims);
		QueueListenerEndpointRegistry quiet = new QueueListenerEndpointRegistry(this.template.context(), counting,
				Duration.ofSeconds(5));
		String queue = "quiet-" + mode.name().toLowerCase(java.util.Locale.ROOT);
		AtomicInteger handled = new AtomicInteger();
		quiet.registerListenerEndpoint(QueueListenerEndpoint.builder(queue)
				.listener(Integer.class, (message, ack) -> handled.incrementAndGet())
				.containerProperties(ContainerProperties.builder(List.of(queue))
					.mode(mode)
					.pollInterval(Duration.ofSeconds(60))
					.build())
				.build());
		quiet.start();
		try {
			int messages = 8;
			await().atMost(Duration.ofSeconds(30)).until(() -> Pollers.waiting(queue) == 1);
			int before = claims.get();
			for (int i = 1; i <= messages; i++) {
				this.template.send(queue, i);
				int sent = i;
				await().atMost(Duration.ofSeconds(10)).until(() -> handled.get() == sent && Pollers.waiting(queue) == 1);
			}
			// Each message sent to the idle listener is claimed by the claim its notification wakes. That
			// claim says nothing more is to be found, so the poller waits once the message is done
			// rather than claiming again for nothing, which made two claims a message.
			assertThat(claims.get() - before).isLessThanOrEqualTo(messages + 1);
		}
		finally {
			quiet.stop();
		}
	}

	private static javax.sql.DataSource countingClaims(javax.sql.DataSource target, AtomicInteger claims) {
		return (javax.sql.DataSource) java.lang.reflect.Proxy.newProxyInstance(
				QueueListenerContainerIntegrationTests.class.getClassLoader(), new Class<?>[] { javax.sql.DataSource.class },
				(proxy, method, args) -> {
					Object result = method.invoke(target, args);
					if (!(result instanceof Connection connection)) {
						return result;
					}
					return java.lang.reflect.Proxy.newProxyInstance(
							QueueListenerContainerIntegrationTests.class.getClassLoader(),
							new Class<?>[] { Connection.class }, (p, m, a) -> {
								if (m.getName().equals("prepareStatement") && ((String) a[0]).contains("'next_due'")) {
									claims.incrementAndGet();
								}
								try {
									return m.invoke(connection, a);
								}
								catch (java.lang.reflect.InvocationTargetException ex) {
									throw ex.getCause();
								}
							});
				});
	}

	@Test
	void gracefulStopFinishesRunningHandlersStartsNoNewOneAndReleasesTheRest() throws Exception {
		CountDownLatch inHandler = new CountDownLatch(1);
		AtomicInteger started = new AtomicInteger();
		AtomicInteger finished = new AtomicInteger();
		this.listeners.start(endpoint("graceful", "graceful", 1, AckMode.AUTO, (message, ack) -> {
			started.incrementAndGet();
			inHandler.countDown();
			Thread.sleep(500);
			finished.incrementAndGet();
		}));
		this.template.sendBatch("graceful", IntStream.range(0, 10).boxed().toList());
		assertThat(inHandler.await(5, TimeUnit.SECONDS)).isTrue();
		this.listeners.stop();
		assertThat(started.get()).as("no handler starts after stop").isEqualTo(1);
		assertThat(finished.get()).as("the running handler finished").isEqualTo(1);
		assertThat(count("graceful")).as("the rest released, not lost").isEqualTo(9);
		assertThat(this.jdbc.queryForObject("SELECT sum(attempts) FROM pgqueue.message WHERE queue = 'graceful'",
				Long.class)).as("no attempt counted for messages no handler saw").isZero();
		assertThat(advisoryLocks()).isZero();
		assertThat(this.template.stats("graceful").ready()).isEqualTo(9);
	}

	@Test
	void handlerThatOutlivesTheShutdownTimeoutIsInterruptedAndItsMessageReleased() throws Exception {
		QueueListenerEndpointRegistry impatient = this.listeners.registry(Duration.ofMillis(200));
		CountDownLatch inHandler = new CountDownLatch(1);
		impatient.registerListenerEndpoint(endpoint("stuck", "stuck", 1, AckMode.AUTO, (message, ack) -> {
			inHandler.countDown();
			Thread.sleep(60_000);
		}));
		impatient.start();
		long id = this.template.send("stuck", 1);
		assertThat(inHandler.await(5, TimeUnit.SECONDS)).isTrue();
		long before = System.nanoTime();
		impatient.stop();
		assertThat(Duration.ofNanos(System.nanoTime() - before)).isLessThan(Duration.ofSeconds(5));
		assertThat(queueOf(id)).isEqualTo("stuck");
		assertThat(advisoryLocks()).isZero();
	}

	@Test
	void stopIsBoundedByTheShutdownTimeoutPlusOneGraceForAllStuckHandlersTogether() throws Exception {
		QueueListenerEndpointRegistry impatient = this.listeners.registry(Duration.ofMillis(300));
		CountDownLatch allStuck = new CountDownLatch(8);
		AtomicBoolean release = new AtomicBoolean();
		impatient.registerListenerEndpoint(QueueListenerEndpoint.builder("deaf")
				.listener(Integer.class, (message, ack) -> {
					allStuck.countDown();
					while (!release.get()) { // ignores interrupts
						java.util.concurrent.locks.LockSupport.parkNanos(10_000_000);
					}
				})
				.containerProperties(ContainerProperties.builder(List.of("deaf"))
					.concurrency(8)
					.batchSize(1)
					.pollInterval(Duration.ofMillis(100))
					.build())
				.build());
		this.template.sendBatch("deaf", IntStream.range(0, 8).boxed().toList());
		impatient.start();
		assertThat(allStuck.await(30, TimeUnit.SECONDS)).isTrue();
		List<Thread> pollers = Thread.getAllStackTraces().keySet().stream()
			.filter((thread) -> thread.getName().startsWith("pgqueue-deaf-")).toList();
		assertThat(pollers).hasSize(8).allMatch(Thread::isDaemon);
		assertThat(keepAliveThreads()).as("what keeps a consuming-only application running").hasSize(1)
			.noneMatch(Thread::isDaemon);

		long before = System.nanoTime();
		CountDownLatch stopped = new CountDownLatch(1);
		impatient.stop(stopped::countDown);
		assertThat(Duration.ofNanos(System.nanoTime() - before)).as("stop(Runnable) returns at once")
			.isLessThan(Duration.ofMillis(200));
		assertThat(stopped.await(20, TimeUnit.SECONDS)).isTrue();
		assertThat(Duration.ofNanos(System.nanoTime() - before)).as("300 ms + one 5 s grace, not 5 s per thread")
			.isLessThan(Duration.ofSeconds(8));
		await().atMost(Duration.ofSeconds(5)).until(() -> keepAliveThreads().isEmpty());
		release.set(true);
		await().atMost(Duration.ofSeconds(10)).until(() -> pollers.stream().noneMatch(Thread::isAlive));
		await().atMost(Duration.ofSeconds(10)).until(() -> advisoryLocks() == 0);
	}

	/**
	 * The thread that keeps a consuming-only application's JVM alive lives only while the registry
	 * runs: a container started while the registry is not running (never started, or started once
	 * the registry stopped, as the dashboard or the endpoint may do during shutdown) starts none,
	 * since no stop of the registry would ever end it.
	 */
	@Test
	void aContainerStartedWhileTheRegistryIsNotRunningStartsNoKeepAliveThread() {
		QueueListenerEndpointRegistry neverStarted = this.listeners.registry();
		neverStarted.registerListenerEndpoint(endpoint("never-started", "never-started", 1, AckMode.AUTO,
				(message, ack) -> {
				}));
		assertStartLeavesNoKeepAliveThread(neverStarted.getListenerContainer("never-started"));

		QueueListenerEndpointRegistry stopped = new QueueListenerEndpointRegistry(this.template.context(),
				this.listeners.consumerPool(), Duration.ofSeconds(5));
		stopped.registerListenerEndpoint(endpoint("started-late", "started-late", 1, AckMode.AUTO, (message, ack) -> {
		}));
		stopped.start();
		stopped.stop();
		assertStartLeavesNoKeepAliveThread(stopped.getListenerContainer("started-late"));
	}

	private static void assertStartLeavesNoKeepAliveThread(QueueListenerContainer container) {
		await().atMost(Duration.ofSeconds(5)).until(() -> keepAliveThreads().isEmpty());
		container.start();
		try {
			assertThat(container.isRunning()).isTrue();
			assertThat(keepAliveThreads()).as("non-daemon threads left to keep the JVM alive").isEmpty();
		}
		finally {
			container.stop();
		}
		assertThat(keepAliveThreads()).as("after the container stopped").isEmpty();
	}

	private static List<Thread> keepAliveThreads() {
		return Thread.getAllStackTraces().keySet().stream()
			.filter((thread) -> thread.getName().equals("pgqueue-keep-alive") && thread.isAlive())
			.toList();
	}

}
