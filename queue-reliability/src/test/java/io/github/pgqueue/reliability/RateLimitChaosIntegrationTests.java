package io.github.pgqueue.reliability;

import java.sql.Timestamp;
import java.time.Duration;

import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

import static io.github.pgqueue.reliability.ChaosSettings.pick;
import static org.assertj.core.api.Assertions.assertThat;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

/**
 * A rate-limited queue consumed by two consumer JVMs at once, one in {@code session} mode and one
 * in {@code transactional} mode, two pollers each, with a backlog far above what the limit lets
 * through: over the window the four pollers together hand out at most the limit (plus 5 %, plus one
 * burst) and close to it, although session consumers are killed with kill -9 while they hold
 * messages (and replaced); the messages held back are never claimed, so their attempts stay at 0;
 * once the limit is lifted (plain SQL on the queue table), the queue drains with nothing lost.
 * The same with a limit per key, two tenants each held to it, in the full run only. The reduced run
 * measures 15 s at 50/s, the full run ({@code -Dchaos.full=true}) 60 s at 100/s.
 */
class RateLimitChaosIntegrationTests {

	private static final int RATE = pick(50, 100);

	private static final Duration WINDOW = pick(Duration.ofSeconds(15), Duration.ofSeconds(60));

	/** The tenants of the limit per key. */
	private static final int TENANTS = 2;

	private final ChaosDatabase database = ChaosDatabase.get();

	@BeforeEach
	void reset() {
		this.database.reset();
	}

	@Test
	void consumersOfTwoJvmsStayWithinTheLimitThroughKillNineAndLoseNothing() {
		run("chaos-limited", false);
	}

	/**
	 * The same with a limit of each key's messages ({@code rate-limit-per-key}, {@code tenant}
	 * header) instead of the queue's: two tenants, each handed out at most its own limit (plus 5 %,
	 * plus one burst) and close to it; lifted, the queue drains with nothing lost.
	 */
	@Test
	void consumersOfTwoJvmsKeepEachKeyWithinItsLimitThroughKillNineAndLoseNothing() {
		assumeTrue(ChaosSettings.full(), "The limit per key under kill -9: full run only (-Dchaos.full=true); the "
				+ "listener tests of queue-core hold each key to its limit in every build");
		run("chaos-key-paced", true);
	}

	private void run(String queue, boolean perKey) {
		String limitProperty = "pgqueue.queues." + queue + (perKey ? ".rate-limit-per-key" : ".rate-limit");
		ConsumerSpec session = ConsumerSpec.of(queue).batchSize(10).property(limitProperty, RATE + "/s");
		ConsumerSpec transactional = ConsumerSpec.of(queue).batchSize(10).property(limitProperty, RATE + "/s")
			.property("pgqueue.queues." + queue + ".mode", "transactional");
		if (perKey) {
			session = session.property("pgqueue.queues." + queue + ".concurrency-key", "tenant");
			transactional = transactional.property("pgqueue.queues." + queue + ".concurrency-key", "tenant");
		}
		int keys = perKey ? TENANTS : 1;
		int kills = pick(2, 6);
		Producer jobs = new Producer(this.database, queue, (key) -> Job.of(key, 5));
		try (ConsumerFleet sessions = new ConsumerFleet(this.database, "limit-session", session);
				ConsumerFleet transactions = new ConsumerFleet(this.database, "limit-tx", transactional);
				Producer producer = perKey ? jobs.withHeader("tenant", (key) -> "t" + (key % TENANTS)) : jobs) {
			if (perKey) {
				// Declared before the sends, which copy the tenant header into each message's key.
				this.database.jdbc().update("INSERT INTO pgqueue.queue (name, concurrency_key, rate_limit_per_key_permits, "
						+ "rate_limit_per_key_period_ms) VALUES (?, 'tenant', ?, 1000)", queue, RATE);
			}
			// More than the window lets through, with room for the consumers' startup.
			producer.send((int) (keys * RATE * (WINDOW.toSeconds() + 20)));
			assertThat(this.database.count("SELECT count(*) FROM pgqueue.message WHERE queue = ? AND concurrency_key IS "
					+ (perKey ? "NULL" : "NOT NULL"), queue)).as("messages keyed as the queue says").isZero();
			sessions.start(1);
			transactions.start(1);
			Timestamp from = now();
			long started = System.nanoTime();
			for (int i = 0; i < kills; i++) {
				ChaosDatabase.pause(WINDOW.dividedBy(kills + 1));
				ConsumerProcess victim = sessions.freezeOneHoldingMessages();
				this.database.faultSessions(victim.name(), "kill-9", false);
				victim.kill();
				sessions.keepAlive(1);
			}
			// The kills can outlast the window on a loaded machine (a consumer may take a while to hold
			// messages to freeze): the rate is measured over the time that passed, whatever it was.
			ChaosDatabase.pauseUntilEnd(WINDOW, started);
			Timestamp to = now();
			double seconds = (to.getTime() - from.getTime()) / 1000.0;
			for (int key = 0; key < keys; key++) {
				long handled = this.database.count("""
						SELECT count(*) FROM chaos.delivery
						 WHERE queue = ? AND recorded_at >= ? AND recorded_at < ? AND key % ? = ?""", queue, from, to,
						keys, key);
				long busiest = this.database.count("""
						SELECT COALESCE(max(n), 0) FROM (
						    SELECT count(*) AS n FROM chaos.delivery
						     WHERE queue = ? AND recorded_at >= ? AND recorded_at < ? AND key % ? = ?
						     GROUP BY floor(extract(epoch FROM recorded_at - ?::timestamptz))) s""", queue, from, to, keys,
						key, from);
				String what = perKey ? "tenant t" + key + "'s limit" : "rate limit";
				System.out.printf("  %s %d/s over %.1f s with %d kill -9: handled %d, %.1f/s (%.3f of the limit), "
						+ "busiest second %d%n", what, RATE, seconds, kills, handled, handled / seconds,
						handled / seconds / RATE, busiest);
				assertThat((double) handled).as("%s: handled in %.1f s at %d/s", what, seconds, RATE)
					.isLessThanOrEqualTo(RATE * seconds * 1.05 + RATE)
					.isGreaterThan(RATE * seconds * 0.8);
			}
			assertThat(this.database.count("""
					SELECT count(*) FROM pgqueue.message m
					 WHERE m.queue = ? AND m.attempts > 0
					   AND NOT EXISTS (SELECT 1 FROM chaos.delivery d WHERE d.message_id = m.id)""", queue))
				.as("messages never handed to a handler with an attempt counted").isZero();

			// Lifted for every consumer by the policy in the database; they drain the rest at once.
			this.database.jdbc().update("UPDATE pgqueue.queue SET rate_limit_permits = NULL, rate_limit_period_ms = NULL, "
					+ "rate_limit_per_key_permits = NULL, rate_limit_per_key_period_ms = NULL WHERE name = ?", queue);
			ChaosReport report = new Drain(this.database).drainAndCheck(perKey ? "rate-limit-per-key" : "rate-limit",
					sessions, queue, Drain.expect(producer.sent(), Outcome.ACKED));
			transactions.stop();
			report.assertPasses();
			assertThat(report.faulted()).as("deliveries hit by a kill").isPositive();
		}
	}

	private Timestamp now() {
		return this.database.jdbc().queryForObject("SELECT clock_timestamp()", Timestamp.class);
	}
}
