package io.github.pgqueue.reliability;

import java.time.Duration;
import java.util.List;
import java.util.Set;
import java.util.function.Consumer;

import io.github.pgqueue.testing.PgBouncer;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.MethodOrderer;
import org.junit.jupiter.api.Order;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestMethodOrder;

import static io.github.pgqueue.reliability.ChaosSettings.pick;
import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

/**
 * Transactional mode under the faults that end consumers mid-transaction: kill -9 of consumer
 * JVMs, terminated sessions, a PostgreSQL crash. Each handler writes the job's effect row in the
 * listener's transaction; the check is on those rows: every job took effect exactly once
 * ({@code duplicates} counts effect rows beyond the first of a job), none was lost, no lock is
 * left. {@code faulted} counts the handler runs whose transaction never committed.
 */
@TestMethodOrder(MethodOrderer.OrderAnnotation.class)
class TransactionalChaosIntegrationTests {

	private static final int RATE = pick(150, 300);

	private static final int WORK_MILLIS = 20;

	private static final Duration DRAIN_TIMEOUT = pick(Duration.ofMinutes(2), Duration.ofMinutes(5));

	private final ChaosDatabase database = ChaosDatabase.get();

	@BeforeEach
	void reset() {
		this.database.reset();
	}

	@Test
	@Order(1)
	void killNineOfTransactionalConsumersTakesEveryEffectExactlyOnce() {
		int consumers = pick(3, 4);
		run("tx-kill-9", "chaos-tx-kill", consumers, (fleet) -> {
			for (int i = 0; i < pick(4, 16); i++) {
				ChaosDatabase.pause(Duration.ofMillis(pick(2000, 2500)));
				ConsumerProcess victim = inTheMiddleOfWork(fleet);
				victim.kill();
				fleet.keepAlive(consumers);
			}
		});
	}

	@Test
	@Order(2)
	void terminatedTransactionsTakeEveryEffectExactlyOnce() {
		run("tx-pg-terminate-backend", "chaos-tx-terminate", pick(2, 3), (fleet) -> {
			int terminated = 0;
			for (int i = 0; i < pick(5, 30); i++) {
				ChaosDatabase.pause(Duration.ofMillis(1500));
				ConsumerProcess victim = inTheMiddleOfWork(fleet);
				terminated += this.database.faultSessions(victim.name(), "pg_terminate_backend", true);
				victim.resume();
			}
			assertThat(terminated).as("sessions terminated").isPositive();
		});
	}

	@Test
	@Order(3)
	void postgresCrashUnderTransactionalConsumersTakesEveryEffectExactlyOnce() {
		run("tx-postgres-restart", "chaos-tx-restart", 2, (fleet) -> {
			for (int i = 0; i < pick(1, 3); i++) {
				ChaosDatabase.pause(pick(Duration.ofSeconds(3), Duration.ofSeconds(8)));
				List<ConsumerProcess> consumers = fleet.ready();
				await().atMost(Duration.ofSeconds(30)).pollInterval(Duration.ofMillis(10))
					.until(() -> this.database.advisoryLocks() > 0);
				this.database.crashAndRestart(() -> ChaosDatabase.pause(pick(Duration.ofSeconds(2), Duration.ofSeconds(5))));
			}
		});
	}

	@Test
	@Order(4)
	void fifoGroupsKeepSendOrderWithoutOverlapThroughKillNine() {
		int consumers = pick(3, 4);
		run("tx-fifo-kill-9", "chaos-tx-fifo", consumers, (fleet) -> {
			for (int i = 0; i < pick(3, 10); i++) {
				ChaosDatabase.pause(Duration.ofMillis(pick(2000, 2500)));
				ConsumerProcess victim = inTheMiddleOfWork(fleet);
				victim.kill();
				fleet.keepAlive(consumers);
			}
		}, FIFO_GROUPS);
		// Per group, handler runs in the order they started (recorded by the database, one clock): a
		// key may run again (its consumer died) but no key may run once a later key has started.
		List<String> broken = this.database.jdbc().queryForList("""
				WITH runs AS (
				    SELECT key % ? AS grp, key,
				           max(key) OVER (PARTITION BY key % ? ORDER BY recorded_at, key
				                          ROWS BETWEEN UNBOUNDED PRECEDING AND 1 PRECEDING) AS latest
				      FROM chaos.delivery)
				SELECT 'group ' || grp || ': key ' || key || ' ran after key ' || latest
				  FROM runs WHERE key < latest""", String.class, FIFO_GROUPS, FIFO_GROUPS);
		long groupsSeen = this.database.count("SELECT count(DISTINCT key % ?) FROM chaos.delivery", FIFO_GROUPS);
		System.out.println("  FIFO groups checked: " + groupsSeen + "; runs out of order or overlapping: "
				+ broken.size() + (broken.isEmpty() ? "" : " " + broken.subList(0, Math.min(5, broken.size()))));
		assertThat(broken).as("runs out of send order (an overlap shows as one)").isEmpty();
		assertThat(groupsSeen).isEqualTo(FIFO_GROUPS);
	}

	/**
	 * Through PgBouncer in transaction pooling (the consumers' application DataSource, which runs
	 * their transactions; their listeners' own pool connects directly): consumers killed mid-batch
	 * and PgBouncer itself killed and started again, each cutting every transaction that runs
	 * through it.
	 */
	@Test
	@Order(5)
	void killNineAndPgBouncerRestartsThroughTransactionPoolingTakeEveryEffectExactlyOnce() {
		try (PgBouncer bouncer = PgBouncer.start(this.database.port(), 20)) {
			int consumers = pick(2, 3);
			int[] restarts = new int[1];
			run("tx-pgbouncer", "chaos-tx-pgbouncer", consumers, (fleet) -> {
				for (int i = 0; i < pick(2, 8); i++) {
					ChaosDatabase.pause(Duration.ofMillis(pick(1500, 2500)));
					ConsumerProcess victim = inTheMiddleOfWork(fleet);
					victim.kill();
					fleet.keepAlive(consumers);
					ChaosDatabase.pause(Duration.ofMillis(pick(1000, 2000)));
					// Mid-batch: some consumer's transaction holds messages through PgBouncer.
					await().atMost(Duration.ofSeconds(60)).pollInterval(Duration.ofMillis(10))
						.until(() -> fleet.ready().stream().anyMatch((c) -> this.database.claimsOf(c.name()) > 0));
					bouncer.restart();
					restarts[0]++;
				}
			}, 0, (spec) -> spec.throughPooler((name) -> bouncer.transactionPoolUrl("prepareThreshold=0&ApplicationName=" + name)));
			System.out.println("  PgBouncer restarts: " + restarts[0]);
		}
	}

	private static final int FIFO_GROUPS = 25;

	private void run(String scenario, String queue, int consumers, Consumer<ConsumerFleet> faults) {
		run(scenario, queue, consumers, faults, 0);
	}

	private void run(String scenario, String queue, int consumers, Consumer<ConsumerFleet> faults, int groups) {
		run(scenario, queue, consumers, faults, groups, (spec) -> {
		});
	}

	private void run(String scenario, String queue, int consumers, Consumer<ConsumerFleet> faults, int groups,
			Consumer<ConsumerSpec> customizer) {
		ConsumerSpec spec = ConsumerSpec.of(queue).batchSize(10)
			.property("pgqueue.queues." + queue + ".mode", "transactional");
		customizer.accept(spec);
		try (ConsumerFleet fleet = new ConsumerFleet(this.database, scenario.replace("-", ""), spec);
				Producer producer = new Producer(this.database, queue, (key) -> Job.of(key, WORK_MILLIS))) {
			if (groups > 0) {
				producer.inGroups((key) -> "g" + (key % groups));
			}
			fleet.start(consumers);
			producer.send(RATE);
			producer.startSending(RATE);
			faults.accept(fleet);
			producer.stopSending();
			try {
				this.database.queues().awaitDrained(queue, DRAIN_TIMEOUT);
			}
			catch (AssertionError ex) {
				// Not drained: the counts below show what is missing.
				System.out.println(ex.getMessage());
			}
			long locksLeft = this.database.awaitNoAdvisoryLocks(Duration.ofSeconds(5));
			fleet.stop();
			Set<Long> sent = producer.sent();
			EffectCount count = EffectCount.of(scenario, this.database, queue, sent);
			System.out.println(count.line(locksLeft));
			count.assertPasses(locksLeft);
			assertThat(count.rolledBack()).as("handler runs rolled back by the faults").isPositive();
		}
	}

	/** Stops a consumer at a moment one of its transactions holds messages. */
	private ConsumerProcess inTheMiddleOfWork(ConsumerFleet fleet) {
		ConsumerProcess[] frozen = new ConsumerProcess[1];
		await().atMost(Duration.ofSeconds(60)).pollInterval(Duration.ofMillis(20)).until(() -> {
			ConsumerProcess candidate = fleet.anyReady();
			if (this.database.claimsOf(candidate.name()) == 0) {
				return false;
			}
			candidate.pause();
			if (this.database.claimsOf(candidate.name()) == 0) {
				candidate.resume();
				return false;
			}
			frozen[0] = candidate;
			return true;
		});
		return frozen[0];
	}

}
