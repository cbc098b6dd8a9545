package io.github.pgqueue.listener;

import java.lang.reflect.InvocationTargetException;
import java.lang.reflect.Proxy;
import java.sql.Connection;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;

import javax.sql.DataSource;

import com.zaxxer.hikari.HikariDataSource;
import io.github.pgqueue.QueueTemplate;
import io.github.pgqueue.internal.Linger;
import io.github.pgqueue.testing.EmbeddedPostgres;
import io.github.pgqueue.testing.PostgresExtension;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;

import org.springframework.jdbc.core.JdbcTemplate;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

/**
 * How pollers learn of work: a send wakes one idle poller of the listener, not all of them (every
 * claim statement is counted, by thread, through the consumers' DataSource); a poller that has
 * just found work looks again shortly without waiting for a notification; and the registry's
 * sweep, not each idle poller, looks for what no notification announces.
 */
@ExtendWith(PostgresExtension.class)
class WakeUpIntegrationTests {

	private final EmbeddedPostgres postgres = EmbeddedPostgres.get();

	private final HikariDataSource pool = this.postgres.pool("wake-up", 8);

	private final QueueTemplate template = QueueTemplate.builder(this.postgres.dataSource()).build();

	private final Map<String, Integer> claimsByThread = new ConcurrentHashMap<>();

	private QueueListenerEndpointRegistry registry;

	private HikariDataSource quietPool;

	@AfterEach
	void stop() {
		if (this.registry != null) {
			this.registry.stop();
		}
		this.pool.close();
		if (this.quietPool != null) {
			this.quietPool.close();
		}
	}

	@Test
	void eachSendIntoAnIdleListenerWakesOnePollerAndEveryPollerStillGetsWork() {
		Map<Long, String> handledBy = new ConcurrentHashMap<>();
		this.registry = new QueueListenerEndpointRegistry(this.template.context(), counting(this.pool), Duration.ofSeconds(5));
		this.registry.registerListenerEndpoint(QueueListenerEndpoint.builder("wake")
				.listener(Integer.class, (message, ack) -> handledBy.put(message.id(), Thread.currentThread().getName()))
				.containerProperties(ContainerProperties.builder(List.of("wake"))
					.concurrency(4)
					.pollInterval(Duration.ofSeconds(60))
					.build())
				.build());
		this.registry.start();
		await().atMost(Duration.ofSeconds(10)).until(() -> this.claimsByThread.size() == 4);
		awaitQuiet();

		int sends = 12;
		int othersClaims = 0;
		for (int i = 0; i < sends; i++) {
			Map<String, Integer> before = Map.copyOf(this.claimsByThread);
			long id = this.template.send("wake", i);
			await().atMost(Duration.ofSeconds(10)).until(() -> handledBy.containsKey(id));
			awaitQuiet();
			String handler = handledBy.get(id);
			for (Map.Entry<String, Integer> claims : this.claimsByThread.entrySet()) {
				if (!claims.getKey().equals(handler)) {
					othersClaims += claims.getValue() - before.getOrDefault(claims.getKey(), 0);
				}
			}
		}
		// With every poller woken: three claims of the others per send.
		assertThat(othersClaims).as("claims of the pollers that did not handle the send").isZero();
		assertThat(Set.copyOf(handledBy.values())).as("wake-ups go round the pollers").hasSize(4);
	}

	/**
	 * A busy poller that found work claims again a few times at short intervals before it waits for
	 * notifications alone, so that a message whose notification comes late (they came in bursts up
	 * to a second apart under load) is not left for the poll interval. The insert trigger is
	 * disabled for the last send, which then notifies nobody.
	 */
	@Test
	void aSendThatNotifiesNobodyRightAfterBusyWorkIsTakenByTheLingeringPoller() {
		Map<Long, String> handledBy = new ConcurrentHashMap<>();
		this.registry = new QueueListenerEndpointRegistry(this.template.context(), this.pool, Duration.ofSeconds(5));
		this.registry.registerListenerEndpoint(QueueListenerEndpoint.builder("linger")
				.listener(Integer.class, (message, ack) -> handledBy.put(message.id(), Thread.currentThread().getName()))
				.containerProperties(ContainerProperties.builder(List.of("linger"))
					.pollInterval(Duration.ofSeconds(60))
					.build())
				.build());
		this.registry.start();
		// Busy: as many messages as make a poller linger, handled within the second.
		List<Long> work = this.template.sendBatch("linger", java.util.Collections.nCopies(Linger.BUSY_PER_SECOND, 1));
		await().atMost(Duration.ofSeconds(10)).until(() -> handledBy.keySet().containsAll(work));
		JdbcTemplate jdbc = new JdbcTemplate(this.postgres.dataSource());
		jdbc.execute("ALTER TABLE pgqueue.message DISABLE TRIGGER message_inserted");
		try {
			long second = this.template.send("linger", 2); // within the 511 ms a poller lingers
			await().atMost(Duration.ofSeconds(10)).until(() -> handledBy.containsKey(second));
		}
		finally {
			jdbc.execute("ALTER TABLE pgqueue.message ENABLE TRIGGER message_inserted");
		}
	}

	/**
	 * While the registry watches its queues, an idle poller does not poll on its own every poll
	 * interval: twenty quiet listeners make no claim at all in a second, where each polled every
	 * 100 ms before.
	 */
	@Test
	void idleListenersOfAWatchingRegistryLeaveThePollingToTheSweep() {
		// Twenty sessions, the LISTEN connection and the sweep's.
		HikariDataSource quietPool = this.postgres.pool("wake-up-quiet", 24);
		this.quietPool = quietPool;
		this.registry = new QueueListenerEndpointRegistry(this.template.context(), counting(quietPool), Duration.ofSeconds(5));
		for (int i = 0; i < 20; i++) {
			this.registry.registerListenerEndpoint(QueueListenerEndpoint.builder("quiet-" + i)
					.listener(Integer.class, (message, ack) -> {
					})
					.containerProperties(ContainerProperties.builder(List.of("quiet-" + i))
						.concurrency(1)
						.pollInterval(Duration.ofMillis(100))
						.build())
					.build());
		}
		this.registry.start();
		await().atMost(Duration.ofSeconds(10)).untilAsserted(() -> assertThat(this.registry.isWatching()
				&& this.claimsByThread.size() == 20).as("watching %s, claims by thread %s", this.registry.isWatching(),
						this.claimsByThread).isTrue());
		// Every poller has chosen its wait since the registry began to watch.
		await().pollDelay(Duration.ofMillis(500)).atMost(Duration.ofSeconds(5)).until(() -> true);

		int before = this.claimsByThread.values().stream().mapToInt(Integer::intValue).sum();
		await().pollDelay(Duration.ofSeconds(1)).atMost(Duration.ofSeconds(5)).until(() -> true);
		int claims = this.claimsByThread.values().stream().mapToInt(Integer::intValue).sum() - before;

		assertThat(this.registry.isWatching()).isTrue();
		assertThat(claims).as("claims of twenty idle pollers in a second").isZero();
	}

	/**
	 * What no notification announces reaches an idle listener at the next sweep, one poll interval
	 * later, not at its own next poll, sixty poll intervals later: the insert trigger is disabled
	 * for the send, as a message freed by a consumer that died notifies nobody either.
	 */
	@Test
	void aMessageThatNotifiesNobodyReachesAnIdleListenerAtTheNextSweep() {
		Map<Long, String> handledBy = new ConcurrentHashMap<>();
		this.registry = new QueueListenerEndpointRegistry(this.template.context(), this.pool, Duration.ofSeconds(5));
		this.registry.registerListenerEndpoint(QueueListenerEndpoint.builder("swept")
				.listener(Integer.class, (message, ack) -> handledBy.put(message.id(), Thread.currentThread().getName()))
				.containerProperties(ContainerProperties.builder(List.of("swept"))
					.concurrency(1)
					.pollInterval(Duration.ofMillis(200))
					.build())
				.build());
		this.registry.start();
		await().atMost(Duration.ofSeconds(10)).until(this.registry::isWatching);
		// The poller has chosen its wait (12 s) since the registry began to watch.
		await().pollDelay(Duration.ofMillis(1000)).atMost(Duration.ofSeconds(5)).until(() -> true);
		JdbcTemplate jdbc = new JdbcTemplate(this.postgres.dataSource());
		jdbc.execute("ALTER TABLE pgqueue.message DISABLE TRIGGER message_inserted");
		try {
			long id = this.template.send("swept", 1);
			await().atMost(Duration.ofSeconds(3)).until(() -> handledBy.containsKey(id));
		}
		finally {
			jdbc.execute("ALTER TABLE pgqueue.message ENABLE TRIGGER message_inserted");
		}
	}

	/**
	 * A sweep whose database is down (no connection to be had, so its transaction cannot start)
	 * keeps trying, and the registry watches again once the database is back.
	 */
	@Test
	void theSweepOutlivesADatabaseThatIsDownAndWatchesAgainWhenItIsBack() {
		java.util.concurrent.atomic.AtomicBoolean down = new java.util.concurrent.atomic.AtomicBoolean(true);
		DataSource app = this.postgres.dataSource();
		DataSource flaky = (DataSource) Proxy.newProxyInstance(getClass().getClassLoader(),
				new Class<?>[] { DataSource.class }, (proxy, method, args) -> {
					if (method.getName().equals("getConnection") && down.get()) {
						throw new java.sql.SQLException("the database is down (test)", "08001");
					}
					return invoke(app, method, args);
				});
		io.github.pgqueue.QueueContext context = io.github.pgqueue.QueueContext.builder(flaky)
			.lockNamespace(this.template.context().lockNamespace())
			.build();
		this.registry = new QueueListenerEndpointRegistry(context, this.pool, Duration.ofSeconds(5));
		this.registry.registerListenerEndpoint(QueueListenerEndpoint.builder("flaky")
				.listener(Integer.class, (message, ack) -> {
				})
				.containerProperties(ContainerProperties.builder(List.of("flaky"))
					.concurrency(1)
					.pollInterval(Duration.ofMillis(100))
					.build())
				.build());
		this.registry.start();
		await().pollDelay(Duration.ofMillis(500)).atMost(Duration.ofSeconds(5)).until(this.registry::isListening);
		assertThat(this.registry.isWatching()).as("watching while the sweep's database is down").isFalse();

		down.set(false);
		await().atMost(Duration.ofSeconds(5)).until(this.registry::isWatching);
	}

	/** Until every poller has lingered out (see {@link Linger}) and waits for a notification. */
	private static void awaitQuiet() {
		await().pollDelay(Duration.ofMillis(2 * Linger.LAST_MILLIS + 100)).atMost(Duration.ofSeconds(10))
			.until(() -> pollersWaiting("pgqueue-wake-") == 4);
	}

	private static long pollersWaiting(String prefix) {
		return Thread.getAllStackTraces().keySet().stream()
			.filter((t) -> t.getName().startsWith(prefix) && t.getState() == Thread.State.TIMED_WAITING)
			.count();
	}

	/** {@code dataSource}, counting the session claims prepared on its connections. */
	private DataSource counting(DataSource dataSource) {
		return (DataSource) Proxy.newProxyInstance(getClass().getClassLoader(), new Class<?>[] { DataSource.class },
				(proxy, method, args) -> {
					Object result = invoke(dataSource, method, args);
					return (result instanceof Connection connection) ? counting(connection) : result;
				});
	}

	private Connection counting(Connection connection) {
		return (Connection) Proxy.newProxyInstance(getClass().getClassLoader(), new Class<?>[] { Connection.class },
				(proxy, method, args) -> {
					if (method.getName().equals("prepareStatement") && args[0] instanceof String sql
							&& sql.contains("locked AS (")) {
						this.claimsByThread.merge(Thread.currentThread().getName(), 1, Integer::sum);
					}
					return invoke(connection, method, args);
				});
	}

	private static Object invoke(Object target, java.lang.reflect.Method method, Object[] args) throws Throwable {
		try {
			return method.invoke(target, args);
		}
		catch (InvocationTargetException ex) {
			throw ex.getCause();
		}
	}

}
