package io.github.pgqueue;

import java.time.Duration;
import java.util.List;

import javax.sql.DataSource;

import io.github.pgqueue.listener.ContainerProperties;
import io.github.pgqueue.listener.QueueListenerEndpoint;
import io.github.pgqueue.listener.QueueListenerEndpointRegistry;
import io.github.pgqueue.testing.EmbeddedPostgres;
import io.github.pgqueue.testing.PostgresExtension;
import org.assertj.core.api.SoftAssertions;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;

import org.springframework.jdbc.core.JdbcTemplate;
import org.springframework.jdbc.datasource.DriverManagerDataSource;
import org.springframework.jdbc.datasource.SingleConnectionDataSource;
import org.springframework.jdbc.support.JdbcTransactionManager;
import org.springframework.transaction.support.TransactionTemplate;

import static io.github.pgqueue.testing.Db.queryForLong;
import static io.github.pgqueue.testing.Db.terminateBackend;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatExceptionOfType;
import static org.assertj.core.api.Assertions.catchThrowable;
import static org.awaitility.Awaitility.await;

/**
 * Consumers of several database roles share the holding table: every role judges a session alive
 * or dead the same way, whatever it may read of other roles' sessions in {@code pg_stat_activity};
 * a session's row is written only by that session (and, for what a claim counted, by the claim);
 * and no role lists messages it may not consume. Real login roles without
 * {@code pg_read_all_stats}, granted with {@link QueueAdmin#grant}.
 */
@ExtendWith(PostgresExtension.class)
class ConsumerRolesIntegrationTests {

	private static final List<String> ROLES = List.of("holder", "bystander", "sender", "rival");

	private final EmbeddedPostgres postgres = EmbeddedPostgres.get();

	private final JdbcTemplate owner = new JdbcTemplate(this.postgres.dataSource());

	private final QueueTemplate template = QueueTemplate.builder(this.postgres.dataSource()).build();

	private final QueueAdmin admin = new QueueAdmin(this.template.context());

	private QueueListenerEndpointRegistry registry;

	@BeforeEach
	void roles() {
		for (String role : ROLES) {
			this.owner.execute("DO $$ BEGIN CREATE ROLE " + role + " LOGIN; EXCEPTION WHEN duplicate_object THEN NULL; END $$");
		}
		this.owner.update("DELETE FROM pgqueue.queue_access");
	}

	@AfterEach
	void stop() {
		if (this.registry != null) {
			this.registry.stop();
		}
		// A test that failed may have left a lease open: its session must not hold the next test's messages.
		this.owner.queryForList("SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE usename = ANY (?::name[])",
				Boolean.class, (Object) ROLES.toArray(new String[0]));
		this.owner.update("DELETE FROM pgqueue.queue_access");
	}

	/**
	 * Role B reads role A's sessions in pg_stat_activity without their start time, and cannot see
	 * A's messages: its receive and its poller's start must still take A's session for alive and
	 * leave its row, so that each time A dies holding the message its attempt is counted, and the
	 * message is dead-lettered once its attempts are used up.
	 */
	@Test
	void anotherRolesReceiveAndPollerStartLeaveALiveConsumersRowAndItsDeathsAreCounted() {
		this.admin.declare(QueueDefinition.of("ledger").withMaxAttempts(2));
		this.admin.grant("holder", "ledger", QueueAdmin.Access.CONSUME);
		this.admin.grant("bystander", "elsewhere", QueueAdmin.Access.CONSUME);
		long id = this.template.send("ledger", 1);
		QueueTemplate holder = QueueTemplate.builder(as("holder")).build();
		QueueTemplate bystander = QueueTemplate.builder(as("bystander")).build();

		Lease<Integer> first = holder.receive("ledger", Integer.class).orElseThrow();
		assertThat(first.message().attempt()).isEqualTo(1);
		int holderPid = holderPid();
		assertThat(bystander.receive("elsewhere", Integer.class)).isEmpty();
		this.registry = new QueueListenerEndpointRegistry(bystander.context(), as("bystander"), Duration.ofSeconds(5));
		this.registry.registerListenerEndpoint(QueueListenerEndpoint.builder("elsewhere")
				.listener(Integer.class, (message, ack) -> {
				})
				.containerProperties(ContainerProperties.builder(List.of("elsewhere"))
					.pollInterval(Duration.ofMillis(100))
					.build())
				.build());
		this.registry.start();
		await().atMost(Duration.ofSeconds(10)).until(() -> queryForLong("SELECT count(*) FROM pgqueue.holding h "
				+ "JOIN pg_stat_activity a ON a.pid = h.pid WHERE a.usename = 'bystander'") == 1);
		assertThat(this.owner.queryForList("SELECT pid FROM pgqueue.holding WHERE ? = ANY (ids)", Integer.class, id))
			.as("the holding row of the live session of another role").containsExactly(holderPid);

		die(holderPid, first);
		Lease<Integer> second = holder.receive("ledger", Integer.class).orElseThrow();
		assertThat(second.message().attempt()).as("the dead holder's attempt, counted").isEqualTo(2);
		assertThat(bystander.receive("elsewhere", Integer.class)).isEmpty();
		die(holderPid(), second);

		assertThat(holder.receive("ledger", Integer.class)).as("dead-lettered, its attempts used up").isEmpty();
		assertThat(this.owner.queryForObject("SELECT queue FROM pgqueue.message WHERE id = ?", String.class, id))
			.isEqualTo("ledger.dlq");
		assertThat(this.owner.queryForObject("SELECT last_error FROM pgqueue.message WHERE id = ?", String.class, id))
			.contains("Dead-lettered after 2 attempts");
		this.registry.stop();
		this.registry = null;
		assertThat(bystander.receive("elsewhere", Integer.class)).isEmpty();
		assertThat(queryForLong("SELECT count(*) FROM pgqueue.holding"))
			.as("the dead sessions' rows, cleaned up by a session of a role that cannot see their messages").isZero();
	}

	/**
	 * A role that may only send changes no other session's row, and cannot list in a row of its own
	 * messages it may not consume, nor ids not sent yet: once it has gone, the messages are taken at
	 * their first attempt.
	 */
	@Test
	void aSendOnlyRoleCannotWriteHoldingRowsNorMakeMessagesLookHeldByTheDead() {
		this.admin.grant("sender", "payroll", QueueAdmin.Access.SEND);
		List<Long> ids = this.template.sendBatch("payroll", List.of(1, 2, 3));
		Long[] listed = ids.toArray(new Long[0]);
		Long[] future = { ids.get(2) + 1000 };
		SoftAssertions softly = new SoftAssertions();
		SingleConnectionDataSource connection = new SingleConnectionDataSource(this.postgres.jdbcUrl(), "sender", "",
				true);
		try (var open = this.template.context().openSession()) {
			JdbcTemplate sender = new JdbcTemplate(connection);
			long others = queryForLong("SELECT count(*) FROM pgqueue.holding");
			softly.assertThat(others).as("the owner's live session").isEqualTo(1);
			softly.assertThat(sender.update("DELETE FROM pgqueue.holding")).as("rows deleted").isZero();
			softly.assertThat(sender.update("UPDATE pgqueue.holding SET ids = ?::bigint[]", (Object) listed))
				.as("rows updated").isZero();
			softly.assertThat(catchThrowable(() -> sender.update("INSERT INTO pgqueue.holding (pid, ids) "
					+ "VALUES (pg_backend_pid() + 1, '{}')")))
				.as("a row inserted for another backend").isNotNull();
			softly.assertThat(catchThrowable(() -> sender.update("INSERT INTO pgqueue.holding (pid, ids) "
					+ "VALUES (pg_backend_pid(), ?::bigint[])", (Object) listed)))
				.as("a row of its own listing messages it may not consume").isNotNull();
			softly.assertThat(catchThrowable(() -> sender.update("INSERT INTO pgqueue.holding (pid, ids) "
					+ "VALUES (pg_backend_pid(), ?::bigint[])", (Object) future)))
				.as("a row of its own listing an id not sent yet").isNotNull();
			TransactionTemplate unfinished = new TransactionTemplate(new JdbcTransactionManager(this.postgres.dataSource()));
			unfinished.executeWithoutResult((status) -> {
				Long[] sending = { this.template.send("payroll", 9) };
				softly.assertThat(catchThrowable(() -> sender.update("INSERT INTO pgqueue.holding (pid, ids) "
						+ "VALUES (pg_backend_pid(), ?::bigint[])", (Object) sending)))
					.as("a row of its own listing a message not committed yet").isNotNull();
				status.setRollbackOnly();
			});
			softly.assertThat(queryForLong("SELECT count(*) FROM pgqueue.holding")).as("holding rows").isEqualTo(others);
		}
		finally {
			connection.destroy();
		}
		softly.assertThat(queryForLong("SELECT count(*) FROM pgqueue.holding")).as("holding rows once it has gone").isZero();
		for (long id : ids) {
			try (Lease<Integer> lease = this.template.receive("payroll", Integer.class).orElseThrow()) {
				softly.assertThat(lease.message().attempt()).as("attempt of message %d", id).isEqualTo(1);
				lease.ack();
			}
		}
		softly.assertThat(this.template.send("payroll", 4)).as("a message sent after").isGreaterThan(ids.get(2));
		try (Lease<Integer> lease = this.template.receive("payroll", Integer.class).orElseThrow()) {
			softly.assertThat(lease.message().attempt()).as("its attempt").isEqualTo(1);
			lease.ack();
		}
		softly.assertAll();
	}

	/**
	 * A consumer of one queue can neither end, empty nor fill the row of a live session of another
	 * role, by hand or through pgqueue's functions: that session's death is still counted.
	 */
	@Test
	void aConsumerRoleCannotChangeAnotherSessionsRow() {
		this.admin.grant("holder", "ledger", QueueAdmin.Access.CONSUME);
		this.admin.grant("bystander", "elsewhere", QueueAdmin.Access.CONSUME);
		long id = this.template.send("ledger", 1);
		QueueTemplate holder = QueueTemplate.builder(as("holder")).build();
		Lease<Integer> lease = holder.receive("ledger", Integer.class).orElseThrow();
		long session = this.owner.queryForObject("SELECT session FROM pgqueue.holding WHERE ? = ANY (ids)", Long.class, id);
		JdbcTemplate bystander = new JdbcTemplate(as("bystander"));
		SoftAssertions softly = new SoftAssertions();
		softly.assertThat(bystander.update("UPDATE pgqueue.holding SET ids = '{}' WHERE session = ?", session))
			.as("the row emptied by hand").isZero();
		softly.assertThat(bystander.update("DELETE FROM pgqueue.holding WHERE session = ?", session))
			.as("the row deleted by hand").isZero();
		softly.assertThat(catchThrowable(() -> bystander.queryForObject("SELECT pgqueue.unlist(?::bigint[], current_user)",
				Integer.class, (Object) new Long[] { id })))
			.as("the message taken out of the row through pgqueue's function").isNotNull();
		softly.assertThat(this.owner.queryForList("SELECT ids::text FROM pgqueue.holding WHERE session = ?", String.class,
				session))
			.as("the live session's row").containsExactly("{" + id + "}");
		assertDeathCounted(holder, lease);
		softly.assertAll();
	}

	/**
	 * A consumer of the same queue cannot take a message out of the row of the live session that
	 * holds it: it does not hold the message itself.
	 */
	@Test
	void aConsumerOfTheSameQueueCannotTakeAMessageOutOfTheRowOfItsLiveHolder() {
		this.admin.grant("holder", "ledger", QueueAdmin.Access.CONSUME);
		this.admin.grant("rival", "ledger", QueueAdmin.Access.CONSUME);
		long id = this.template.send("ledger", 1);
		QueueTemplate holder = QueueTemplate.builder(as("holder")).build();
		Lease<Integer> lease = holder.receive("ledger", Integer.class).orElseThrow();
		JdbcTemplate rival = new JdbcTemplate(as("rival"));
		assertThat(catchThrowable(() -> rival.queryForObject("SELECT pgqueue.unlist(?::bigint[], current_user)",
				Integer.class, (Object) new Long[] { id })))
			.as("the message taken out of the live holder's row").isNotNull();
		assertDeathCounted(holder, lease);
	}

	/**
	 * pgqueue's functions that run as the owner name the catalogs they read in full: a role's
	 * temporary views of the same names change nothing (no session is taken for dead, no message
	 * listed that the role may not consume).
	 */
	@Test
	void temporaryViewsNamedAfterTheCatalogsDoNotMisleadPgqueuesFunctions() {
		this.admin.grant("holder", "ledger", QueueAdmin.Access.CONSUME);
		this.admin.grant("bystander", "elsewhere", QueueAdmin.Access.CONSUME);
		long id = this.template.send("ledger", 1);
		QueueTemplate holder = QueueTemplate.builder(as("holder")).build();
		Lease<Integer> lease = holder.receive("ledger", Integer.class).orElseThrow();
		this.template.send("elsewhere", 0);
		SingleConnectionDataSource connection = new SingleConnectionDataSource(this.postgres.jdbcUrl(), "bystander", "",
				true);
		SoftAssertions softly = new SoftAssertions();
		try {
			JdbcTemplate bystander = new JdbcTemplate(connection);
			bystander.execute("CREATE TEMPORARY VIEW pg_stat_activity AS SELECT * FROM pg_catalog.pg_stat_activity WHERE false");
			bystander.execute("CREATE TEMPORARY VIEW pg_class AS SELECT c.oid, r.oid AS relowner FROM pg_catalog.pg_class c, "
					+ "pg_catalog.pg_roles r WHERE r.rolname = current_user");
			bystander.execute("CREATE TEMPORARY VIEW pg_roles AS SELECT rolname, true AS rolbypassrls, true AS rolsuper "
					+ "FROM pg_catalog.pg_roles");
			softly.assertThat(QueueTemplate.builder(connection).build().receive("elsewhere", Integer.class))
				.as("a receive of the role, which opens its session").isPresent().get()
				.satisfies(Lease::ack);
			softly.assertThat(catchThrowable(() -> bystander.update("INSERT INTO pgqueue.holding (pid, ids) "
					+ "VALUES (pg_backend_pid(), ?::bigint[])", (Object) new Long[] { id })))
				.as("a row of its own listing a message it may not consume").isNotNull();
		}
		finally {
			connection.destroy();
		}
		softly.assertThat(this.owner.queryForList("SELECT ids::text FROM pgqueue.holding WHERE pid = ?", String.class,
				holderPid())).as("the live holder's row").containsExactly("{" + id + "}");
		assertDeathCounted(holder, lease);
		softly.assertAll();
	}

	/** A login cannot record another login's transaction as a removal's. */
	@Test
	void aLoginCannotRecordAnotherLoginsTransactionAsARemoval() {
		this.admin.grant("bystander", "elsewhere", QueueAdmin.Access.CONSUME);
		TransactionTemplate running = new TransactionTemplate(new JdbcTransactionManager(this.postgres.dataSource()));
		String xact = running.execute((status) -> {
			String own = this.owner.queryForObject("SELECT pg_current_xact_id()::text", String.class);
			JdbcTemplate bystander = new JdbcTemplate(as("bystander"));
			assertThat(catchThrowable(() -> bystander.queryForObject("SELECT pgqueue.record_removal(?::xid8)",
					Integer.class, own)))
				.as("another login's transaction recorded").hasStackTraceContaining("is not a running transaction of login");
			status.setRollbackOnly();
			return own;
		});
		assertThat(this.owner.queryForObject("SELECT count(*) FROM pgqueue.removal_xact WHERE xact = ?::xid8", Long.class,
				xact)).isZero();
	}

	/** Kills the session of role holder that holds {@code lease}: the next receive counts its lost attempt. */
	private void assertDeathCounted(QueueTemplate holder, Lease<Integer> lease) {
		die(holderPid(), lease);
		try (Lease<Integer> again = holder.receive("ledger", Integer.class).orElseThrow()) {
			assertThat(again.message().attempt()).as("the dead holder's attempt, counted").isEqualTo(2);
			again.ack();
		}
	}

	/** Terminates the backend of a session that holds a lease, and waits until it is gone. */
	private void die(int pid, Lease<?> lease) {
		terminateBackend(pid);
		assertThatExceptionOfType(LeaseLostException.class).isThrownBy(lease::ack);
	}

	/** The backend pid of the one session of role holder. */
	private int holderPid() {
		return this.owner.queryForObject("SELECT pid FROM pg_stat_activity WHERE usename = 'holder'", Integer.class);
	}

	private DataSource as(String role) {
		return new DriverManagerDataSource(this.postgres.jdbcUrl(), role, "");
	}

}
