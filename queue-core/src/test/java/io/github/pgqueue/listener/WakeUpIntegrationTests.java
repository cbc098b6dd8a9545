package io.github.pgqueue.listener;

import java.lang.reflect.InvocationTargetException;
import java.lang.reflect.Proxy;
import java.sql.Connection;
import java.time.Duration;
import java.util.List;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.atomic.AtomicInteger;

import javax.sql.DataSource;

import com.zaxxer.hikari.HikariDataSource;
import io.github.pgqueue.AckMode;
import io.github.pgqueue.QueueTemplate;
import io.github.pgqueue.testing.EmbeddedPostgres;
import io.github.pgqueue.testing.PostgresExtension;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

/**
 * A send wakes one idle poller of the listener, not all of them: every claim statement is counted,
 * by thread, through the consumers' DataSource.
 */
@ExtendWith(PostgresExtension.class)
class WakeUpIntegrationTests {

	private final EmbeddedPostgres postgres = EmbeddedPostgres.get();

	private final HikariDataSource pool = this.postgres.pool("wake-up", 8);

	private final QueueTemplate template = QueueTemplate.builder(this.postgres.dataSource()).build();

	private final AtomicInteger claims = new AtomicInteger();

	private final Set<String> claimingThreads = ConcurrentHashMap.newKeySet();

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
		List<Long> handled = new CopyOnWriteArrayList<>();
		Set<String> handlers = ConcurrentHashMap.newKeySet();
		this.registry = new QueueListenerEndpointRegistry(this.template, counting(this.pool), Duration.ofSeconds(5));
		this.registry.registerListenerEndpoint(new QueueListenerEndpoint("wake", List.of("wake"), 4, AckMode.AUTO, true,
				Integer.class, (message, ack) -> {
					handlers.add(Thread.currentThread().getName());
					handled.add(message.id());
				}, new DefaultQueueErrorHandler(), 10,
				Duration.ofSeconds(60)));
		this.registry.start();
		await().atMost(Duration.ofSeconds(10)).until(() -> this.claimingThreads.size() == 4);
		await().atMost(Duration.ofSeconds(10)).until(() -> pollersWaiting("pgqueue-wake-") == 4);

		int sends = 40;
		int before = this.claims.get();
		for (int i = 0; i < sends; i++) {
			long id = this.template.send("wake", i);
			await().atMost(Duration.ofSeconds(10)).until(() -> handled.contains(id));
			await().atMost(Duration.ofSeconds(10)).until(() -> pollersWaiting("pgqueue-wake-") == 4);
		}
		int perSend = (this.claims.get() - before) / sends;
		// The woken poller's claim, and its claim again after it handled the message (it found
		// something); with every poller woken, 4 + 1.
		assertThat(perSend).as("claim statements per send into an idle listener").isEqualTo(2);
		assertThat(handlers).as("wake-ups go round the pollers").hasSize(4);
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
						this.claims.incrementAndGet();
						this.claimingThreads.add(Thread.currentThread().getName());
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
