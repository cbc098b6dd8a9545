package io.github.pgqueue;

import java.sql.Connection;
import java.sql.SQLException;
import java.sql.Statement;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;

import javax.sql.DataSource;

import com.zaxxer.hikari.HikariDataSource;
import io.github.pgqueue.internal.ClaimedMessage;
import io.github.pgqueue.internal.ConsumerSession;
import io.github.pgqueue.testing.EmbeddedPostgres;
import io.github.pgqueue.testing.PostgresExtension;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;

import org.springframework.jdbc.core.JdbcTemplate;

import static io.github.pgqueue.testing.Db.advisoryLocks;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.awaitility.Awaitility.await;

/**
 * Statements that fail for a reason other than a lost connection (a timeout, a cancel, a row
 * lock in the way) must not leave an advisory lock on a session that goes back to a pool, nor
 * change rows another consumer holds; and {@code cancel} must not leak its lock whichever
 * completion it races.
 */
@ExtendWith(PostgresExtension.class)
class FailedStatementIntegrationTests {

	private final EmbeddedPostgres postgres = EmbeddedPostgres.get();

	private final DataSource dataSource = this.postgres.dataSource();

	private final JdbcTemplate jdbc = new JdbcTemplate(this.dataSource);

	private final QueueTemplate template = QueueTemplate.builder(this.dataSource).build();

	@Test
	void claimThatTimesOutOnARowLockLeavesNoAdvisoryLockOnThePooledConnection() throws Exception {
		List<Long> ids = this.template.sendBatch("timeout", List.of(1, 2, 3));
		try (HikariDataSource impatient = singleConnectionPool("SET statement_timeout = '200ms'");
				Connection blocker = rowLocker("timeout")) {
			QueueTemplate consumer = QueueTemplate.builder(impatient).build();
			assertThatThrownBy(() -> consumer.receive("timeout", Integer.class)).isInstanceOf(QueueException.class)
				.hasMessageContaining("statement timeout");
			assertThat(advisoryLocks()).as("locks left behind by the failed claim").isZero();
			blocker.rollback();
			try (Lease<Integer> lease = consumer.receive("timeout", Integer.class).orElseThrow()) {
				assertThat(lease.message().id()).as("the same pooled connection claims again").isEqualTo(ids.get(0));
				assertThat(lease.message().attempt()).as("the failed claim counted nothing").isEqualTo(1);
				lease.ack();
			}
		}
		assertThat(this.template.cancel("timeout", ids.get(1))).isEqualTo(CancelResult.REMOVED);
		assertThat(advisoryLocks()).isZero();
	}

	@Test
	void claimCancelledWithPgCancelBackendLeavesNoAdvisoryLock() throws Exception {
		this.template.sendBatch("cancelled", List.of(1, 2, 3));
		try (Connection blocker = rowLocker("cancelled"); ConsumerSession session = this.template.context().openSession()) {
			CompletableFuture<ConsumerSession.Claim> claim = CompletableFuture
				.supplyAsync(() -> session.claim("cancelled", 3));
			await().atMost(java.time.Duration.ofSeconds(5))
				.until(() -> this.jdbc.queryForObject("SELECT count(*) FROM pg_stat_activity WHERE pid = ? "
						+ "AND wait_event_type = 'Lock'", Long.class, session.backendPid()) == 1);
			this.jdbc.queryForObject("SELECT pg_cancel_backend(?)", Boolean.class, session.backendPid());
			assertThatThrownBy(() -> claim.get(5, TimeUnit.SECONDS)).hasCauseInstanceOf(QueueException.class)
				.hasMessageContaining("canceling statement");
			assertThat(session.isLost()).isFalse();
			assertThat(advisoryLocks()).isZero();
			blocker.rollback();
			List<ClaimedMessage> claimed = session.claim("cancelled", 3).messages();
			assertThat(claimed).extracting(ClaimedMessage::attempt).containsExactly(1, 1, 1);
			session.ack(claimed.stream().map(ClaimedMessage::id).toList());
		}
		assertThat(advisoryLocks()).isZero();
	}

	@Test
	void completionThatFailsPartWayEndsItsSessionInsteadOfTouchingRowsOthersHoldSince() throws Exception {
		List<Long> ids = this.template.sendBatch("partial", List.of(1, 2));
		try (HikariDataSource impatient = singleConnectionPool("SET statement_timeout = '300ms'")) {
			QueueTemplate consumer = QueueTemplate.builder(impatient).build();
			ConsumerSession first = consumer.context().openSession();
			assertThat(first.claim("partial", 2).messages()).hasSize(2);
			Connection blocker = this.dataSource.getConnection();
			blocker.setAutoCommit(false);
			try (Statement statement = blocker.createStatement()) {
				// The ack deletes (and unlocks) the first id, then waits on the second and times out.
				statement.execute("SELECT 1 FROM pgqueue.message WHERE id = " + ids.get(1) + " FOR UPDATE");
			}
			assertThatThrownBy(() -> first.ack(ids)).isInstanceOf(QueueException.class);
			blocker.rollback();
			blocker.close();
			try (ConsumerSession second = this.template.context().openSession()) {
				ConsumerSession.Claim claim = second.claim("partial", 2);
				List<ClaimedMessage> retaken = claim.messages();
				first.close();
				assertThat(retaken).isNotEmpty();
				assertThat(claim.inTurn()).as("held by a consumer that died: handed out in turn").isTrue();
				List<Long> listed = this.jdbc.queryForObject("SELECT ids FROM pgqueue.holding WHERE pid = ? AND in_turn",
						(rs, n) -> List.of((Long[]) rs.getArray(1).getArray()), second.backendPid());
				assertThat(listed).as("now held by another session")
					.containsExactlyElementsOf(retaken.stream().map(ClaimedMessage::id).toList());
				for (ClaimedMessage message : retaken) {
					second.ack(List.of(message.id()));
				}
			}
			first.close();
		}
		await().atMost(java.time.Duration.ofSeconds(5)).until(() -> advisoryLocks() == 0);
	}

	/** What a consumer does to a message while a canceller races it. */
	enum Completion {

		ACK("DELETE FROM pgqueue.message WHERE id = ?"),
		RETRY("UPDATE pgqueue.message SET visible_at = now(), attempts = attempts + 1 WHERE id = ?"),
		DEAD_LETTER("UPDATE pgqueue.message SET queue = 'race.dlq' WHERE id = ?"),
		REDRIVE_AWAY("UPDATE pgqueue.message SET queue = 'race-elsewhere' WHERE id = ?");

		final String sql;

		Completion(String sql) {
			this.sql = sql;
		}

	}

	@ParameterizedTest
	@EnumSource(Completion.class)
	void cancelInTheGapBetweenACompletionsUnlockAndItsCommitLeaksNoLock(Completion completion) throws Exception {
		long id = this.template.send("race", 1);
		int namespace = this.template.context().lockNamespace();
		try (Connection consumer = this.dataSource.getConnection()) {
			consumer.setAutoCommit(false);
			try (var lock = consumer.prepareStatement("SELECT pg_try_advisory_lock(?, ?::bigint::bit(32)::int4)")) {
				lock.setInt(1, namespace);
				lock.setLong(2, id);
				try (var rs = lock.executeQuery()) {
					assertThat(rs.next() && rs.getBoolean(1)).as("no lock left from before").isTrue();
				}
			}
			// A completion as every completing statement is shaped: change the row, unlock, commit.
			try (var change = consumer.prepareStatement(completion.sql)) {
				change.setLong(1, id);
				change.executeUpdate();
			}
			try (var unlock = consumer.prepareStatement("SELECT pg_advisory_unlock(?, ?::bigint::bit(32)::int4)")) {
				unlock.setInt(1, namespace);
				unlock.setLong(2, id);
				unlock.execute();
			}
			CompletableFuture<CancelResult> cancel = CompletableFuture.supplyAsync(() -> this.template.cancel("race", id));
			await().atMost(java.time.Duration.ofSeconds(5)).until(() -> this.jdbc.queryForObject(
					"SELECT count(*) FROM pg_stat_activity WHERE wait_event_type = 'Lock' AND query LIKE '%cancel_message%'",
					Long.class) == 1);
			consumer.commit();
			CancelResult result = cancel.get(5, TimeUnit.SECONDS);
			assertThat(result).isEqualTo((completion == Completion.RETRY) ? CancelResult.REMOVED
					: CancelResult.NOT_FOUND);
		}
		assertThat(advisoryLocks()).as("locks left by the canceller").isZero();
	}

	@Test
	void ackDeletesNothingThatWasMovedToAnotherQueueWhileHeld() {
		long id = this.template.send("moved", 1);
		try (ConsumerSession session = this.template.context().openSession()) {
			assertThat(session.claim("moved", 1).messages()).hasSize(1);
			this.jdbc.update("UPDATE pgqueue.message SET queue = 'moved-elsewhere' WHERE id = ?", id);
			session.ack(List.of(id));
			assertThat(session.heldCount()).isZero();
		}
		assertThat(this.jdbc.queryForObject("SELECT queue FROM pgqueue.message WHERE id = ?", String.class, id))
			.isEqualTo("moved-elsewhere");
		assertThat(advisoryLocks()).isZero();
	}

	@Test
	void consumersDrainEverythingWhileTheirStatementsAreCancelledAtRandomAndLeaveNoLock() throws Exception {
		List<Long> sent = new java.util.ArrayList<>();
		for (int i = 0; i < 3; i++) {
			sent.addAll(this.template.sendBatch("storm", java.util.stream.IntStream.range(0, 1000).boxed().toList()));
		}
		java.util.Map<Long, java.util.concurrent.atomic.AtomicInteger> deliveries = new java.util.concurrent.ConcurrentHashMap<>();
		java.util.Set<Long> unacked = java.util.concurrent.ConcurrentHashMap.newKeySet();
		java.util.concurrent.atomic.AtomicInteger cancels = new java.util.concurrent.atomic.AtomicInteger();
		java.util.concurrent.atomic.AtomicInteger failures = new java.util.concurrent.atomic.AtomicInteger();
		java.util.concurrent.atomic.AtomicBoolean done = new java.util.concurrent.atomic.AtomicBoolean();
		try (HikariDataSource storm = this.postgres.pool("storm", 8)) {
			QueueTemplate consumer = QueueTemplate.builder(storm).build();
			// The template reads the lock namespace once, on first use: not under the storm, which
			// would cancel that read and fail the worker before it claimed anything.
			consumer.context().lockNamespace();
			Thread canceller = new Thread(() -> {
				while (!done.get()) {
					cancels.addAndGet(this.jdbc.queryForObject("SELECT count(*) FILTER (WHERE pg_cancel_backend(pid)) "
							+ "FROM pg_stat_activity WHERE application_name = 'storm' AND state = 'active'", Integer.class));
					java.util.concurrent.locks.LockSupport.parkNanos(3_000_000);
				}
			});
			canceller.start();
			java.util.concurrent.ExecutorService pool = java.util.concurrent.Executors.newFixedThreadPool(4);
			List<java.util.concurrent.Future<?>> workers = new java.util.ArrayList<>();
			long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(60);
			java.util.function.BooleanSupplier work = () -> System.nanoTime() < deadline && this.jdbc
				.queryForObject("SELECT count(*) FROM pgqueue.message WHERE queue = 'storm'", Long.class) > 0;
			for (int w = 0; w < 4; w++) {
				workers.add(pool.submit(() -> {
					while (work.getAsBoolean()) {
						try (ConsumerSession session = consumer.context().openSession()) {
							while (work.getAsBoolean()) {
								List<Long> ids = session.claim("storm", 10).messages().stream().map(ClaimedMessage::id)
									.toList();
								ids.forEach((id) -> deliveries.computeIfAbsent(id,
										(k) -> new java.util.concurrent.atomic.AtomicInteger()).incrementAndGet());
								try {
									session.ack(ids);
								}
								catch (QueueException ex) {
									unacked.addAll(ids);
									throw ex;
								}
							}
						}
						catch (QueueException ex) {
							failures.incrementAndGet();
						}
					}
					return null;
				}));
			}
			for (java.util.concurrent.Future<?> worker : workers) {
				worker.get(150, TimeUnit.SECONDS);
			}
			pool.shutdown();
			done.set(true);
			canceller.join();
			assertThat(advisoryLocks()).as("locks left on the pooled connections").isZero();
		}
		assertThat(cancels.get()).as("statements cancelled").isPositive();
		assertThat(failures.get()).as("claims and acks that failed").isPositive();
		assertThat(deliveries.keySet()).as("every message delivered").containsExactlyInAnyOrderElementsOf(sent);
		deliveries.forEach((id, n) -> {
			if (n.get() > 1) {
				assertThat(unacked).as("message %d was delivered %d times", id, n.get()).contains(id);
			}
		});
		assertThat(this.jdbc.queryForObject("SELECT count(*) FROM pgqueue.message WHERE queue = 'storm'", Long.class))
			.as("left in the queue").isZero();
		assertThat(advisoryLocks()).isZero();
	}

	/** A transaction holding the row locks of every message of {@code queue}. */
	private Connection rowLocker(String queue) throws SQLException {
		Connection blocker = this.dataSource.getConnection();
		blocker.setAutoCommit(false);
		try (Statement statement = blocker.createStatement()) {
			statement.execute("SELECT 1 FROM pgqueue.message WHERE queue = '" + queue + "' FOR UPDATE");
		}
		return blocker;
	}

	private HikariDataSource singleConnectionPool(String initSql) {
		com.zaxxer.hikari.HikariConfig config = new com.zaxxer.hikari.HikariConfig();
		config.setJdbcUrl(this.postgres.jdbcUrl());
		config.setUsername(this.postgres.username());
		config.setMaximumPoolSize(1);
		config.setConnectionInitSql(initSql);
		return new HikariDataSource(config);
	}

}
