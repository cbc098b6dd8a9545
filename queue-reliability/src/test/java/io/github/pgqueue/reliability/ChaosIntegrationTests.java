package io.github.pgqueue.reliability;

import java.time.Duration;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.MethodOrderer;
import org.junit.jupiter.api.Order;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestMethodOrder;

import static io.github.pgqueue.reliability.ChaosSettings.pick;
import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

/**
 * Faults that end consumer sessions while consumers, running as separate JVMs, work through a
 * steady stream of jobs: kill -9, terminated sessions, a PostgreSQL crash, and a session ended
 * between the handler's return and the ack. Each prints its {@code CHAOS} line.
 */
@TestMethodOrder(MethodOrderer.OrderAnnotation.class)
class ChaosIntegrationTests {

	private static final int RATE = pick(150, 300);

	/** Long enough that a consumer spends most of its time inside handlers. */
	private static final int WORK_MILLIS = 20;

	private final ChaosDatabase database = ChaosDatabase.get();

	private final Drain drain = new Drain(this.database);

	@BeforeEach
	void reset() {
		this.database.reset();
	}

	@Test
	@Order(1)
	void killNineOfConsumerJvmsInTheMiddleOfHandlersLosesNothing() {
		String queue = "chaos-kill";
		int kills = pick(4, 24);
		try (ConsumerFleet fleet = new ConsumerFleet(this.database, "kill9", ConsumerSpec.of(queue).batchSize(10));
				Producer producer = new Producer(this.database, queue, (key) -> Job.of(key, WORK_MILLIS))) {
			int consumers = pick(3, 5);
			fleet.start(consumers);
			producer.send(RATE);
			producer.startSending(RATE);
			for (int i = 0; i < kills; i++) {
				ChaosDatabase.pause(Duration.ofMillis(pick(2000, 2500)));
				ConsumerProcess victim = fleet.freezeOneHoldingMessages();
				this.database.faultSessions(victim.name(), "kill-9", false);
				victim.kill();
				fleet.keepAlive(consumers);
			}
			producer.stopSending();
			ChaosReport report = this.drain.drainAndCheck("kill-9", fleet, queue,
					Drain.expect(producer.sent(), Outcome.ACKED));
			report.assertPasses();
			assertThat(report.faulted()).as("deliveries hit by a kill").isPositive();
		}
	}

	@Test
	@Order(2)
	void terminatedConsumerSessionsDuringHandlingLoseNothing() {
		String queue = "chaos-terminate";
		int terminated = 0;
		try (ConsumerFleet fleet = new ConsumerFleet(this.database, "term", ConsumerSpec.of(queue).batchSize(10));
				Producer producer = new Producer(this.database, queue, (key) -> Job.of(key, WORK_MILLIS))) {
			fleet.start(pick(2, 4));
			producer.send(RATE);
			producer.startSending(RATE);
			for (int i = 0; i < pick(5, 40); i++) {
				ChaosDatabase.pause(Duration.ofMillis(1500));
				ConsumerProcess victim = fleet.freezeOneHoldingMessages();
				terminated += this.database.faultSessions(victim.name(), "pg_terminate_backend", true);
				victim.resume();
			}
			producer.stopSending();
			ChaosReport report = this.drain.drainAndCheck("pg-terminate-backend", fleet, queue,
					Drain.expect(producer.sent(), Outcome.ACKED));
			report.assertPasses();
			assertThat(terminated).as("sessions terminated").isGreaterThanOrEqualTo(pick(5, 40));
			assertThat(report.faulted()).as("deliveries hit by a termination").isPositive();
		}
	}

	@Test
	@Order(3)
	void postgresStoppedInImmediateModeAndRestartedUnderLoadLosesNothing() {
		String queue = "chaos-restart";
		Duration downtime = pick(Duration.ofSeconds(3), Duration.ofSeconds(8));
		Map<String, Double> cpuWhileDown = new LinkedHashMap<>();
		try (ConsumerFleet fleet = new ConsumerFleet(this.database, "restart", ConsumerSpec.of(queue).batchSize(10));
				Producer producer = new Producer(this.database, queue, (key) -> Job.of(key, WORK_MILLIS))) {
			fleet.start(pick(2, 3));
			producer.send(RATE);
			producer.startSending(RATE);
			for (int i = 0; i < pick(1, 4); i++) {
				ChaosDatabase.pause(pick(Duration.ofSeconds(3), Duration.ofSeconds(10)));
				List<ConsumerProcess> consumers = fleet.ready();
				await().atMost(Duration.ofSeconds(30)).pollInterval(Duration.ofMillis(10))
					.until(() -> this.database.advisoryLocks() > 0);
				this.database.crashAndRestart(() -> {
					cpuShares(consumers, downtime).forEach((name, share) -> cpuWhileDown.merge(name, share, Math::max));
					// Frozen while the server comes back, so that the claims the crash ended can be
					// written down before anyone claims them again.
					consumers.forEach(ConsumerProcess::pause);
				});
				this.database.faultEveryClaim("postgres-immediate-restart");
				consumers.forEach(ConsumerProcess::resume);
			}
			ChaosDatabase.pause(pick(Duration.ofSeconds(2), Duration.ofSeconds(10)));
			producer.stopSending();
			ChaosReport report = this.drain.drainAndCheck("postgres-restart", fleet, queue,
					Drain.expect(producer.sent(), Outcome.ACKED));
			System.out.println("  CPU share of each consumer while PostgreSQL was down: " + cpuWhileDown
					+ "; sends that failed and were resolved: " + producer.failedSends());
			report.assertPasses();
			assertThat(cpuWhileDown.values()).as("consumers busy-looping while the database is down")
				.allMatch((share) -> share < 0.25);
			assertThat(report.faulted()).as("deliveries hit by the crash").isPositive();
		}
	}

	@Test
	@Order(4)
	void sessionKilledAfterTheHandlerReturnedAndBeforeTheAckLosesNothing() {
		String queue = "chaos-before-ack";
		try (ConsumerFleet fleet = new ConsumerFleet(this.database, "beforeack", ConsumerSpec.of(queue).batchSize(5));
				Producer producer = new Producer(this.database, queue, (key) -> endsItsSession(key)
						? new Job(key, 2, Fault.TERMINATE_BEFORE_ACK.name()) : Job.of(key, 2))) {
			fleet.start(2);
			producer.startSending(RATE);
			ChaosDatabase.pause(pick(Duration.ofSeconds(4), Duration.ofSeconds(30)));
			producer.stopSending();
			ChaosReport report = this.drain.drainAndCheck("kill-before-ack", fleet, queue,
					Drain.expect(producer.sent(), Outcome.ACKED));
			report.assertPasses();
			long injected = this.database.count("SELECT count(*) FROM chaos.delivery WHERE fault = ?",
					Fault.TERMINATE_BEFORE_ACK.name());
			// A job that was in a batch behind another one that ended the session is first handled at
			// its second attempt, and then ends nothing.
			assertThat(injected).as("sessions ended before the ack").isPositive()
				.isLessThanOrEqualTo(producer.sent().stream().filter(ChaosIntegrationTests::endsItsSession).count());
			assertThat(report.faulted()).isGreaterThanOrEqualTo(injected);
		}
	}

	@Test
	@Order(5)
	void claimsCancelledOrTimedOutWhileTheirReCheckWaitsLeaveNoLockAndLoseNothing() throws Exception {
		String queue = "chaos-cancel";
		// lock_timeout ends claims that wait on a row lock by themselves; the rest are cancelled.
		ConsumerSpec spec = ConsumerSpec.of(queue).batchSize(10)
			.property("spring.datasource.hikari.connection-init-sql", "SET lock_timeout = '150ms'");
		int rounds = pick(15, 120);
		int cancelled = 0;
		try (ConsumerFleet fleet = new ConsumerFleet(this.database, "cancel", spec);
				Producer producer = new Producer(this.database, queue, (key) -> Job.of(key, 10));
				java.sql.Connection blocker = this.database.jdbc().getDataSource().getConnection()) {
			// A backlog, so that there are always messages no consumer holds yet for the blocker to lock.
			producer.send(pick(2_000, 15_000));
			fleet.start(2);
			producer.startSending(RATE);
			int namespace = (int) this.database.count("SELECT lock_namespace FROM pgqueue.setting");
			blocker.setAutoCommit(false);
			for (int i = 0; i < rounds; i++) {
				// Row-lock messages no consumer holds, taking their advisory lock for as long as that
				// takes so that no consumer can hold one meanwhile (then nothing of a consumer's but
				// its claims can wait on these rows), then let go of the advisory locks.
				try (java.sql.PreparedStatement lock = blocker.prepareStatement("""
						SELECT m.id FROM pgqueue.message m
						 WHERE m.id IN (SELECT id FROM pgqueue.message WHERE queue = ? AND visible_at <= now()
						                 ORDER BY id LIMIT 200)
						   AND pg_try_advisory_lock(?, m.id::bit(32)::int4)
						   FOR UPDATE OF m SKIP LOCKED""")) {
					lock.setString(1, queue);
					lock.setInt(2, namespace);
					lock.executeQuery().close();
				}
				try (java.sql.Statement unlock = blocker.createStatement()) {
					unlock.execute("SELECT pg_advisory_unlock_all()");
				}
				ChaosDatabase.pause(Duration.ofMillis(60));
				cancelled += (int) this.database.count("SELECT count(*) FILTER (WHERE pg_cancel_backend(pid)) "
						+ "FROM pg_stat_activity WHERE application_name LIKE 'cancel%' AND wait_event_type = 'Lock'");
				ChaosDatabase.pause(Duration.ofMillis(240));
				blocker.rollback();
				ChaosDatabase.pause(Duration.ofMillis(100));
			}
			producer.stopSending();
			ChaosReport report = this.drain.drainAndCheck("claim-cancelled", fleet, queue,
					Drain.expect(producer.sent(), Outcome.ACKED));
			System.out.println("  claims cancelled while their re-check waited: " + cancelled);
			report.assertPasses();
			assertThat(cancelled).as("claims cancelled").isPositive();
			assertThat(report.duplicates()).as("a failed claim held nothing to deliver twice").isZero();
		}
	}

	/** Whether the job of {@code key} ends its session: last or in the middle of a batch of 5. */
	private static boolean endsItsSession(long key) {
		return key % 20 == 0 || key % 20 == 13;
	}
	/** The share of one core each consumer uses over {@code window}. */
	private static Map<String, Double> cpuShares(List<ConsumerProcess> consumers, Duration window) {
		Map<ConsumerProcess, Duration> before = new LinkedHashMap<>();
		consumers.forEach((consumer) -> before.put(consumer, consumer.cpuTime()));
		ChaosDatabase.pause(window);
		Map<String, Double> shares = new LinkedHashMap<>();
		before.forEach((consumer, cpu) -> shares.put(consumer.name(),
				(double) consumer.cpuTime().minus(cpu).toMillis() / window.toMillis()));
		return shares;
	}

}
