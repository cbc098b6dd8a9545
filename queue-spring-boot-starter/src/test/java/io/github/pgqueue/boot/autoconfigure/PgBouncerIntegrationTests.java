package io.github.pgqueue.boot.autoconfigure;

import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.SQLException;
import java.sql.Statement;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.stream.IntStream;

import javax.sql.DataSource;

import io.github.pgqueue.QueueOperations;
import io.github.pgqueue.annotation.QueueListener;
import io.github.pgqueue.testing.EmbeddedPostgres;
import io.github.pgqueue.testing.PgBouncer;
import io.github.pgqueue.testing.PostgresExtension;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;

import org.springframework.boot.autoconfigure.AutoConfigurations;
import org.springframework.boot.jdbc.autoconfigure.DataSourceAutoConfiguration;
import org.springframework.boot.jdbc.autoconfigure.DataSourceTransactionManagerAutoConfiguration;
import org.springframework.boot.test.context.runner.ApplicationContextRunner;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Configuration;
import org.springframework.jdbc.core.JdbcTemplate;
import org.springframework.transaction.PlatformTransactionManager;
import org.springframework.transaction.support.TransactionTemplate;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.awaitility.Awaitility.await;

/**
 * The application through a PgBouncer of the test's own (Debian's {@code /usr/sbin/pgbouncer}):
 * sends and transactional listeners through transaction pooling, with the listeners' own pool on a
 * direct connection; listeners whose connections are pooled per transaction refused at start;
 * everything through session pooling; and what pgjdbc's server-side prepared statements do under
 * transaction pooling.
 */
@ExtendWith(PostgresExtension.class)
class PgBouncerIntegrationTests {

	private static final EmbeddedPostgres postgres = EmbeddedPostgres.get();

	private static PgBouncer bouncer;

	private final JdbcTemplate jdbc = new JdbcTemplate(postgres.dataSource());

	@BeforeAll
	static void startPgBouncer() {
		if (PgBouncer.isInstalled()) {
			bouncer = PgBouncer.start(postgres.port(), 8);
		}
	}

	@AfterAll
	static void stopPgBouncer() {
		if (bouncer != null) {
			bouncer.close();
		}
	}

	@BeforeEach
	void table() {
		PgBouncer.assumeInstalled(); // each test skipped with the reason, not the class silently
		this.jdbc.execute("DROP TABLE IF EXISTS bounced");
		this.jdbc.execute("CREATE TABLE bounced (n int PRIMARY KEY, handled_at timestamptz NOT NULL DEFAULT clock_timestamp())");
	}

	private ApplicationContextRunner runner(String url, String... properties) {
		return new ApplicationContextRunner()
			.withConfiguration(AutoConfigurations.of(DataSourceAutoConfiguration.class,
					DataSourceTransactionManagerAutoConfiguration.class, PgQueueAutoConfiguration.class))
			.withPropertyValues("spring.datasource.url=" + url, "spring.datasource.username=postgres",
					"spring.datasource.hikari.maximum-pool-size=6", "pgqueue.queues.payments.mode=transactional",
					"pgqueue.queues.emails.mode=session")
			.withPropertyValues(properties);
	}

	@Test
	void sendsAndTransactionalListenersWorkThroughTransactionPooling() {
		runner(bouncer.transactionPoolUrl("prepareThreshold=0"), "pgqueue.listener.jdbc-url=" + postgres.jdbcUrl())
			.withUserConfiguration(Payments.class)
			.run((context) -> {
				assertThat(context).hasNotFailed();
				QueueOperations queue = context.getBean(QueueOperations.class);
				TransactionTemplate transactions = new TransactionTemplate(context.getBean(PlatformTransactionManager.class));
				Map<Integer, Long> sentAt = new ConcurrentHashMap<>();
				for (int i = 0; i < 200; i++) {
					int n = i;
					sentAt.put(n, System.currentTimeMillis());
					transactions.executeWithoutResult((status) -> queue.send("payments", n));
					Thread.sleep(5);
				}
				transactions.executeWithoutResult((status) -> queue.sendBatch("payments",
						IntStream.range(200, 300).boxed().toList()));
				await().atMost(Duration.ofSeconds(30)).until(() -> count("SELECT count(*) FROM bounced") == 300);
				assertThat(count("SELECT count(*) FROM pgqueue.message")).isZero();
				assertThat(count("SELECT count(*) FROM pg_locks WHERE locktype = 'advisory'")).isZero();
				assertThat(Payments.handledAt).hasSizeGreaterThanOrEqualTo(200);
				System.out.println("PGBOUNCER latency from the start of the send's transaction to the handler through transaction pooling, "
						+ "LISTEN direct: " + percentiles(Payments.handledAt, sentAt));
			});
	}

	@Test
	void sessionListenerBehindTransactionPoolingIsRefused() {
		runner(bouncer.transactionPoolUrl("prepareThreshold=0"))
			.withUserConfiguration(Emails.class)
			.run((context) -> {
				assertThat(context).hasFailed();
				assertThat(context.getStartupFailure()).rootCause()
					.hasMessageContaining("Listener 'emails-listener' cannot start: its connections go through a "
							+ "pooler in transaction pooling (PgBouncer pool_mode=transaction), but session mode holds "
							+ "session-level advisory locks across transactions on one server connection; give the "
							+ "listeners session pooling or a direct connection to PostgreSQL (pgqueue.listener.jdbc-url)");
			});
		assertThat(count("SELECT count(*) FROM pg_locks WHERE locktype = 'advisory'")).isZero();
	}

	@Test
	void transactionalListenerWhoseOwnConnectionsArePooledPerTransactionIsRefused() {
		runner(bouncer.transactionPoolUrl("prepareThreshold=0"))
			.withUserConfiguration(Payments.class)
			.run((context) -> {
				assertThat(context).hasFailed();
				assertThat(context.getStartupFailure()).rootCause()
					.hasMessageContaining("Listener 'payments-listener' cannot start")
					.hasMessageContaining("pgqueue.listener.jdbc-url");
			});
	}

	@Test
	void listenersOnSessionPoolingOfTheSamePgBouncerAreAccepted() {
		runner(bouncer.transactionPoolUrl("prepareThreshold=0"), "pgqueue.listener.jdbc-url=" + bouncer.sessionPoolUrl(""))
			.withUserConfiguration(Emails.class)
			.run((context) -> {
				assertThat(context).hasNotFailed();
				QueueOperations queue = context.getBean(QueueOperations.class);
				queue.sendBatch("emails", IntStream.range(0, 50).boxed().toList());
				await().atMost(Duration.ofSeconds(20)).until(() -> count("SELECT count(*) FROM bounced") == 50);
			});
	}

	@Test
	void everythingWorksThroughSessionPooling() {
		runner(bouncer.sessionPoolUrl(""))
			.withUserConfiguration(Emails.class, Payments.class)
			.run((context) -> {
				assertThat(context).hasNotFailed();
				QueueOperations queue = context.getBean(QueueOperations.class);
				TransactionTemplate transactions = new TransactionTemplate(context.getBean(PlatformTransactionManager.class));
				transactions.executeWithoutResult((status) -> {
					queue.sendBatch("emails", IntStream.range(0, 100).boxed().toList());
					queue.sendBatch("payments", IntStream.range(100, 200).boxed().toList());
				});
				for (int i = 200; i < 220; i++) {
					queue.send((i % 2 == 0) ? "emails" : "payments", i);
				}
				await().atMost(Duration.ofSeconds(30)).until(() -> count("SELECT count(*) FROM bounced") == 220);
				await().atMost(Duration.ofSeconds(5))
					.until(() -> count("SELECT count(*) FROM pg_locks WHERE locktype = 'advisory'") == 0);
				assertThat(count("SELECT count(*) FROM pgqueue.message")).isZero();
			});
	}

	/**
	 * pgjdbc prepares a statement on the server from its fifth execution on a connection
	 * ({@code prepareThreshold}, default 5); PgBouncer 1.18 does not carry prepared statements
	 * between server sessions, so a send whose transaction gets another server session than the
	 * one the statement was prepared on fails, and so does one whose statement name another
	 * client's statement took on that server session. With {@code prepareThreshold=0} it works.
	 */
	@Test
	void serverPreparedStatementsBreakUnderTransactionPoolingUnlessPrepareThresholdIsZero() {
		runner(bouncer.transactionPoolUrl(""), "spring.datasource.hikari.maximum-pool-size=4").run((context) -> {
			QueueOperations queue = context.getBean(QueueOperations.class);
			TransactionTemplate transactions = new TransactionTemplate(context.getBean(PlatformTransactionManager.class));
			// Prepared on the server from the fifth send; the sends whose transactions get another
			// server session find it missing there ("does not exist"), or find the name taken by
			// another client's statement ("already exists").
			assertThatThrownBy(() -> {
				for (int i = 0; i < 10; i++) {
					int n = i;
					transactions.executeWithoutResult((status) -> queue.send("emails", n));
					try (Connection other = holdAServerSession(bouncer.transactionPoolUrl(""))) {
						transactions.executeWithoutResult((status) -> queue.send("emails", 100 + n));
					}
				}
			}).hasStackTraceContaining("prepared statement \"S_");
		});
		runner(bouncer.transactionPoolUrl("prepareThreshold=0"), "spring.datasource.hikari.maximum-pool-size=4")
			.run((context) -> {
				QueueOperations queue = context.getBean(QueueOperations.class);
				TransactionTemplate transactions = new TransactionTemplate(
						context.getBean(PlatformTransactionManager.class));
				for (int i = 0; i < 10; i++) {
					int n = i;
					transactions.executeWithoutResult((status) -> queue.send("emails", 1000 + n));
					try (Connection other = holdAServerSession(bouncer.transactionPoolUrl(""))) {
						transactions.executeWithoutResult((status) -> queue.send("emails", 2000 + n));
					}
				}
				assertThat(count("SELECT count(*) FROM pgqueue.message WHERE queue = 'emails' AND payload::int >= 1000"))
					.isEqualTo(20);
			});
	}

	/**
	 * A connection in an open transaction: it keeps the server session PgBouncer gives it, which
	 * is the one freed last (PgBouncer reuses server connections last in, first out), so the
	 * application's next transaction gets another.
	 */
	private static Connection holdAServerSession(String url) throws SQLException {
		Connection connection = DriverManager.getConnection(url, "postgres", "");
		connection.setAutoCommit(false);
		try (Statement statement = connection.createStatement()) {
			statement.execute("SELECT 1");
		}
		return connection;
	}

	private long count(String sql) {
		Long n = this.jdbc.queryForObject(sql, Long.class);
		return (n != null) ? n : 0;
	}

	private static String percentiles(Map<Integer, Long> handledAt, Map<Integer, Long> sentAt) {
		List<Long> latencies = new ArrayList<>();
		handledAt.forEach((n, at) -> {
			Long sent = sentAt.get(n);
			if (sent != null) {
				latencies.add(at - sent);
			}
		});
		Collections.sort(latencies);
		if (latencies.isEmpty()) {
			return "none";
		}
		return "n=" + latencies.size() + " p50=" + latencies.get(latencies.size() / 2) + "ms p99="
				+ latencies.get((int) Math.min(latencies.size() - 1, Math.ceil(latencies.size() * 0.99) - 1)) + "ms max="
				+ latencies.get(latencies.size() - 1) + "ms";
	}

	@Configuration(proxyBeanMethods = false)
	static class Payments {

		static final Map<Integer, Long> handledAt = new ConcurrentHashMap<>();

		@Bean
		PaymentsListener paymentsListener(DataSource dataSource) {
			handledAt.clear();
			return new PaymentsListener(new JdbcTemplate(dataSource));
		}

	}

	static class PaymentsListener {

		private final JdbcTemplate jdbc;

		PaymentsListener(JdbcTemplate jdbc) {
			this.jdbc = jdbc;
		}

		@QueueListener(id = "payments-listener", queues = "payments", concurrency = "2")
		void pay(int n) {
			Payments.handledAt.put(n, System.currentTimeMillis());
			this.jdbc.update("INSERT INTO bounced (n) VALUES (?)", n);
		}

	}

	@Configuration(proxyBeanMethods = false)
	static class Emails {

		@Bean
		EmailsListener emailsListener(DataSource dataSource) {
			return new EmailsListener(new JdbcTemplate(dataSource));
		}

	}

	static class EmailsListener {

		private final JdbcTemplate jdbc;

		EmailsListener(JdbcTemplate jdbc) {
			this.jdbc = jdbc;
		}

		@QueueListener(id = "emails-listener", queues = "emails", concurrency = "2")
		void send(int n) {
			this.jdbc.update("INSERT INTO bounced (n) VALUES (?)", n);
		}

	}

}
