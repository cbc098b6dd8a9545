package io.github.pgqueue;

import java.time.Duration;
import java.util.List;
import java.util.concurrent.Callable;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.function.BiFunction;

import javax.sql.DataSource;

import io.github.pgqueue.internal.ClaimedMessage;
import io.github.pgqueue.internal.ConsumerSession.Claim;
import io.github.pgqueue.internal.ConsumerSession;
import io.github.pgqueue.testing.EmbeddedPostgres;
import io.github.pgqueue.testing.PostgresExtension;
import io.github.pgqueue.testing.TransactionalClaims;
import org.awaitility.Awaitility;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;

import org.springframework.jdbc.core.JdbcTemplate;
import org.springframework.jdbc.datasource.DriverManagerDataSource;

import static io.github.pgqueue.testing.Db.advisoryLocks;
import static io.github.pgqueue.testing.Db.count;
import static io.github.pgqueue.testing.Db.queryForLong;
import static io.github.pgqueue.testing.Db.terminateBackend;
import static org.assertj.core.api.Assertions.assertThat;

/**
 * A claim counts the attempt of a holder that died even when its statement's snapshot was taken
 * before that holder claimed the message: the holder's claim, its handler and its death all fall
 * between the snapshot and the moment the claim's walk reaches the row (a claim descheduled on a
 * busy machine). The late claim is held there by a restrictive row-level security policy of the
 * test's own role, whose function waits for a lock the test holds.
 */
@ExtendWith(PostgresExtension.class)
class LostAttemptIntegrationTests {

	private static final String ROLE = "latecomer";

	private static final long GATE = 4244;

	private final EmbeddedPostgres postgres = EmbeddedPostgres.get();

	private final DataSource dataSource = this.postgres.dataSource();

	private final JdbcTemplate jdbc = new JdbcTemplate(this.dataSource);

	private final QueueTemplate template = QueueTemplate.builder(this.dataSource).build();

	@BeforeEach
	void lateRole() {
		this.jdbc.execute("DO $$ BEGIN CREATE ROLE " + ROLE + " LOGIN; EXCEPTION WHEN duplicate_object THEN NULL; END $$");
		this.jdbc.execute("GRANT USAGE ON SCHEMA pgqueue TO " + ROLE);
		this.jdbc.execute("GRANT SELECT, INSERT, UPDATE, DELETE ON ALL TABLES IN SCHEMA pgqueue TO " + ROLE);
		this.jdbc.execute("GRANT USAGE ON ALL SEQUENCES IN SCHEMA pgqueue TO " + ROLE);
		this.jdbc.execute("""
				CREATE FUNCTION public.late_claim_gate() RETURNS boolean LANGUAGE plpgsql VOLATILE AS $$
				BEGIN PERFORM pg_advisory_lock_shared(%d); PERFORM pg_advisory_unlock_shared(%d); RETURN true; END $$"""
			.formatted(GATE, GATE));
		this.jdbc.execute("CREATE POLICY late_claim_gate ON pgqueue.message AS RESTRICTIVE FOR SELECT TO " + ROLE
				+ " USING (public.late_claim_gate())");
	}

	@AfterEach
	void dropGate() {
		this.jdbc.execute("DROP POLICY IF EXISTS late_claim_gate ON pgqueue.message");
		this.jdbc.execute("DROP FUNCTION IF EXISTS public.late_claim_gate()");
	}

	@Test
	void aBatchClaimCountsTheAttemptOfAHolderThatClaimedAndDiedAfterItsSnapshot() throws Exception {
		assertLateSessionClaimCountsTheLostAttempt((session, id) -> session.claim("late", 10));
	}

	/**
	 * The same under a database whose default isolation is REPEATABLE READ: the late claim's
	 * session runs in READ COMMITTED all the same, so listed_by_the_dead reads the holding table on
	 * a snapshot of its own, taken after the claim's locks, and sees the dead holder's row.
	 */
	@Test
	void aBatchClaimCountsTheLateHoldersAttemptWhenTheDatabaseDefaultIsRepeatableRead() throws Exception {
		this.jdbc.execute("ALTER DATABASE postgres SET default_transaction_isolation = 'repeatable read'");
		try {
			assertThat(new JdbcTemplate(latecomer()).queryForObject("SHOW transaction_isolation", String.class))
				.as("the default of a new connection").isEqualTo("repeatable read");
			assertLateSessionClaimCountsTheLostAttempt((session, id) -> session.claim("late", 10));
		}
		finally {
			this.jdbc.execute("ALTER DATABASE postgres RESET default_transaction_isolation");
		}
	}

	@Test
	void aClaimByIdCountsTheAttemptOfAHolderThatClaimedAndDiedAfterItsSnapshot() throws Exception {
		assertLateSessionClaimCountsTheLostAttempt((session, id) -> session.claimById("late", id));
	}

	/**
	 * A transactional claim does not take such a message in its batch: it returns it as a suspect,
	 * for the claim that counts the lost attempt and runs it alone.
	 */
	@Test
	void aTransactionalClaimTreatsAMessageOfAHolderThatClaimedAndDiedAfterItsSnapshotAsASuspect() throws Exception {
		long id = this.template.send("late", "m");
		try (java.sql.Connection late = latecomer().getConnection()) {
			late.setAutoCommit(false);
			int pid = pid(late);
			List<Object[]> rows = afterAHolderClaimedAndDied(pid, () -> TransactionalClaims.claim(this.template, late, "late", 10));
			assertThat(rows).as("(id, suspect) of the late transactional claim")
				.containsExactly(new Object[] { id, true });
			late.rollback();
		}
		try (ConsumerSession session = this.template.context().openSession()) {
			assertThat(session.claim("late", 10).messages()).extracting(ClaimedMessage::id, ClaimedMessage::attempt)
				.containsExactly(org.assertj.core.groups.Tuple.tuple(id, 2));
			session.ack(List.of(id));
		}
		assertNothingLeft();
	}

	private void assertLateSessionClaimCountsTheLostAttempt(BiFunction<ConsumerSession, Long, Claim> lateClaim)
			throws Exception {
		long id = this.template.send("late", "m");
		try (ConsumerSession late = QueueContext.of(latecomer()).openSession()) {
			Claim taken = afterAHolderClaimedAndDied(late.backendPid(), () -> lateClaim.apply(late, id));
			assertThat(taken.messages()).as("the message of the holder that died, at its next attempt")
				.extracting(ClaimedMessage::id, ClaimedMessage::attempt)
				.containsExactly(org.assertj.core.groups.Tuple.tuple(id, 2));
			assertThat(this.jdbc.queryForObject("SELECT attempts FROM pgqueue.message WHERE id = ?", Integer.class, id))
				.as("the dead holder's attempt, stored").isEqualTo(1);
			late.ack(List.of(id));
		}
		assertNothingLeft();
	}

	/**
	 * Runs {@code lateClaim} (on the latecomer's backend {@code latePid}) so that it takes its
	 * snapshot, then waits at the gate while a holder claims the queue's message and is terminated;
	 * returns what the claim found once let through.
	 */
	private <T> T afterAHolderClaimedAndDied(int latePid, Callable<T> lateClaim) throws Exception {
		ExecutorService pool = Executors.newSingleThreadExecutor();
		try (java.sql.Connection gate = this.dataSource.getConnection()) {
			gate.createStatement().execute("SELECT pg_advisory_lock(" + GATE + ")");
			Future<T> claim;
			try {
				claim = pool.submit(lateClaim);
				Awaitility.await().atMost(Duration.ofSeconds(10)).pollInterval(Duration.ofMillis(10))
					.until(() -> claim.isDone() || queryForLong("SELECT count(*) FROM pg_locks WHERE locktype = 'advisory'"
							+ " AND objid = " + GATE + " AND NOT granted AND pid = " + latePid) == 1);
				assertThat(claim).as("the late claim waits at the gate, after its snapshot").isNotDone();

				// Between the late claim's snapshot and its walk: a holder claims, hands out and dies.
				ConsumerSession dying = this.template.context().openSession();
				List<ClaimedMessage> held = dying.claim("late", 10).messages();
				assertThat(held).extracting(ClaimedMessage::attempt).containsExactly(1);
				terminateBackend(dying.backendPid());
				dying.close();
			}
			finally {
				gate.createStatement().execute("SELECT pg_advisory_unlock(" + GATE + ")");
			}
			return claim.get(10, TimeUnit.SECONDS);
		}
		finally {
			pool.shutdownNow();
		}
	}

	private DataSource latecomer() {
		return new DriverManagerDataSource(this.postgres.jdbcUrl(), ROLE, "");
	}

	private static int pid(java.sql.Connection connection) throws java.sql.SQLException {
		try (java.sql.ResultSet rs = connection.createStatement().executeQuery("SELECT pg_backend_pid()")) {
			rs.next();
			return rs.getInt(1);
		}
	}

	private void assertNothingLeft() {
		assertThat(count()).isZero();
		assertThat(advisoryLocks()).isZero();
	}

}
