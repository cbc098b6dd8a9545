package io.github.pgqueue.reliability;

import java.sql.Timestamp;
import java.time.Duration;
import java.time.Instant;
import java.util.List;
import java.util.Map;

import org.junit.jupiter.api.Test;

import static io.github.pgqueue.reliability.ChaosSettings.pick;
import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

/**
 * A network partition: one consumer runs in a network namespace of the test's own and its link to
 * PostgreSQL goes down for 30 s in the middle of a batch, while two consumers on the host go on.
 * The server notices the silent peer by the TCP keepalive settings the consumers ask for on their
 * sessions, ends its session and so frees its messages; the consumer's acks, once the link is back,
 * find the session gone. Part of the full run only; skipped where no namespace can be made.
 */
class PartitionIntegrationTests {

	/**
	 * What the consumers ask of the server for their sessions (through the driver's {@code options}):
	 * probe a connection idle for 5 s every 2 s, give up after 3 unanswered probes, and never wait
	 * more than 10 s for an acknowledgement of what it sent.
	 */
	static final String KEEPALIVE_OPTIONS = "-c tcp_keepalives_idle=5 -c tcp_keepalives_interval=2 "
			+ "-c tcp_keepalives_count=3 -c tcp_user_timeout=10000";

	/** The bound the guide states for these settings: from the cut to the last held message reaching another consumer. */
	static final Duration HANDOVER_BOUND = Duration.ofSeconds(20);

	private static final Duration PARTITION = Duration.ofSeconds(30);

	private static final int RATE = pick(150, 300);

	@Test
	void consumerCutOffForThirtySecondsMidBatchHasItsMessagesTakenOverAndItsLateAcksRefused() {
		assumeTrue(ChaosSettings.full(), "The partition lasts 30 s: full run only (-Dchaos.full=true)");
		String unavailable = NetworkNamespace.unavailableBecause();
		assumeTrue(unavailable == null, () -> "Network partition scenario skipped: " + unavailable);
		String queue = "chaos-partition";
		try (NetworkNamespace namespace = NetworkNamespace.create();
				ScenarioServer server = ScenarioServer.initialize("partition", Map.of("listen_addresses",
						"localhost," + namespace.queueHost() + "," + namespace.recordHost()))) {
			server.allow("host all all " + namespace.cidr() + " trust");
			server.migrate();
			try (ChaosDatabase database = ChaosDatabase.on(server.jdbcUrl("localhost"), server.username());
					ConsumerFleet hosts = new ConsumerFleet(database, "partition", spec(queue));
					ConsumerFleet cutOff = new ConsumerFleet(database, "partition-ns", spec(queue).inside(namespace));
					Producer producer = new Producer(database, queue, (key) -> Job.of(key, 20))) {
				database.reset();
				producer.send(pick(1_500, 4_000));
				hosts.start(2);
				ConsumerProcess victim = cutOff.start(1).get(0);
				producer.startSending(RATE);
				ChaosDatabase.pause(Duration.ofSeconds(3));
				freezeWhileItHoldsClaims(database, victim);
				List<Long> held = database.jdbc().queryForList(
						"SELECT message_id FROM chaos.held_by(chaos.backends_of(?))", Long.class, victim.name());
				database.faultSessions(victim.name(), "partition", false);
				namespace.cut();
				Instant cut = now(database);
				victim.resume();
				Duration handover = awaitTakenOver(database, held, victim.name(), cut);
				Duration rest = Duration.between(now(database), cut.plus(PARTITION));
				ChaosDatabase.pause(rest.isNegative() ? Duration.ZERO : rest);
				namespace.heal();
				Instant healed = now(database);
				await().atMost(Duration.ofSeconds(90)).pollInterval(Duration.ofMillis(200))
					.until(() -> victim.output().contains("lost its database session"));
				await().atMost(Duration.ofSeconds(90)).pollInterval(Duration.ofMillis(200))
					.until(() -> database.count("SELECT count(*) FROM chaos.delivery WHERE consumer = ? AND recorded_at > ?",
							victim.name(), Timestamp.from(healed)) > 0);
				Duration back = Duration.between(healed, firstDeliveryAfter(database, victim.name(), healed));
				ChaosDatabase.pause(pick(Duration.ofSeconds(2), Duration.ofSeconds(5)));
				producer.stopSending();
				ChaosReport report = new Drain(database).drainAndCheck("partition", hosts, queue,
						Drain.expect(producer.sent(), Outcome.ACKED));
				cutOff.stop();
				long ackedByVictim = database.count("""
						SELECT count(*) FROM unnest(?::bigint[]) AS h(id)
						 WHERE NOT EXISTS (SELECT 1 FROM chaos.delivery d WHERE d.message_id = h.id AND d.consumer <> ?)""",
						held.toArray(new Long[0]), victim.name());
				System.out.println("  messages the cut-off consumer held: " + held.size()
						+ "; from the cut to the last of them delivered by another consumer: " + handover
						+ "; from the link coming back to the cut-off consumer's next delivery: " + back
						+ "; held messages acked by it after all: " + ackedByVictim);
				report.assertPasses();
				assertThat(held).as("messages the cut-off consumer held").isNotEmpty();
				assertThat(handover).as("time for its messages to reach other consumers").isLessThanOrEqualTo(HANDOVER_BOUND);
				assertThat(ackedByVictim).as("held messages its late acks removed").isZero();
				assertThat(database.heldIdsLeft()).as("ids left in pgqueue.holding").isZero();
			}
		}
	}

	private static ConsumerSpec spec(String queue) {
		return ConsumerSpec.of(queue).batchSize(10)
			.property("spring.datasource.hikari.data-source-properties.options", KEEPALIVE_OPTIONS);
	}

	/** Freezes {@code consumer} (SIGSTOP) at a moment its sessions hold claims and are idle. */
	private static void freezeWhileItHoldsClaims(ChaosDatabase database, ConsumerProcess consumer) {
		await().atMost(Duration.ofSeconds(60)).pollInterval(Duration.ofMillis(20)).until(() -> {
			if (database.claimsOf(consumer.name()) == 0) {
				return false;
			}
			consumer.pause();
			database.awaitIdle(consumer.name());
			if (database.claimsOf(consumer.name()) > 0) {
				return true;
			}
			consumer.resume();
			return false;
		});
	}

	/** Waits until every one of {@code held} is delivered by another consumer; returns how long after the cut. */
	private static Duration awaitTakenOver(ChaosDatabase database, List<Long> held, String victim, Instant cut) {
		String sql = """
				SELECT max(first) FROM (SELECT min(d.recorded_at) AS first FROM chaos.delivery d
				                         WHERE d.message_id = ANY (?::bigint[]) AND d.consumer <> ?
				                         GROUP BY d.message_id HAVING count(*) > 0) t
				HAVING count(*) = ?""";
		Timestamp[] last = new Timestamp[1];
		await().atMost(PARTITION).pollInterval(Duration.ofMillis(100)).until(() -> {
			List<Timestamp> found = database.jdbc().queryForList(sql, Timestamp.class, held.toArray(new Long[0]),
					victim, held.size());
			last[0] = found.isEmpty() ? null : found.get(0);
			return last[0] != null;
		});
		return Duration.between(cut, last[0].toInstant());
	}

	private static Instant firstDeliveryAfter(ChaosDatabase database, String consumer, Instant after) {
		return database.jdbc().queryForObject(
				"SELECT min(recorded_at) FROM chaos.delivery WHERE consumer = ? AND recorded_at > ?", Timestamp.class,
				consumer, Timestamp.from(after)).toInstant();
	}

	private static Instant now(ChaosDatabase database) {
		return database.jdbc().queryForObject("SELECT clock_timestamp()", Timestamp.class).toInstant();
	}

}
