package io.github.pgqueue.listener;

import java.sql.Connection;
import java.sql.ResultSet;
import java.sql.Statement;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.atomic.AtomicInteger;

import com.zaxxer.hikari.HikariDataSource;
import io.github.pgqueue.QueueTemplate;
import io.github.pgqueue.testing.EmbeddedPostgres;
import io.github.pgqueue.testing.PostgresExtension;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;

import org.springframework.jdbc.core.JdbcTemplate;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

/**
 * The one LISTEN connection: replaced when it silently stops answering, and left clean for the
 * pool when the listeners stop. Listeners here poll once a minute, so only a notification wakes them.
 */
@ExtendWith(PostgresExtension.class)
class NotifyConnectionIntegrationTests {

	private final EmbeddedPostgres postgres = EmbeddedPostgres.get();

	private final JdbcTemplate jdbc = new JdbcTemplate(this.postgres.dataSource());

	private final QueueTemplate template = QueueTemplate.builder(this.postgres.dataSource()).build();

	private final HikariDataSource consumerPool = this.postgres.pool("notify-test", 2);

	private final QueueListenerEndpointRegistry registry = new QueueListenerEndpointRegistry(this.template.context(),
			this.consumerPool, Duration.ofSeconds(5));

	private final AtomicInteger handled = new AtomicInteger();

	@AfterEach
	void stop() {
		this.registry.stop();
		this.consumerPool.close();
	}

	@Test
	void aListenConnectionThatStopsAnsweringIsReplacedAndNotificationsWakeListenersAgain() throws Exception {
		start();
		int pid = this.jdbc.queryForObject("SELECT pid FROM pg_stat_activity WHERE application_name = 'notify-test' "
				+ "AND query LIKE 'LISTEN%'", Integer.class);
		signal("STOP", pid); // a hung session: no error, no answer
		try {
			await().atMost(Duration.ofSeconds(20)).until(() -> !this.registry.isListening());
			await().atMost(Duration.ofSeconds(20)).until(this.registry::isListening);
		}
		finally {
			signal("CONT", pid);
		}
		assertThat(this.jdbc.queryForObject("SELECT pid FROM pg_stat_activity WHERE application_name = 'notify-test' "
				+ "AND query LIKE 'LISTEN%' AND pid <> ?", Integer.class, pid)).isNotNull();
		int before = this.handled.get();
		this.template.send("woken", 2);
		await().atMost(Duration.ofSeconds(10)).until(() -> this.handled.get() == before + 1);
	}

	@Test
	void stoppedListenersLeaveNoPooledConnectionListening() throws Exception {
		start();
		this.registry.stop();
		try (Connection first = this.consumerPool.getConnection(); Connection second = this.consumerPool.getConnection()) {
			for (Connection connection : List.of(first, second)) {
				try (Statement statement = connection.createStatement();
						ResultSet channels = statement.executeQuery("SELECT count(*) FROM pg_listening_channels()")) {
					channels.next();
					assertThat(channels.getInt(1)).as("channels the pooled connection listens to").isZero();
				}
			}
		}
	}

	private void start() {
		this.registry.registerListenerEndpoint(QueueListenerEndpoint.builder("woken")
				.listener(Integer.class, (message, ack) -> this.handled.incrementAndGet())
				.containerProperties(ContainerProperties.builder(List.of("woken"))
					.pollInterval(Duration.ofSeconds(60))
					.build())
				.build());
		this.registry.start();
		await().atMost(Duration.ofSeconds(10)).until(this.registry::isListening);
		this.template.send("woken", 1);
		await().atMost(Duration.ofSeconds(10)).until(() -> this.handled.get() == 1);
	}

	private static void signal(String signal, int pid) throws Exception {
		Process kill = new ProcessBuilder("kill", "-" + signal, String.valueOf(pid)).inheritIO().start();
		assertThat(kill.waitFor()).as("kill -%s %d", signal, pid).isZero();
	}

}
