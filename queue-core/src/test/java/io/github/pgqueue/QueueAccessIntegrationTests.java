package io.github.pgqueue;

import java.sql.Connection;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;

import javax.sql.DataSource;

import io.github.pgqueue.listener.ContainerProperties;
import io.github.pgqueue.listener.QueueListenerEndpoint;
import io.github.pgqueue.listener.QueueListenerEndpointRegistry;
import io.github.pgqueue.testing.EmbeddedPostgres;
import io.github.pgqueue.testing.PostgresExtension;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;

import org.springframework.jdbc.core.JdbcTemplate;
import org.springframework.jdbc.datasource.DriverManagerDataSource;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;
import static org.assertj.core.api.Assertions.assertThatExceptionOfType;
import static org.assertj.core.api.Assertions.assertThatIllegalArgumentException;

/**
 * Per-role access to queues, enforced by PostgreSQL: two real login roles, one granted access to
 * a queue and one not, through pgqueue and through plain SQL.
 */
@ExtendWith(PostgresExtension.class)
class QueueAccessIntegrationTests {

	private final EmbeddedPostgres postgres = EmbeddedPostgres.get();

	private final JdbcTemplate owner = new JdbcTemplate(this.postgres.dataSource());

	private final QueueAdmin admin = new QueueAdmin(QueueContext.of(this.postgres.dataSource()));

	@BeforeEach
	void roles() {
		for (String role : List.of("alice", "bob")) {
			this.owner.execute("DO $$ BEGIN CREATE ROLE " + role + " LOGIN; EXCEPTION WHEN duplicate_object THEN NULL; END $$");
		}
		this.owner.update("DELETE FROM pgqueue.queue_access");
		this.owner.execute("DO $$ BEGIN IF EXISTS (SELECT 1 FROM pg_roles WHERE rolname = 'carol') THEN "
				+ "DROP OWNED BY carol; DROP ROLE carol; END IF; END $$");
	}

	@Test
	void aRoleGrantedAQueueSendsAndConsumesItAndARoleWithoutTheGrantIsRefusedAndSeesNothing() {
		this.admin.grant("alice", "payroll", QueueAdmin.Access.SEND, QueueAdmin.Access.CONSUME);
		// A role granted nothing at all is held by its table privileges only (bob has none before
		// this); a grant on one queue restricts bob to the queues he is granted.
		assertThatExceptionOfType(RuntimeException.class)
			.isThrownBy(() -> QueueTemplate.builder(as("bob")).build().send("payroll", 1))
			.havingRootCause().withMessageContaining("permission denied");
		this.admin.grant("bob", "other", QueueAdmin.Access.SEND);
		QueueTemplate alice = QueueTemplate.builder(as("alice")).build();
		QueueTemplate bob = QueueTemplate.builder(as("bob")).build();

		long id = alice.send("payroll", 1200);
		assertThatExceptionOfType(RuntimeException.class).isThrownBy(() -> bob.send("payroll", 999))
			.havingRootCause().withMessageContaining("violates row-level security policy");
		assertThat(bob.receive("payroll", Integer.class)).as("bob gets nothing").isEmpty();
		assertThat(new JdbcTemplate(as("bob")).queryForObject(
				"SELECT count(*) FROM pgqueue.message WHERE queue = 'payroll'", Long.class))
			.as("nor does plain SQL as bob").isZero();
		assertThat(new JdbcTemplate(as("bob")).update("DELETE FROM pgqueue.message WHERE queue = 'payroll'")).isZero();

		try (Lease<Integer> lease = alice.receive("payroll", Integer.class).orElseThrow()) {
			assertThat(lease.message().id()).isEqualTo(id);
			lease.ack();
		}
		assertThat(this.owner.queryForObject("SELECT count(*) FROM pgqueue.message", Long.class)).isZero();
	}

	@Test
	void aSendOnlyRoleCannotTakeWhatItSentAndARevokedRoleLosesItsAccess() {
		this.admin.grant("alice", "audit", QueueAdmin.Access.SEND);
		QueueTemplate alice = QueueTemplate.builder(as("alice")).build();
		alice.send("audit", "entry");
		assertThat(alice.receive("audit", String.class)).as("send only: nothing to claim").isEmpty();
		assertThat(new JdbcTemplate(as("alice")).update("DELETE FROM pgqueue.message WHERE queue = 'audit'"))
			.as("nor to delete").isZero();

		this.admin.grant("alice", "audit", QueueAdmin.Access.CONSUME);
		this.admin.revoke("alice", "audit", QueueAdmin.Access.SEND);
		assertThatExceptionOfType(RuntimeException.class).isThrownBy(() -> alice.send("audit", "another"))
			.havingRootCause().withMessageContaining("violates row-level security policy");
		try (Lease<String> lease = alice.receive("audit", String.class).orElseThrow()) {
			lease.ack();
		}
		assertThatIllegalArgumentException().isThrownBy(() -> this.admin.grant("mallory", "audit", QueueAdmin.Access.SEND))
			.withMessageContaining("PostgreSQL role 'mallory' does not exist");
	}

	@Test
	void aConsumerRoleCanDeadLetterIntoTheDeadLetterQueueItWasGrantedWithTheQueue() {
		this.admin.grant("alice", "invoices", QueueAdmin.Access.CONSUME);
		this.owner.update("INSERT INTO pgqueue.message (queue, payload) VALUES ('invoices', '1')");
		QueueTemplate alice = QueueTemplate.builder(as("alice")).build();
		try (Lease<Integer> lease = alice.receive("invoices", Integer.class).orElseThrow()) {
			lease.reject("malformed invoice");
		}
		assertThat(this.owner.queryForObject("SELECT queue FROM pgqueue.message", String.class))
			.isEqualTo("invoices.dlq");
	}

	/**
	 * A restricted role's keyed sends to a queue with a deduplication window, and its acks and
	 * dead letters in a queue with a retention, work under row-level security; the archive and
	 * the kept keys of a queue are read by the roles that may read its messages, and only by them.
	 */
	@Test
	void aRestrictedRoleKeepsKeysAndArchivesInTheQueuesItWasGranted() {
		this.admin.declare(QueueDefinition.of("kept").withDeduplicationWindow(java.time.Duration.ofHours(1))
			.withRetention(java.time.Duration.ofDays(1)));
		this.admin.grant("alice", "kept", QueueAdmin.Access.SEND, QueueAdmin.Access.CONSUME);
		this.admin.grant("bob", "other", QueueAdmin.Access.SEND);
		QueueTemplate alice = QueueTemplate.builder(as("alice")).build();
		SendOptions key = SendOptions.builder().deduplicationKey("k").build();

		long id = alice.send("kept", 1, key);
		try (Lease<Integer> lease = alice.receive("kept", Integer.class).orElseThrow()) {
			lease.ack();
		}
		assertThat(alice.send("kept", 2, key)).as("kept by the window, read as alice").isEqualTo(id);
		alice.send("kept", 3);
		try (Lease<Integer> lease = alice.receive("kept", Integer.class).orElseThrow()) {
			lease.reject("no");
		}

		assertThat(new MessageArchive(QueueContext.of(as("alice"))).search(ArchiveSearch.all().inQueue("kept")))
			.extracting(ArchivedMessage::outcome)
			.containsExactlyInAnyOrder(ArchivedMessage.Outcome.ACKED, ArchivedMessage.Outcome.DEAD_LETTERED);
		assertThat(new MessageArchive(QueueContext.of(as("bob"))).search(ArchiveSearch.all())).as("bob reads none")
			.isEmpty();
		assertThat(new JdbcTemplate(as("bob")).queryForObject("SELECT count(*) FROM pgqueue.deduplication_key",
				Long.class)).isZero();
	}

	/**
	 * A restricted role's publishes to an exchange bound to a queue with a deduplication window are
	 * held to the window as its sends are: a key kept after its message was acked is refused.
	 */
	@Test
	void aRestrictedRolesPublishesAreHeldToTheWindow() {
		this.admin.declare(QueueDefinition.of("kept-pub").withDeduplicationWindow(java.time.Duration.ofHours(1)));
		this.admin.declare(new ExchangeDefinition("kept-ex", ExchangeDefinition.Type.FANOUT,
				List.of(new ExchangeDefinition.Binding("kept-pub", null))));
		this.admin.grant("alice", "kept-pub", QueueAdmin.Access.SEND, QueueAdmin.Access.CONSUME);
		QueueTemplate alice = QueueTemplate.builder(as("alice")).build();
		SendOptions key = SendOptions.builder().deduplicationKey("k").build();

		assertThat(alice.publish("kept-ex", "", 1, key)).isEqualTo(1);
		assertThat(alice.publish("kept-ex", "", 2, key)).as("the key is queued").isZero();
		try (Lease<Integer> lease = alice.receive("kept-pub", Integer.class).orElseThrow()) {
			lease.ack();
		}
		assertThat(alice.publish("kept-ex", "", 3, key)).as("the key is kept by the window").isZero();
		assertThat(this.owner.queryForObject("SELECT count(*) FROM pgqueue.message WHERE queue = 'kept-pub'",
				Long.class)).isZero();
		assertThat(this.owner.queryForObject("SELECT count(*) FROM pgqueue.deduplication_key WHERE queue = 'kept-pub'",
				Long.class)).isOne();
	}

	/**
	 * Dropping a role that was granted queue access (DROP OWNED BY, then DROP ROLE, as PostgreSQL
	 * requires) leaves every other role's access as it was; a new role of the same name gets
	 * nothing of the dropped one's.
	 */
	@Test
	void aDroppedRoleLeavesOtherRolesAccessAsItWasAndANewRoleOfItsNameGetsNoneOfIt() {
		this.owner.execute("CREATE ROLE carol LOGIN");
		this.admin.grant("carol", "ledger", QueueAdmin.Access.SEND);
		this.admin.grant("alice", "payroll", QueueAdmin.Access.SEND, QueueAdmin.Access.CONSUME);
		this.owner.execute("DROP OWNED BY carol");
		this.owner.execute("DROP ROLE carol");

		QueueTemplate alice = QueueTemplate.builder(as("alice")).build();
		long id = alice.send("payroll", 1200);
		try (Lease<Integer> lease = alice.receive("payroll", Integer.class).orElseThrow()) {
			assertThat(lease.message().id()).isEqualTo(id);
			lease.ack();
		}
		assertThat(this.owner.queryForObject("SELECT count(*) FROM pgqueue.message WHERE queue = 'payroll'", Long.class))
			.isZero();

		this.owner.execute("CREATE ROLE carol LOGIN");
		this.admin.grant("carol", "other", QueueAdmin.Access.SEND);
		QueueTemplate carol = QueueTemplate.builder(as("carol")).build();
		carol.send("other", 1);
		assertThatExceptionOfType(RuntimeException.class).as("the dropped carol's grant is not the new carol's")
			.isThrownBy(() -> carol.send("ledger", 2))
			.havingRootCause().withMessageContaining("violates row-level security policy");
	}

	/**
	 * A revoke deletes the rows that no longer grant anything (the role's and those of roles that
	 * were dropped) but the last one of a role, which keeps it held to its grants: a role whose
	 * every grant was revoked may use no queue, not every queue.
	 */
	@Test
	void aRevokeRemovesRowsThatNoLongerGrantAnythingButKeepsTheRoleRestricted() {
		this.owner.execute("CREATE ROLE carol LOGIN");
		this.admin.grant("carol", "ledger", QueueAdmin.Access.SEND);
		this.owner.execute("DROP OWNED BY carol");
		this.owner.execute("DROP ROLE carol");
		this.admin.grant("alice", "a", QueueAdmin.Access.SEND);
		this.admin.grant("alice", "b", QueueAdmin.Access.SEND, QueueAdmin.Access.CONSUME);

		this.admin.revoke("alice", "a", QueueAdmin.Access.SEND);
		assertThat(this.owner.queryForList("SELECT queue || ':' || role || ':' || send || ':' || consume "
				+ "FROM pgqueue.queue_access ORDER BY queue", String.class))
			.as("what is left: alice's grants on b and on b's dead-letter queue")
			.containsExactly("b:alice:true:true", "b.dlq:alice:true:false");

		this.admin.revoke("alice", "b", QueueAdmin.Access.SEND, QueueAdmin.Access.CONSUME);
		this.admin.revoke("alice", "b.dlq", QueueAdmin.Access.SEND);
		assertThat(this.owner.queryForObject("SELECT count(*) FROM pgqueue.queue_access", Long.class))
			.as("one row that grants nothing keeps alice restricted").isEqualTo(1);
		QueueTemplate alice = QueueTemplate.builder(as("alice")).build();
		for (String queue : List.of("a", "b", "c")) {
			assertThatExceptionOfType(RuntimeException.class).isThrownBy(() -> alice.send(queue, 1))
				.havingRootCause().withMessageContaining("violates row-level security policy");
		}
	}

	/**
	 * Four pollers of a restricted role, in each mode, drain 2 000 messages of the queue it was
	 * granted among 500 of another queue: each of its messages is handled exactly once, and the
	 * other queue's are not touched.
	 */
	@ParameterizedTest
	@EnumSource(ConsumptionMode.class)
	void aRestrictedRolesPollersHandleEachOfItsMessagesOnce(ConsumptionMode mode) {
		this.admin.grant("alice", "bulk", QueueAdmin.Access.SEND, QueueAdmin.Access.CONSUME);
		this.owner.update("INSERT INTO pgqueue.message (queue, payload) SELECT q, to_jsonb(n) "
				+ "FROM unnest(ARRAY['bulk', 'elsewhere']) AS q, generate_series(1, 2000) AS n "
				+ "WHERE q = 'bulk' OR n <= 500");
		DataSource alice = as("alice");
		Map<Integer, Integer> handled = new ConcurrentHashMap<>();
		QueueListenerEndpointRegistry registry = new QueueListenerEndpointRegistry(QueueContext.of(alice), alice,
				Duration.ofSeconds(5));
		registry.registerListenerEndpoint(QueueListenerEndpoint.builder("alice-bulk")
			.listener(Integer.class, (message, ack) -> handled.merge((Integer) message.payload(), 1, Integer::sum))
			.containerProperties(ContainerProperties.builder(List.of("bulk"))
				.concurrency(4)
				.batchSize(10)
				.pollInterval(Duration.ofMillis(100))
				.mode(mode)
				.build())
			.build());
		registry.start();
		try {
			await().atMost(Duration.ofSeconds(60)).until(() -> this.owner.queryForObject(
					"SELECT count(*) FROM pgqueue.message WHERE queue = 'bulk'", Long.class) == 0);
		}
		finally {
			registry.stop();
			this.owner.update("DELETE FROM pgqueue.message WHERE queue IN ('bulk', 'elsewhere')");
		}
		assertThat(handled).as("each of alice's messages once").hasSize(2000)
			.allSatisfy((payload, times) -> assertThat(times).as("message %d", payload).isOne());
	}

	/**
	 * Whether a restricted role may use a queue is decided once per statement, not once per row: a
	 * role's statements over many messages cost about what the tables' owner's do. Counted as calls
	 * of pgqueue's functions, statement by statement, in alice's transaction: it reads 200 of her
	 * messages among 200 of another queue, sends 100 in one statement, and takes and deletes her 300.
	 */
	@Test
	void aRestrictedRolesAccessIsDecidedOncePerStatementNotOncePerRow() throws SQLException {
		this.admin.grant("alice", "bulk", QueueAdmin.Access.SEND, QueueAdmin.Access.CONSUME);
		this.owner.update("INSERT INTO pgqueue.message (queue, payload) SELECT q, '1' "
				+ "FROM unnest(ARRAY['bulk', 'elsewhere']) AS q, generate_series(1, 200)");
		this.owner.execute("ALTER ROLE alice SET track_functions = 'all'");
		try (Connection connection = as("alice").getConnection(); Statement statement = connection.createStatement()) {
			connection.setAutoCommit(false);
			assertThat(count(statement, "SELECT (current_setting('track_functions') = 'all')::int"))
				.as("function calls are counted").isOne();
			long calls = functionCalls(statement);

			assertThat(count(statement, "SELECT count(*) FROM pgqueue.message")).as("alice sees her queue's").isEqualTo(200);
			calls = assertFewCalls(statement, calls, "a read of 400 rows");
			assertThat(statement.executeUpdate("INSERT INTO pgqueue.message (queue, payload) "
					+ "SELECT 'bulk', '2' FROM generate_series(1, 100)")).isEqualTo(100);
			calls = assertFewCalls(statement, calls, "a send of 100 rows");
			assertThat(statement.executeUpdate("DELETE FROM pgqueue.message WHERE id IN "
					+ "(SELECT id FROM pgqueue.message ORDER BY id FOR UPDATE SKIP LOCKED)")).isEqualTo(300);
			assertFewCalls(statement, calls, "a take and delete of 300 rows");
			connection.rollback();
		}
		finally {
			this.owner.execute("ALTER ROLE alice RESET track_functions");
			this.owner.update("DELETE FROM pgqueue.message WHERE queue IN ('bulk', 'elsewhere')");
		}
	}

	/**
	 * Asserts that the last statement called pgqueue's functions at least once (the policies ask
	 * through them, and their calls are counted) and at most a few times; the calls so far.
	 */
	private static long assertFewCalls(Statement statement, long before, String what) throws SQLException {
		long now = functionCalls(statement);
		assertThat(now - before).as("calls of pgqueue's functions for %s: a few per statement, not one per row", what)
			.isBetween(1L, 5L);
		return now;
	}

	/** The calls of pgqueue's functions in the current transaction so far. */
	private static long functionCalls(Statement statement) throws SQLException {
		return count(statement, "SELECT COALESCE(sum(pg_stat_get_xact_function_calls(p.oid)), 0) "
				+ "FROM pg_catalog.pg_proc p WHERE p.pronamespace = 'pgqueue'::regnamespace");
	}

	private static long count(Statement statement, String sql) throws SQLException {
		try (ResultSet rs = statement.executeQuery(sql)) {
			rs.next();
			return rs.getLong(1);
		}
	}

	private DataSource as(String role) {
		return new DriverManagerDataSource(this.postgres.jdbcUrl(), role, "");
	}

}
