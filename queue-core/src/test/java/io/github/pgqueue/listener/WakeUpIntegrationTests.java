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
 * claim statement is counted, by thread, through the consumers' DataSource), and a poller that
 * has just found work looks again shortly without waiting for a notification.
 */
@ExtendWith(PostgresExtension.class)
class WakeUpIntegrationTests {

	private final EmbeddedPostgres postgres = EmbeddedPostgres.get();

	private final HikariDataSource pool = this.postgres.pool("wake-up", 8);

	private final QueueTemplate template = QueueTemplate.builder(this.postgres.dataSource()).build();

	private final Map<String, Integer> claimsByThread = new ConcurrentHashMap<>();

	private QueueListenerEndpointRegistry registry;

	@AfterEach
	void stop() {
		if (this.registry != null) {
			this.registry.stop();
		}
		this.pool.close();
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
