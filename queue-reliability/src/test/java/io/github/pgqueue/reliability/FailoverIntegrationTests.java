package io.github.pgqueue.reliability;

import java.sql.Timestamp;
import java.time.Duration;
import java.time.Instant;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

import org.junit.jupiter.api.Test;

import static io.github.pgqueue.reliability.ChaosSettings.pick;
import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

/**
 * Failover: consumers drain a queue on a primary with a synchronous streaming standby; the primary
 * is killed in the middle of their batches and the standby promoted. The consumers, the producer
 * and the harness connect with one multi-host URL ({@code targetServerType=primary}) and find the
 * new primary by themselves. Part of the full run only (it builds two servers of its own).
 */
class FailoverIntegrationTests {

	/** The bound the guide states: from the promotion to every listener delivering again. */
	static final Duration RESUME_BOUND = Duration.ofSeconds(20);

	private static final int RATE = pick(150, 300);

	@Test
	void primaryKilledMidDrainAndStandbyPromotedLosesNothingAndListenersResumeByThemselves() {
		assumeTrue(ChaosSettings.full(), "Failover builds a primary and a standby of its own: full run only "
				+ "(-Dchaos.full=true)");
		String queue = "chaos-failover";
		int consumers = 3;
		try (ReplicatedPair pair = ReplicatedPair.start();
				ChaosDatabase database = ChaosDatabase.on(pair.multiHostUrl(), pair.primary().username());
				ConsumerFleet fleet = new ConsumerFleet(database, "failover", ConsumerSpec.of(queue).batchSize(10));
				Producer producer = new Producer(database, queue, (key) -> Job.of(key, 20))) {
			database.reset();
			producer.send(pick(1_500, 6_000));
			fleet.start(consumers);
			producer.startSending(RATE);
			ChaosDatabase.pause(Duration.ofSeconds(3));
			List<ConsumerProcess> running = fleet.ready();
			await().atMost(Duration.ofSeconds(30)).pollInterval(Duration.ofMillis(10))
				.until(() -> database.advisoryLocks() > 0);
			// Frozen while their claims are written down (the record reaches the standby before the
			// commit returns), then the primary dies under them and they go on by themselves.
			running.forEach(ConsumerProcess::pause);
			running.forEach((consumer) -> database.awaitIdle(consumer.name()));
			long held = database.advisoryLocks();
			database.faultEveryClaim("failover");
			pair.primary().kill();
			running.forEach(ConsumerProcess::resume);
			ChaosDatabase.pause(Duration.ofSeconds(2));
			Instant promoted = pair.promote();
			database.reconnect();
			Map<String, Duration> resumed = awaitEveryConsumerDelivers(database, running, promoted);
			ChaosDatabase.pause(pick(Duration.ofSeconds(3), Duration.ofSeconds(10)));
			producer.stopSending();
			ChaosReport report = new Drain(database).drainAndCheck("failover", fleet, queue,
					Drain.expect(producer.sent(), Outcome.ACKED));
			long heldIdsLeft = database.heldIdsLeft();
			System.out.println("  claims held when the primary was killed: " + held
					+ "; from the promotion to each listener's first delivery: " + resumed
					+ "; sends that failed and were resolved: " + producer.failedSends()
					+ "; ids left in pgqueue.holding: " + heldIdsLeft);
			report.assertPasses();
			assertThat(held).as("claims the kill hit").isPositive();
			assertThat(report.faulted()).as("deliveries hit by the failover").isPositive();
			assertThat(heldIdsLeft).as("ids left in pgqueue.holding after the drain").isZero();
			assertThat(resumed.values()).as("time from the promotion to each listener's first delivery")
				.allMatch((delay) -> delay.compareTo(RESUME_BOUND) <= 0);
		}
	}

	/** Waits until each consumer has delivered on the new primary; returns how long after the promotion. */
	private static Map<String, Duration> awaitEveryConsumerDelivers(ChaosDatabase database,
			List<ConsumerProcess> consumers, Instant promoted) {
		Map<String, Duration> resumed = new LinkedHashMap<>();
		await().atMost(Duration.ofSeconds(90)).pollInterval(Duration.ofMillis(200)).ignoreExceptions().until(() -> {
			for (ConsumerProcess consumer : consumers) {
				Timestamp first = database.jdbc().queryForObject(
						"SELECT min(recorded_at) FROM chaos.delivery WHERE consumer = ? AND recorded_at > ?",
						Timestamp.class, consumer.name(), Timestamp.from(promoted));
				if (first != null) {
					resumed.put(consumer.name(), Duration.between(promoted, first.toInstant()));
				}
			}
			return resumed.size() == consumers.size();
		});
		return resumed;
	}

}
