package io.github.pgqueue;

import java.time.Duration;
import java.util.List;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.function.BiFunction;

import javax.sql.DataSource;

import io.github.pgqueue.internal.ClaimedMessage;
import io.github.pgqueue.internal.ConsumerSession;
import io.github.pgqueue.internal.ConsumerSession.Claim;
import io.github.pgqueue.testing.EmbeddedPostgres;
import io.github.pgqueue.testing.PostgresExtension;
import org.awaitility.Awaitility;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;

import org.springframework.jdbc.core.JdbcTemplate;
import org.springframework.jdbc.datasource.DriverManagerDataSource;

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
		assertLateClaimCountsTheLostAttempt((session, id) -> session.claim("late", 10));
	}

	@Test
	void aClaimByIdCountsTheAttemptOfAHolderThatClaimedAndDiedAfterItsSnapshot() throws Exception {
		assertLateClaimCountsTheLostAttempt((session, id) -> session.claimById("late", id));
	}

	private void assertLateClaimCountsTheLostAttempt(BiFunction<ConsumerSession, Long, Claim> lateClaim)
			throws Exception {
		long id = this.template.send("late", "m");
		ExecutorService pool = Executors.newSingleThreadExecutor();
		DataSource asLatecomer = new DriverManagerDataSource(this.postgres.jdbcUrl(), ROLE, "");
		try (java.sql.Connection gate = this.dataSource.getConnection();
				ConsumerSession late = QueueTemplate.builder(asLatecomer).build().openSession()) {
			gate.createStatement().execute("SELECT pg_advisory_lock(" + GATE + ")");
			Future<Claim> claim;
			try {
				Future<Claim> started = pool.submit(() -> lateClaim.apply(late, id));
				claim = started;
				Awaitility.await().atMost(Duration.ofSeconds(10)).pollInterval(Duration.ofMillis(10))
					.until(() -> started.isDone() || count("SELECT count(*) FROM pg_locks WHERE locktype = 'advisory'"
							+ " AND objid = " + GATE + " AND NOT granted AND pid = " + late.backendPid()) == 1);
				assertThat(started).as("the late claim waits at the gate, after its snapshot").isNotDone();

				// Between the late claim's snapshot and its walk: a holder claims, hands out and dies.
				ConsumerSession dying = this.template.openSession();
				List<ClaimedMessage> held = dying.claim("late", 10).messages();
				assertThat(held).extracting(ClaimedMessage::id, ClaimedMessage::attempt)
					.containsExactly(org.assertj.core.groups.Tuple.tuple(id, 1));
				this.jdbc.queryForObject("SELECT pg_terminate_backend(?)", Boolean.class, dying.backendPid());
				Awaitility.await().atMost(Duration.ofSeconds(10)).pollInterval(Duration.ofMillis(10))
					.until(() -> count("SELECT count(*) FROM pg_stat_activity WHERE pid = " + dying.backendPid()) == 0);
				dying.close();
			}
			finally {
				gate.createStatement().execute("SELECT pg_advisory_unlock(" + GATE + ")");
			}
			Claim taken = claim.get(10, TimeUnit.SECONDS);
			assertThat(taken.messages()).as("the message of the holder that died, at its next attempt")
				.extracting(ClaimedMessage::id, ClaimedMessage::attempt)
				.containsExactly(org.assertj.core.groups.Tuple.tuple(id, 2));
			assertThat(this.jdbc.queryForObject("SELECT attempts FROM pgqueue.message WHERE id = ?", Integer.class, id))
				.as("the dead holder's attempt, stored").isEqualTo(1);
			late.ack(List.of(id));
		}
		finally {
			pool.shutdownNow();
		}
		assertThat(count("SELECT count(*) FROM pgqueue.message")).isZero();
		assertThat(count("SELECT count(*) FROM pg_locks WHERE locktype = 'advisory'")).isZero();
	}

	private long count(String sql) {
		return this.jdbc.queryForObject(sql, Long.class);
	}

}
