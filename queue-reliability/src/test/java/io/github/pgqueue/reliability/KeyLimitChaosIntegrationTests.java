package io.github.pgqueue.reliability;

import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

import org.awaitility.core.ConditionTimeoutException;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

import static io.github.pgqueue.reliability.ChaosSettings.pick;
import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

/**
 * {@code key-limit}: a queue with a concurrency key ({@code tenant}) and at most 2 messages of one
 * key in flight, consumed by two consumer JVMs at once, one in {@code session} mode and one in
 * {@code transactional} mode, two pollers each claiming batches of 5, while jobs of 4 tenants
 * wait in a backlog and keep arriving. Session consumers are frozen while they hold messages
 * and killed with kill -9 (a new JVM takes their place). The handlers record when they start and
 * end; at no moment may more than 2 handlers of one tenant run at once across both JVMs (a handler
 * of a killed JVM counts as running until the kill). The slots of the killed sessions must come
 * back: after the last kill every tenant still has 2 handlers at once, the queue drains with
 * nothing lost, and no slot is left held. The reduced run kills twice over about 10 s, the full run
 * ({@code -Dchaos.full=true}) six times over about 60 s.
 */
class KeyLimitChaosIntegrationTests {

	private static final int TENANTS = 4;

	private static final int LIMIT = 2;

	private static final int RATE = pick(150, 200);

	private static final Duration WINDOW = pick(Duration.ofSeconds(10), Duration.ofSeconds(60));

	private final ChaosDatabase database = ChaosDatabase.get();

	@BeforeEach
	void reset() {
		this.database.reset();
	}

	@Test
	void noTenantHasMoreThanItsLimitInFlightAcrossTwoJvmsThroughKillNineAndNothingIsLost() {
		String queue = "chaos-keys";
		ConsumerSpec session = keyed(ConsumerSpec.of(queue), queue, LIMIT);
		ConsumerSpec transactional = keyed(ConsumerSpec.of(queue), queue, LIMIT)
			.property("pgqueue.queues." + queue + ".mode", "transactional");
		int kills = pick(2, 6);
		List<String> killed = new ArrayList<>();
		List<String> killedAt = new ArrayList<>();
		try (ConsumerFleet sessions = new ConsumerFleet(this.database, "keys-session", session);
				ConsumerFleet transactions = new ConsumerFleet(this.database, "keys-tx", transactional);
				Producer producer = new Producer(this.database, queue, (key) -> Job.of(key, 10))
					.withHeader("tenant", (key) -> "t" + (key % TENANTS))) {
			// Started first: they declare the queue's key, which the sends copy into each message.
			sessions.startOne();
			transactions.start(1);
			sessions.awaitReady(sessions.all().get(0));
			producer.send(pick(600, 2000));
			long unkeyed = unkeyed(queue);
			producer.startSending(RATE);
			long started = System.nanoTime();
			for (int i = 0; i < kills; i++) {
				ChaosDatabase.pause(WINDOW.dividedBy(kills + 1));
				ConsumerProcess victim = sessions.freezeOneInAHandler();
				this.database.faultSessions(victim.name(), "kill-9", false);
				// Frozen until the kill: its handlers count as running until now, and its slots are
				// held until after now (until its sessions end), so no other handler took them before.
				killedAt.add(now());
				killed.add(victim.name());
				victim.kill();
				sessions.keepAlive(1);
			}
			ChaosDatabase.pauseUntilEnd(WINDOW, started); // or stops the sends at once if the kills outlasted it
			producer.stopSending();
			unkeyed += unkeyed(queue);
			// Drained by the consumers still running, with the killed sessions' slots given back.
			this.database.queues().awaitDrained(queue, pick(Duration.ofMinutes(2), Duration.ofMinutes(5)));
			long slotsLeft = awaitNoSlots();
			String lastKill = killedAt.get(killedAt.size() - 1);
			Map<String, Long> overlap = maxRunningPerTenant(queue, killed, killedAt, null);
			Map<String, Long> overlapAfterKills = maxRunningPerTenant(queue, killed, killedAt, lastKill);
			List<String> beyond = beyondTheLimit(queue, killed, killedAt);
			long cutByKills = this.database.count("SELECT count(*) FROM chaos.delivery WHERE queue = ? "
					+ "AND ended_at IS NULL AND consumer = ANY (?::text[])", queue, killed.toArray(new String[0]));
			long unended = this.database.count("SELECT count(*) FROM chaos.delivery WHERE queue = ? AND ended_at IS NULL "
					+ "AND consumer <> ALL (?::text[])", queue, killed.toArray(new String[0]));
			ChaosReport report = new Drain(this.database).drainAndCheck("key-limit", sessions, queue,
					Drain.expect(producer.sent(), Outcome.ACKED));
			transactions.stop();
			System.out.printf("  key limit %d per key, %d tenants, %d kill -9: most handlers of one tenant at once %s, "
					+ "after the last kill %s; handlers ended by a kill %d, slots left %d, messages without a key %d%n",
					LIMIT, TENANTS, kills, overlap, overlapAfterKills, cutByKills, slotsLeft, unkeyed);
			beyond.forEach((line) -> System.out.println("  beyond the limit: " + line));
			report.assertPasses();
			assertThat(report.faulted()).as("deliveries hit by a kill").isPositive();
			assertThat(unkeyed).as("messages sent without the tenant's key").isZero();
			assertThat(unended).as("handlers of live consumers that never ended").isZero();
			assertThat(overlap).as("most handlers of one tenant at once").hasSize(TENANTS);
			assertThat(overlap.values()).as("most handlers of one tenant at once, per tenant; first moments beyond: %s",
					beyond)
				.allSatisfy((n) -> assertThat(n).isLessThanOrEqualTo(LIMIT));
			assertThat(overlapAfterKills.values()).as("most handlers of one tenant at once after the last kill")
				.hasSize(TENANTS)
				.allSatisfy((n) -> assertThat(n).isEqualTo(LIMIT));
			assertThat(slotsLeft).as("slots held once the queue was drained").isZero();
		}
	}

	/** Consumers of {@code queue} keyed by the {@code tenant} header, {@code limit} per key, batches of 5. */
	private static ConsumerSpec keyed(ConsumerSpec spec, String queue, int limit) {
		return spec.batchSize(5)
			.concurrency(2)
			.property("chaos.record-ends", "true")
			.property("pgqueue.queues." + queue + ".concurrency-key", "tenant")
			.property("pgqueue.queues." + queue + ".max-in-flight-per-key", Integer.toString(limit));
	}

	/**
	 * Per tenant, the most handlers that ran at once (one clock: the database's), counting each
	 * handler from its start to its end, or to the kill of its JVM if it never ended there; of the
	 * handlers that started after {@code from} only, unless it is null. Ends sort before starts at
	 * the same instant.
	 */
	private Map<String, Long> maxRunningPerTenant(String queue, List<String> killed, List<String> killedAt,
			String from) {
		Map<String, Long> most = new LinkedHashMap<>();
		this.database.jdbc().query("""
				WITH kills AS (
				    SELECT * FROM unnest(?::text[], ?::timestamptz[]) AS k(consumer, killed_at)),
				runs AS (
				    SELECT 't' || (d.key % ?) AS tenant, d.recorded_at AS started,
				           COALESCE(d.ended_at, k.killed_at) AS ended
				      FROM chaos.delivery d LEFT JOIN kills k ON k.consumer = d.consumer
				     WHERE d.queue = ? AND d.recorded_at >= COALESCE(?::timestamptz, '-infinity')),
				events AS (
				    SELECT tenant, started AS at, 1 AS delta FROM runs WHERE ended IS NOT NULL
				    UNION ALL
				    SELECT tenant, ended, -1 FROM runs WHERE ended IS NOT NULL),
				running AS (
				    SELECT tenant, sum(delta) OVER (PARTITION BY tenant ORDER BY at, delta ROWS UNBOUNDED PRECEDING) AS n
				      FROM events)
				SELECT tenant, max(n) AS most FROM running GROUP BY tenant ORDER BY tenant""",
				(rs) -> {
					most.put(rs.getString("tenant"), rs.getLong("most"));
				}, killed.toArray(new String[0]), killedAt.toArray(new String[0]), TENANTS, queue, from);
		return most;
	}

	/** Messages of {@code queue} that are waiting without a concurrency key. */
	private long unkeyed(String queue) {
		return this.database.count("SELECT count(*) FROM pgqueue.message WHERE queue = ? AND concurrency_key IS NULL",
				queue);
	}

	/**
	 * The first moments (up to 5) at which more than {@link #LIMIT} handlers of one tenant ran, each
	 * with those handlers: message, attempt, consumer, thread, start and end (or kill), and the faults
	 * that ended its earlier attempts.
	 */
	private List<String> beyondTheLimit(String queue, List<String> killed, List<String> killedAt) {
		return this.database.jdbc().queryForList("""
				WITH kills AS (
				    SELECT * FROM unnest(?::text[], ?::timestamptz[]) AS k(consumer, killed_at)),
				runs AS (
				    SELECT 't' || (d.key % ?) AS tenant, d.message_id, d.attempt, d.consumer, d.thread, d.ended_at,
				           d.recorded_at AS started, COALESCE(d.ended_at, k.killed_at) AS ended,
				           (SELECT string_agg(f.reason || ' of attempt ' || f.attempt, ', ') FROM chaos.fault f
				             WHERE f.message_id = d.message_id AND f.attempt < d.attempt) AS faults_before
				      FROM chaos.delivery d LEFT JOIN kills k ON k.consumer = d.consumer
				     WHERE d.queue = ?),
				events AS (
				    SELECT tenant, started AS at, 1 AS delta FROM runs WHERE ended IS NOT NULL
				    UNION ALL
				    SELECT tenant, ended, -1 FROM runs WHERE ended IS NOT NULL),
				running AS (
				    SELECT tenant, at, delta,
				           sum(delta) OVER (PARTITION BY tenant ORDER BY at, delta ROWS UNBOUNDED PRECEDING) AS n
				      FROM events),
				worst AS (
				    SELECT tenant, at FROM running WHERE n > ? AND delta = 1 ORDER BY at LIMIT 5)
				SELECT format('%s at %s: %s', w.tenant, w.at,
				              string_agg(format('message %s attempt %s by %s/%s from %s to %s%s%s', r.message_id,
				                                r.attempt, r.consumer, r.thread, r.started::time, r.ended::time,
				                                CASE WHEN r.ended_at IS NULL THEN ' (killed)' ELSE '' END,
				                                CASE WHEN r.faults_before IS NOT NULL
				                                     THEN ' (after ' || r.faults_before || ')' ELSE '' END),
				                         '; ' ORDER BY r.started))
				  FROM worst w JOIN runs r ON r.tenant = w.tenant AND r.started <= w.at AND r.ended > w.at
				 GROUP BY w.tenant, w.at ORDER BY w.at""", String.class, killed.toArray(new String[0]),
				killedAt.toArray(new String[0]), TENANTS, queue, LIMIT);
	}

	/**
	 * Waits up to 5 s for the slots (advisory locks of the single-bigint form in pgqueue's lock
	 * namespace) to be given back and returns how many are still held.
	 */
	private long awaitNoSlots() {
		String slots = """
				SELECT count(*) FROM pg_locks
				 WHERE locktype = 'advisory' AND objsubid = 1
				   AND classid = 'pgqueue.message'::regclass::oid""";
		try {
			await().atMost(Duration.ofSeconds(5)).pollInterval(Duration.ofMillis(50))
				.until(() -> this.database.count(slots) == 0);
		}
		catch (ConditionTimeoutException ex) {
			// Reported and asserted by the caller.
		}
		return this.database.count(slots);
	}

	/** The database's clock, as text with its offset (the clock the deliveries are recorded by). */
	private String now() {
		return this.database.jdbc().queryForObject("SELECT clock_timestamp()::text", String.class);
	}
}
