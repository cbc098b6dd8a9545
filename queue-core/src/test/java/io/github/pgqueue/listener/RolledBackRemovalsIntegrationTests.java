package io.github.pgqueue.listener;

import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;

import io.github.pgqueue.CancelResult;
import io.github.pgqueue.ConsumptionMode;
import io.github.pgqueue.QueueAdmin;
import io.github.pgqueue.QueueDefinition;
import io.github.pgqueue.QueueTemplate;
import io.github.pgqueue.testing.EmbeddedPostgres;
import io.github.pgqueue.testing.ListenerFixture;
import io.github.pgqueue.testing.PostgresExtension;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;
import org.junit.jupiter.api.extension.RegisterExtension;

import org.springframework.jdbc.core.JdbcTemplate;
import org.springframework.jdbc.support.JdbcTransactionManager;
import org.springframework.transaction.support.TransactionTemplate;

import static io.github.pgqueue.testing.ListenerFixture.endpoint;
import static io.github.pgqueue.testing.ListenerFixture.properties;
import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

/**
 * A cancel, purge or redrive (of a queue's dead letters or of chosen ones) made in a transaction that rolls back leaves its aborted transaction
 * in the lock marker of the rows it touched, as a transactional consumer that died does; only the
 * consumer's is a lost attempt.
 */
@ExtendWith(PostgresExtension.class)
class RolledBackRemovalsIntegrationTests {

	private final EmbeddedPostgres postgres = EmbeddedPostgres.get();

	private final JdbcTemplate jdbc = new JdbcTemplate(this.postgres.dataSource());

	@RegisterExtension
	final ListenerFixture listeners = ListenerFixture.pools("undone-app", 8, "undone-consumers", 8);

	private final QueueTemplate template = this.listeners.template();

	private final QueueAdmin admin = this.listeners.admin();

	private final TransactionTemplate transactions = new TransactionTemplate(
			new JdbcTransactionManager(this.listeners.app()));

	@Test
	void aRolledBackCancelPurgeOrRedriveIsNotAnAttemptOfATransactionalConsumer() {
		List<String> queues = List.of("undone-cancel", "undone-purge", "undone-redrive", "undone-redrive.dlq",
				"undone-chosen", "undone-chosen.dlq");
		for (String queue : queues) {
			this.admin.declare(QueueDefinition.of(queue).withMaxAttempts(1));
		}
		long cancelled = this.template.send("undone-cancel", 1);
		long purged = this.template.send("undone-purge", 2);
		long redriven = this.jdbc.queryForObject("INSERT INTO pgqueue.message (queue, payload, headers) VALUES "
				+ "('undone-redrive.dlq', '3', '{\"pgqueue-dead-lettered-from\": \"undone-redrive\"}') RETURNING id",
				Long.class);
		long chosen = this.jdbc.queryForObject("INSERT INTO pgqueue.message (queue, payload, headers) VALUES "
				+ "('undone-chosen.dlq', '4', '{\"pgqueue-dead-lettered-from\": \"undone-chosen\"}') RETURNING id",
				Long.class);

		this.transactions.executeWithoutResult((status) -> {
			assertThat(this.template.cancel("undone-cancel", cancelled)).isEqualTo(CancelResult.REMOVED);
			assertThat(this.admin.purge("undone-purge", QueueAdmin.Purge.ALL)).isEqualTo(1);
			assertThat(this.admin.redrive("undone-redrive", 10)).isEqualTo(1);
			assertThat(this.admin.redrive(List.of(chosen))).containsExactly(chosen);
			status.setRollbackOnly();
		});
		assertThat(this.jdbc.queryForObject("SELECT count(*) FROM pgqueue.message WHERE xmax <> '0'::xid",
				Long.class)).as("rows whose lock marker names the rolled-back transaction").isEqualTo(4);

		Map<Long, Integer> attempts = new ConcurrentHashMap<>();
		this.listeners.start(endpoint("undone", Integer.class,
				(message, ack) -> attempts.put(message.id(), message.attempt()),
				properties(queues).mode(ConsumptionMode.TRANSACTIONAL)));

		await().atMost(Duration.ofSeconds(20)).until(() -> this.jdbc.queryForObject(
				"SELECT count(*) FROM pgqueue.message WHERE queue = ANY (?::text[]) AND visible_at <= now()", Long.class,
				(Object) queues.toArray(new String[0])) == 0);
		assertThat(attempts).as("each message handled at its first attempt")
			.containsOnly(Map.entry(cancelled, 1), Map.entry(purged, 1), Map.entry(redriven, 1), Map.entry(chosen, 1));
		assertThat(this.jdbc.queryForList("SELECT id || ' in ' || queue || ': ' || coalesce(last_error, '') "
				+ "FROM pgqueue.message", String.class)).as("messages dead-lettered or parked").isEmpty();
	}

	/**
	 * A handler's removal runs in its consumer's transaction, so it is not recorded: a consumer that
	 * cancels a message and then dies is counted each time, and its message dead-lettered once its
	 * attempts are used up.
	 */
	@Test
	void aTransactionalConsumerThatCancelsAMessageAndDiesIsCountedEachTime() {
		this.admin.declare(QueueDefinition.of("cancelling").withMaxAttempts(2));
		this.admin.declare(QueueDefinition.of("reminders"));
		long poison = this.template.send("cancelling", 1);
		List<Long> reminders = this.template.sendBatch("reminders", List.of(1, 2, 3));
		Map<Integer, Integer> deaths = new ConcurrentHashMap<>();
		JdbcTemplate appJdbc = new JdbcTemplate(this.listeners.app());
		this.listeners.start(endpoint("cancelling", Integer.class, (message, ack) -> {
			int attempt = message.attempt();
			deaths.merge(attempt, 1, Integer::sum);
			assertThat(this.template.cancel("reminders", reminders.get(attempt - 1))).isEqualTo(CancelResult.REMOVED);
			appJdbc.queryForObject("SELECT pg_terminate_backend(pg_backend_pid())", Boolean.class);
		}, properties("cancelling").mode(ConsumptionMode.TRANSACTIONAL)));

		await().atMost(Duration.ofSeconds(30)).until(() -> "cancelling.dlq".equals(this.jdbc.queryForObject(
				"SELECT queue FROM pgqueue.message WHERE id = ?", String.class, poison)));
		assertThat(deaths).as("handler runs per attempt").containsOnly(Map.entry(1, 1), Map.entry(2, 1));
		assertThat(this.jdbc.queryForObject("SELECT count(*) FROM pgqueue.message WHERE queue = 'reminders'", Long.class))
			.as("reminders left: the cancels died with their consumer").isEqualTo(3);
	}

	/**
	 * A transactional consumer whose handler kills its own connection (as a dying JVM does) is
	 * counted each time all the same, and the message is dead-lettered once its attempts are used up.
	 */
	@Test
	void aTransactionalConsumerThatDiesIsCountedEachTime() {
		this.admin.declare(QueueDefinition.of("deadly").withMaxAttempts(3));
		long poison = this.template.send("deadly", 1);
		Map<Integer, Integer> deaths = new ConcurrentHashMap<>();
		JdbcTemplate appJdbc = new JdbcTemplate(this.listeners.app());
		this.listeners.start(endpoint("deadly", Integer.class, (message, ack) -> {
			deaths.merge(message.attempt(), 1, Integer::sum);
			appJdbc.queryForObject("SELECT pg_terminate_backend(pg_backend_pid())", Boolean.class);
		}, properties("deadly").mode(ConsumptionMode.TRANSACTIONAL)));

		await().atMost(Duration.ofSeconds(30)).until(() -> "deadly.dlq".equals(this.jdbc.queryForObject(
				"SELECT queue FROM pgqueue.message WHERE id = ?", String.class, poison)));
		assertThat(deaths).as("handler runs per attempt").containsOnly(Map.entry(1, 1), Map.entry(2, 1), Map.entry(3, 1));
		assertThat(this.jdbc.queryForObject("SELECT last_error FROM pgqueue.message WHERE id = ?", String.class, poison))
			.contains("Dead-lettered after 3 attempts");
	}

}
