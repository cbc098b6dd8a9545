package io.github.pgqueue.listener;

import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.stream.IntStream;

import javax.sql.DataSource;

import io.github.pgqueue.AckMode;
import io.github.pgqueue.ConsumptionMode;
import io.github.pgqueue.ContextInternals;
import io.github.pgqueue.Lease;
import io.github.pgqueue.QueueAdmin;
import io.github.pgqueue.QueueDefinition;
import io.github.pgqueue.QueueTemplate;
import io.github.pgqueue.testing.EmbeddedPostgres;
import io.github.pgqueue.testing.ListenerFixture;
import io.github.pgqueue.testing.PostgresExtension;
import io.github.pgqueue.testing.TransactionalClaims;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;
import org.junit.jupiter.api.extension.RegisterExtension;

import org.springframework.jdbc.core.JdbcTemplate;
import org.springframework.jdbc.support.JdbcTransactionManager;

import static io.github.pgqueue.testing.Db.advisoryLocks;
import static io.github.pgqueue.testing.Db.count;
import static io.github.pgqueue.testing.Db.lastError;
import static io.github.pgqueue.testing.Db.queueOf;
import static io.github.pgqueue.testing.ListenerFixture.properties;
import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

/**
 * Transactional mode on real PostgreSQL: the handler's writes and the message's removal commit
 * together; a failure rolls back only its own message's writes; a consumer that dies writes
 * nothing, yet its attempt is counted before the message runs again.
 */
@ExtendWith(PostgresExtension.class)
class TransactionalModeIntegrationTests {

	private final EmbeddedPostgres postgres = EmbeddedPostgres.get();

	private final JdbcTemplate jdbc = new JdbcTemplate(this.postgres.dataSource());

	@RegisterExtension
	final ListenerFixture listeners = ListenerFixture.pools("tx-app", 12, "tx-consumers", 12);

	/** The application's DataSource: handlers write through it, in the listener's transaction. */
	private final DataSource app = this.listeners.app();

	private final JdbcTemplate appJdbc = new JdbcTemplate(this.app);

	private final QueueTemplate template = this.listeners.template();

	private final QueueAdmin admin = this.listeners.admin();

	@BeforeEach
	void effects() {
		this.jdbc.execute("DROP TABLE IF EXISTS effect");
		this.jdbc.execute("CREATE TABLE effect (message_id bigint PRIMARY KEY, attempt int NOT NULL)");
	}

	@Test
	void everyMessageTakesEffectExactlyOnceUnderConcurrentConsumers() {
		this.admin.declare(QueueDefinition.of("orders"));
		int total = 6000;
		List<Integer> payloads = IntStream.range(0, total).boxed().toList();
		for (int i = 0; i < total; i += 1000) {
			this.template.sendBatch("orders", payloads.subList(i, i + 1000));
		}
		AtomicInteger invocations = new AtomicInteger();
		QueueMessageListener listener = (message, ack) -> {
			invocations.incrementAndGet();
			this.appJdbc.update("INSERT INTO effect (message_id, attempt) VALUES (?, ?)", message.id(),
					message.attempt());
		};
		this.listeners.start(endpoint("orders-a", "orders", 4, AckMode.AUTO, listener, 10),
				endpoint("orders-b", "orders", 4, AckMode.AUTO, listener, 25));

		await().atMost(Duration.ofSeconds(60)).until(() -> count("orders") == 0);
		assertThat(this.jdbc.queryForObject("SELECT count(*) FROM effect", Long.class)).isEqualTo(total);
		assertThat(invocations.get()).as("each handler ran once: no message was handed out twice").isEqualTo(total);
		assertThat(this.jdbc.queryForObject("SELECT max(attempt) FROM effect", Integer.class)).isEqualTo(1);
		await().atMost(Duration.ofSeconds(5)).until(() -> advisoryLocks() == 0);
	}

	@Test
	void failuresSplitBatchesWithoutLosingOrDoublingAnEffectUnderConcurrentConsumers() {
		this.admin.declare(QueueDefinition.of("ledger").withMaxAttempts(5)
			.withBackoff(Duration.ofMillis(10), 1.0, Duration.ofMillis(10)));
		int total = 2000;
		this.template.sendBatch("ledger", IntStream.range(0, total).boxed().toList());
		Map<Long, AtomicInteger> runs = new ConcurrentHashMap<>();
		QueueMessageListener listener = (message, ack) -> {
			int run = runs.computeIfAbsent(message.id(), (id) -> new AtomicInteger()).incrementAndGet();
			// The effect is written before the failure: a split that kept a failed run's write, or
			// lost a neighbour's, shows in the table.
			this.appJdbc.update("INSERT INTO effect (message_id, attempt) VALUES (?, ?)", message.id(),
					message.attempt());
			if ((Integer) message.payload() % 7 == 0 && run == 1) {
				throw new IllegalStateException("first run of a seventh message");
			}
		};
		this.listeners.start(endpoint("ledger-a", "ledger", 4, AckMode.AUTO, listener, 10),
				endpoint("ledger-b", "ledger", 4, AckMode.AUTO, listener, 25));

		await().atMost(Duration.ofSeconds(60)).until(() -> count("ledger") == 0);
		assertThat(this.jdbc.queryForObject("SELECT count(*) FROM effect", Long.class)).isEqualTo(total);
		assertThat(count("ledger.dlq")).isZero();
		assertThat(this.jdbc.queryForObject("SELECT count(*) FROM effect WHERE attempt = 2", Long.class))
			.as("each seventh message took effect on its second attempt, the others on their first")
			.isEqualTo((total + 6) / 7);
		assertThat(this.jdbc.queryForObject("SELECT max(attempt) FROM effect", Integer.class)).isEqualTo(2);
		await().atMost(Duration.ofSeconds(5)).until(() -> advisoryLocks() == 0);
	}

	@Test
	void aFailingHandlerRollsBackOnlyItsOwnWritesAndItsAttemptIsWritten() {
		this.admin.declare(QueueDefinition.of("ledger").withMaxAttempts(3)
			.withBackoff(Duration.ofMillis(20), 1.0, Duration.ofMillis(20)));
		List<Long> ids = this.template.sendBatch("ledger", List.of(1, 2, 3, 4, 5, 6));
		long poison = ids.get(2);
		Map<Integer, AtomicInteger> handled = new ConcurrentHashMap<>();
		this.listeners.start(endpoint("ledger", "ledger", 1, AckMode.AUTO, (message, ack) -> {
			int n = (Integer) message.payload();
			int run = handled.computeIfAbsent(n, (k) -> new AtomicInteger()).incrementAndGet();
			this.appJdbc.update("INSERT INTO effect (message_id, attempt) VALUES (?, ?)", message.id(),
					message.attempt());
			if (n == 3 || (n == 5 && run == 1)) {
				throw new IllegalStateException("ledger closed");
			}
		}, 6));

		await().atMost(Duration.ofSeconds(20)).until(() -> "ledger.dlq".equals(queueOf(poison)));
		await().atMost(Duration.ofSeconds(10)).until(() -> count("ledger") == 0);
		assertThat(this.jdbc.queryForList("SELECT message_id FROM effect ORDER BY message_id", Long.class))
			.as("the neighbours' writes committed once, the failing handler's never")
			.containsExactly(ids.get(0), ids.get(1), ids.get(3), ids.get(4), ids.get(5));
		assertThat(handled.get(3)).hasValue(3);
		assertThat(handled.get(1)).as("ran before the first failure without a savepoint: once more").hasValue(2);
		assertThat(handled.get(2)).as("ran before the first failure without a savepoint: once more").hasValue(2);
		assertThat(handled.get(4)).as("after a failure, each handler has a savepoint: once").hasValue(1);
		assertThat(handled.get(5)).as("failed once under its savepoint, then its retry").hasValue(2);
		assertThat(handled.get(6)).as("after a failure, each handler has a savepoint: once").hasValue(1);
		assertThat(this.jdbc.queryForObject("SELECT attempt FROM effect WHERE message_id = ?", Integer.class,
				ids.get(4)))
			.isEqualTo(2);
		assertThat(this.jdbc.queryForMap("SELECT headers->>'pgqueue-dead-lettered-attempts' AS attempts, last_error "
				+ "FROM pgqueue.message WHERE id = ?", poison))
			.containsEntry("attempts", "3");
		assertThat(lastError(poison)).contains("ledger closed");
		await().atMost(Duration.ofSeconds(5)).until(() -> advisoryLocks() == 0);
	}

	@Test
	void aTransactionManagerThatAllowsNoNestedTransactionsStillGetsASavepointPerMessage() {
		JdbcTransactionManager noSavepoints = new JdbcTransactionManager(this.app);
		noSavepoints.setNestedTransactionAllowed(false);
		this.admin.declare(QueueDefinition.of("journal").withMaxAttempts(3)
			.withBackoff(Duration.ofMillis(20), 1.0, Duration.ofMillis(20)));
		List<Long> ids = this.template.sendBatch("journal", List.of(1, 2, 3, 4, 5));
		long poison = ids.get(2);
		Map<Integer, AtomicInteger> handled = new ConcurrentHashMap<>();
		this.listeners.registry().setTransactionManager(noSavepoints);
		this.listeners.start(endpoint("journal", "journal", 2, AckMode.AUTO, (message, ack) -> {
			int n = (Integer) message.payload();
			handled.computeIfAbsent(n, (k) -> new AtomicInteger()).incrementAndGet();
			this.appJdbc.update("INSERT INTO effect (message_id, attempt) VALUES (?, ?)", message.id(),
					message.attempt());
			if (n == 3) {
				throw new IllegalStateException("journal closed");
			}
		}, 5));

		await().atMost(Duration.ofSeconds(20)).until(() -> "journal.dlq".equals(queueOf(poison)));
		await().atMost(Duration.ofSeconds(10)).until(() -> count("journal") == 0);
		assertThat(this.jdbc.queryForList("SELECT message_id FROM effect ORDER BY message_id", Long.class))
			.containsExactly(ids.get(0), ids.get(1), ids.get(3), ids.get(4));
		assertThat(handled.get(3)).as("its 3 attempts").hasValue(3);
		for (int n : new int[] { 1, 2, 4, 5 }) {
			// Handlers that ran before the first failure without a savepoint run once more.
			assertThat(handled.get(n).get()).as("neighbour %d", n).isBetween(1, 2);
		}
		assertThat(lastError(poison))
			.contains("Failed 3 of 3 attempts; last error: java.lang.IllegalStateException: journal closed");
		await().atMost(Duration.ofSeconds(5)).until(() -> advisoryLocks() == 0);
	}

	@Test
	void aConsumerThatDiesMidHandlerWritesNothingAndItsAttemptStillCounts() {
		this.admin.declare(QueueDefinition.of("fragile").withMaxAttempts(5));
		long id = this.template.send("fragile", 1);
		List<Integer> attempts = new java.util.concurrent.CopyOnWriteArrayList<>();
		this.listeners.start(endpoint("fragile", "fragile", 1, AckMode.AUTO, (message, ack) -> {
			attempts.add(message.attempt());
			this.appJdbc.update("INSERT INTO effect (message_id, attempt) VALUES (?, ?)", message.id(),
					message.attempt());
			if (message.attempt() < 3) {
				// The consumer dies: its connection is gone before it can commit.
				this.appJdbc.queryForObject("SELECT pg_terminate_backend(pg_backend_pid())", Boolean.class);
			}
		}, 10));

		await().atMost(Duration.ofSeconds(30)).until(() -> count("fragile") == 0);
		assertThat(attempts).as("each death counted as an attempt").containsExactly(1, 2, 3);
		assertThat(this.jdbc.queryForList("SELECT attempt FROM effect WHERE message_id = ?", Integer.class, id))
			.as("only the attempt that committed left its write").containsExactly(3);
		await().atMost(Duration.ofSeconds(5)).until(() -> advisoryLocks() == 0);
	}

	@Test
	void aMessageThatKillsItsConsumerEveryTimeIsDeadLettered() {
		this.admin.declare(QueueDefinition.of("deadly").withMaxAttempts(3));
		List<Long> ids = this.template.sendBatch("deadly", List.of(1, 2, 3, 4));
		long poison = ids.get(1);
		Map<Integer, AtomicInteger> handled = new ConcurrentHashMap<>();
		this.listeners.start(endpoint("deadly", "deadly", 2, AckMode.AUTO, (message, ack) -> {
			int n = (Integer) message.payload();
			handled.computeIfAbsent(n, (k) -> new AtomicInteger()).incrementAndGet();
			this.appJdbc.update("INSERT INTO effect (message_id, attempt) VALUES (?, ?)", message.id(),
					message.attempt());
			if (n == 2) {
				this.appJdbc.queryForObject("SELECT pg_terminate_backend(pg_backend_pid())", Boolean.class);
			}
		}, 4));

		await().atMost(Duration.ofSeconds(30)).until(() -> "deadly.dlq".equals(queueOf(poison)));
		await().atMost(Duration.ofSeconds(30)).until(() -> count("deadly") == 0);
		assertThat(handled.get(2)).as("the poison ran its 3 attempts").hasValue(3);
		assertThat(lastError(poison)).contains("after 3 attempts");
		assertThat(this.jdbc.queryForList("SELECT message_id FROM effect ORDER BY message_id", Long.class))
			.containsExactly(ids.get(0), ids.get(2), ids.get(3));
		assertThat(this.jdbc.queryForList("SELECT attempts FROM pgqueue.message WHERE queue = 'deadly'", Integer.class))
			.isEmpty();
		await().atMost(Duration.ofSeconds(5)).until(() -> advisoryLocks() == 0);
	}

	@Test
	void messagesHeldByASessionConsumerThatDiedCountTheirLostAttemptInATransactionalConsumer() {
		List<Long> ids = this.template.sendBatch("shared", List.of(1, 2, 3));
		io.github.pgqueue.internal.ConsumerSession dying = ContextInternals.openSession(this.template.context());
		assertThat(dying.claim("shared", 3).messages()).hasSize(3);
		this.jdbc.queryForObject("SELECT pg_terminate_backend(?)", Boolean.class, dying.backendPid());
		await().atMost(Duration.ofSeconds(10)).until(() -> advisoryLocks() == 0);
		Map<Long, Integer> attempts = new ConcurrentHashMap<>();
		this.listeners.start(endpoint("shared", "shared", 1, AckMode.AUTO,
				(message, ack) -> attempts.merge(message.id(), message.attempt(), Math::max), 10));

		await().atMost(Duration.ofSeconds(30)).until(() -> count("shared") == 0);
		assertThat(attempts).as("the session's lost attempt counted on each").containsOnlyKeys(ids)
			.allSatisfy((id, attempt) -> assertThat(attempt).isEqualTo(2));
		dying.close();
		await().atMost(Duration.ofSeconds(5)).until(() -> advisoryLocks() == 0);
	}

	@Test
	void aTransactionPastItsTimeoutIsRolledBackAndTheAttemptCounted() {
		this.admin.declare(QueueDefinition.of("slow").withMaxAttempts(3)
			.withBackoff(Duration.ofMillis(20), 1.0, Duration.ofMillis(20)));
		long id = this.template.send("slow", 1);
		this.listeners.start(ListenerFixture.endpoint("slow", Integer.class, (message, ack) -> {
			this.appJdbc.update("INSERT INTO effect (message_id, attempt) VALUES (?, ?)", message.id(),
					message.attempt());
			if (message.attempt() == 1) {
				Thread.sleep(700);
			}
		}, properties("slow").mode(ConsumptionMode.TRANSACTIONAL).transactionTimeout(Duration.ofMillis(300))));

		await().atMost(Duration.ofSeconds(20)).until(() -> count("slow") == 0);
		assertThat(this.jdbc.queryForList("SELECT attempt FROM effect WHERE message_id = ?", Integer.class, id))
			.as("the timed-out attempt's write was rolled back").containsExactly(2);
	}

	@Test
	void manualAcknowledgmentCompletesInTheTransaction() {
		this.admin.declare(QueueDefinition.of("manual").withMaxAttempts(2)
			.withBackoff(Duration.ofMillis(20), 1.0, Duration.ofMillis(20)));
		long nacked = this.template.send("manual", 1);
		long rejected = this.template.send("manual", 2);
		this.listeners.start(endpoint("manual", "manual", 1, AckMode.MANUAL, (message, ack) -> {
			this.appJdbc.update("INSERT INTO effect (message_id, attempt) VALUES (?, ?)", message.id() * 10
					+ message.attempt(), message.attempt());
			if ((Integer) message.payload() == 2) {
				ack.reject("not for us");
			}
			else if (message.attempt() == 1) {
				ack.nack(Duration.ofMillis(10));
			}
			else {
				ack.ack();
			}
		}, 10));

		await().atMost(Duration.ofSeconds(20)).until(() -> count("manual") == 0);
		assertThat(queueOf(rejected)).isEqualTo("manual.dlq");
		assertThat(queueOf(nacked)).isNull();
		assertThat(this.jdbc.queryForList("SELECT message_id FROM effect ORDER BY 1", Long.class))
			.as("a handler that returns commits its writes with its completion")
			.containsExactly(nacked * 10 + 1, nacked * 10 + 2, rejected * 10 + 1);
	}

	@Test
	void heldMessagesAreInFlightAndSkippedBySessionConsumersAndCancel() throws Exception {
		this.admin.declare(QueueDefinition.of("shared"));
		long held = this.template.send("shared", 1);
		CountDownLatch inHandler = new CountDownLatch(1);
		CountDownLatch release = new CountDownLatch(1);
		this.listeners.start(endpoint("shared", "shared", 1, AckMode.AUTO, (message, ack) -> {
			inHandler.countDown();
			release.await(20, TimeUnit.SECONDS);
		}, 10));
		assertThat(inHandler.await(10, TimeUnit.SECONDS)).isTrue();
		assertThat(this.template.stats("shared").inFlight()).isEqualTo(1);
		Optional<Lease<Integer>> lease = this.template.receive("shared", Integer.class);
		assertThat(lease).as("a session consumer skips what a transaction holds").isEmpty();
		assertThat(this.template.cancel("shared", held)).isEqualTo(io.github.pgqueue.CancelResult.HELD);
		release.countDown();
		await().atMost(Duration.ofSeconds(10)).until(() -> count("shared") == 0);
	}

	@Test
	void claimingAMessageThatIsNoLongerASuspectTakesNothingAndLeavesNoLock() {
		long id = this.template.send("settled", 1);
		try (io.github.pgqueue.internal.ConsumerSession session = ContextInternals.openSession(this.template.context(),
				this.listeners.consumerPool())) {
			assertThat(session.claimSuspect("settled", id).messages()).isEmpty();
			assertThat(advisoryLocks()).as("the lock is tried only on a row that is a suspect").isZero();
		}
	}

	@Test
	void aConsumerThatDiedAfterTheClaimsSnapshotWasTakenIsStillSeenAsDead() throws Exception {
		long id = this.template.send("newer", 1);
		try (java.sql.Connection reader = this.app.getConnection(); java.sql.Connection locker = this.app.getConnection()) {
			reader.setAutoCommit(false);
			reader.setTransactionIsolation(java.sql.Connection.TRANSACTION_REPEATABLE_READ);
			try (java.sql.Statement statement = reader.createStatement()) {
				statement.executeQuery("SELECT 1").close(); // the snapshot is taken here
			}
			locker.setAutoCommit(false);
			try (java.sql.Statement statement = locker.createStatement()) {
				statement.executeQuery("SELECT txid_current()").close();
				statement.executeQuery("SELECT id FROM pgqueue.message WHERE id = " + id + " FOR UPDATE").close();
			}
			locker.rollback(); // aborted, but after the reader's snapshot began
			try (java.sql.Statement statement = reader.createStatement();
					java.sql.ResultSet rs = statement.executeQuery(
							"SELECT pgqueue.locker_aborted(xmax) FROM pgqueue.message WHERE id = " + id)) {
				rs.next();
				assertThat(rs.getBoolean(1)).as("a claim reads the lock marker live, whatever its snapshot").isTrue();
			}
			reader.rollback();
		}
		assertThat(this.jdbc.queryForObject("SELECT pgqueue.locker_aborted(xmax) FROM pgqueue.message WHERE id = ?",
				Boolean.class, id)).as("seen from a later snapshot: aborted").isTrue();
	}

	/**
	 * Another consumer's batch deleted the head and committed after the claim's snapshot was taken,
	 * so the head's key is free again while the snapshot still shows its row: the claim must fill
	 * its batch from the next message, not come back empty. A repeatable-read transaction holds the
	 * snapshot still; there, locking the gone row fails the claim outright.
	 */
	@Test
	void aClaimFillsItsBatchPastRowsDeletedAfterItsSnapshot() throws Exception {
		long gone = this.template.send("raced", 1);
		long next = this.template.send("raced", 2);
		try (java.sql.Connection claimer = this.app.getConnection()) {
			claimer.setAutoCommit(false);
			claimer.setTransactionIsolation(java.sql.Connection.TRANSACTION_REPEATABLE_READ);
			try (java.sql.Statement statement = claimer.createStatement()) {
				statement.executeQuery("SELECT 1").close(); // the snapshot is taken here
			}
			this.jdbc.update("DELETE FROM pgqueue.message WHERE id = ?", gone);
			assertThat(claimTransactionally(claimer, "raced", 1)).containsExactly(next);
			claimer.rollback();
		}
	}

	/**
	 * A row whose last locker committed before the claim's snapshot (a poller that stopped before it
	 * ran the message) keeps that locker in its xmax: it is claimed as any other, not taken for a row
	 * written since the snapshot.
	 */
	@Test
	void aRowLockedByATransactionThatCommittedIsClaimed() throws Exception {
		long id = this.template.send("locked-before", 1);
		try (java.sql.Connection locker = this.app.getConnection()) {
			locker.setAutoCommit(false);
			try (java.sql.Statement statement = locker.createStatement()) {
				statement.executeQuery("SELECT id FROM pgqueue.message WHERE id = " + id + " FOR UPDATE").close();
			}
			locker.commit();
		}
		assertThat(this.jdbc.queryForObject("SELECT xmax <> '0'::xid FROM pgqueue.message WHERE id = ?",
				Boolean.class, id)).as("the committed lock is still the row's xmax").isTrue();
		try (java.sql.Connection claimer = this.app.getConnection()) {
			claimer.setAutoCommit(false);
			assertThat(claimTransactionally(claimer, "locked-before", 10)).containsExactly(id);
			claimer.rollback();
		}
		try (io.github.pgqueue.internal.ConsumerSession session = ContextInternals.openSession(this.template.context(),
				this.listeners.consumerPool())) {
			assertThat(session.claim("locked-before", 10).messages()).as("and by a session consumer")
				.extracting(io.github.pgqueue.internal.ClaimedMessage::id).containsExactly(id);
		}
	}

	/** The ids a transactional claim takes on this connection, in its open transaction. */
	private List<Long> claimTransactionally(java.sql.Connection connection, String queue, int batchSize)
			throws java.sql.SQLException {
		List<Long> ids = new java.util.ArrayList<>();
		for (Object[] row : TransactionalClaims.claim(this.template, connection, queue, batchSize)) {
			assertThat((Boolean) row[1]).as("no suspect").isFalse();
			ids.add((Long) row[0]);
		}
		return ids;
	}

	@Test
	void aBatchGoingOnFromTheLastFullOneStillTakesALowerPrioritySentMeanwhile() {
		this.template.sendBatch("tx-cursor", IntStream.range(1, 31).boxed().toList(),
				io.github.pgqueue.SendOptions.builder().priority(5).build());
		List<Integer> order = new java.util.concurrent.CopyOnWriteArrayList<>();
		this.listeners.start(endpoint("tx-cursor", "tx-cursor", 1, AckMode.AUTO, (message, ack) -> {
			int n = (Integer) message.payload();
			order.add(n);
			if (n == 1) {
				// Commits with the first batch, which is full: the next claim has a cursor.
				this.template.send("tx-cursor", 0, io.github.pgqueue.SendOptions.builder().priority(0).build());
			}
		}, 5));
		await().atMost(Duration.ofSeconds(20)).until(() -> order.size() == 31);
		assertThat(order.subList(0, 6)).as("the first batch, then the lower priority").containsExactly(1, 2, 3, 4, 5, 0);
		assertThat(order.subList(6, 31)).isSorted();
	}

	/**
	 * The claim runs on one generic plan per connection (PostgreSQL would plan it again on every
	 * call, most of a small batch's time), and the handlers' own statements, in the same
	 * transaction, keep the connection's planner settings.
	 */
	@Test
	void theClaimIsPlannedOnceAndHandlersKeepThePlannerSettingsOfTheirConnection() {
		this.admin.declare(QueueDefinition.of("planned"));
		int total = 300;
		this.template.sendBatch("planned", IntStream.range(0, total).boxed().toList());
		Set<String> settings = ConcurrentHashMap.newKeySet();
		Map<Integer, Map<String, Object>> claimPlans = new ConcurrentHashMap<>();
		AtomicInteger handled = new AtomicInteger();
		this.listeners.start(endpoint("planned", "planned", 1, AckMode.AUTO, (message, ack) -> {
			settings.add(this.appJdbc.queryForObject(
					"SELECT current_setting('enable_seqscan') || ' ' || current_setting('plan_cache_mode')", String.class));
			claimPlans.put(this.appJdbc.queryForObject("SELECT pg_backend_pid()", Integer.class),
					this.appJdbc.queryForMap("SELECT coalesce(sum(generic_plans), 0) AS generic, "
							+ "coalesce(sum(custom_plans), 0) AS custom FROM pg_prepared_statements "
							+ "WHERE statement LIKE '%walked AS MATERIALIZED%'"));
			handled.incrementAndGet();
		}, 10));

		await().atMost(Duration.ofSeconds(30)).until(() -> handled.get() == total);
		assertThat(settings).as("the planner settings the handlers saw").containsExactly("on auto");
		assertThat(claimPlans.values()).allSatisfy((plans) -> assertThat(((Number) plans.get("custom")).longValue())
			.as("claims planned for their parameters").isZero());
		assertThat(claimPlans.values().stream().mapToLong((plans) -> ((Number) plans.get("generic")).longValue()).sum())
			.as("claims run on a generic plan").isPositive();
	}

	private QueueListenerEndpoint endpoint(String id, String queue, int concurrency, AckMode ackMode,
			QueueMessageListener listener, int batchSize) {
		return ListenerFixture.endpoint(id, Integer.class, listener, properties(queue).concurrency(concurrency)
			.ackMode(ackMode)
			.batchSize(batchSize)
			.mode(ConsumptionMode.TRANSACTIONAL));
	}

}
