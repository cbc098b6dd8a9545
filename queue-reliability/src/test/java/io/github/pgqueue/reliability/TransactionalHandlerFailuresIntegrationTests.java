package io.github.pgqueue.reliability;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.Set;
import java.util.TreeMap;
import java.util.concurrent.ConcurrentHashMap;

import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

import static io.github.pgqueue.reliability.ChaosSettings.pick;
import static org.assertj.core.api.Assertions.assertThat;

/**
 * Transactional mode with handlers that fail now and then, no other fault: a failure rolls the
 * batch's transaction back to a savepoint, and every handler whose writes that undid must run
 * again or leave its message unacked. Two consumer JVMs of two pollers each, one claiming batches
 * of 10 and one of 100, drain a backlog in which {@value #FAILING_PERCENT} % of the jobs, chosen
 * at random, throw on their first attempt after writing their effect row. Each handler writes the
 * job's effect in the listener's transaction; every job must take effect exactly once (checked on
 * those rows, as {@link TransactionalChaosIntegrationTests} does), none be lost or dead-lettered.
 * {@code faulted} counts the handler runs whose writes were rolled back: the failures and the
 * runs of their neighbours that were undone with them.
 */
class TransactionalHandlerFailuresIntegrationTests {

	private static final String SCENARIO = "tx-handler-failures";

	private static final int JOBS = pick(3_000, 24_000);

	private static final int FAILING_PERCENT = 2;

	private static final Duration DRAIN_TIMEOUT = pick(Duration.ofMinutes(2), Duration.ofMinutes(5));

	private final ChaosDatabase database = ChaosDatabase.get();

	@BeforeEach
	void reset() {
		this.database.reset();
	}

	@Test
	void handlersFailingOnceAtRandomTakeEveryEffectExactlyOnce() {
		String queue = "chaos-tx-failures";
		long seed = Long.getLong("chaos.seed", System.nanoTime());
		Random random = new Random(seed);
		Set<Long> failing = ConcurrentHashMap.newKeySet();
		try (ConsumerFleet tens = new ConsumerFleet(this.database, "txhandlerfailures-b10", spec(queue, 10));
				ConsumerFleet hundreds = new ConsumerFleet(this.database, "txhandlerfailures-b100", spec(queue, 100));
				Producer producer = new Producer(this.database, queue, (key) -> {
					if (random.nextInt(100) < FAILING_PERCENT) {
						failing.add(key);
						return new Job(key, 0, Fault.THROW_ONCE.name());
					}
					return Job.of(key, 0);
				})) {
			// Both JVMs start at once; the backlog goes in while they poll.
			ConsumerProcess ten = tens.startOne();
			ConsumerProcess hundred = hundreds.startOne();
			tens.awaitReady(ten);
			hundreds.awaitReady(hundred);
			producer.send(JOBS);
			try {
				this.database.queues().awaitDrained(queue, DRAIN_TIMEOUT);
			}
			catch (AssertionError ex) {
				// Not drained: the counts below show what is missing.
				System.out.println(ex.getMessage());
			}
			long locksLeft = this.database.awaitNoAdvisoryLocks(Duration.ofSeconds(5));
			tens.stop();
			hundreds.stop();

			Set<Long> sent = producer.sent();
			Map<Long, Long> effects = new TreeMap<>();
			this.database.jdbc().query("SELECT key, count(*) FROM chaos.effect GROUP BY key",
					(rs) -> {
						effects.put(rs.getLong(1), rs.getLong(2));
					});
			List<Long> lost = sent.stream().filter((key) -> !effects.containsKey(key)).toList();
			List<String> doubled = new ArrayList<>();
			effects.forEach((key, count) -> {
				if (count > 1) {
					doubled.add(key + " x" + count);
				}
			});
			long duplicates = effects.values().stream().mapToLong((count) -> count - 1).sum();
			long unexpected = effects.keySet().stream().filter((key) -> !sent.contains(key)).count();
			long runs = this.database.count("SELECT count(*) FROM chaos.delivery");
			long injected = this.database.count("SELECT count(*) FROM chaos.delivery WHERE fault = ?",
					Fault.THROW_ONCE.name());
			long deadLettered = this.database.queues().deadLetters(queue, Object.class).size();
			List<String> problems = new ArrayList<>();
			if (!lost.isEmpty()) {
				problems.add("jobs acked without their effect (first 20): " + lost.subList(0, Math.min(20, lost.size())));
			}
			if (!doubled.isEmpty()) {
				problems.add("jobs that took effect more than once (first 20): "
						+ doubled.subList(0, Math.min(20, doubled.size())));
			}
			new ChaosReport(SCENARIO, sent.size(), effects.size() - unexpected, lost.size(), unexpected, duplicates,
					runs - effects.size() - duplicates, locksLeft, 0, problems).print();
			System.out.printf("  jobs failing once: %d of %d (%.1f %%, seed %d); first attempts that threw: %d; "
					+ "handler runs: %d%n", failing.size(), sent.size(), 100.0 * failing.size() / sent.size(), seed,
					injected, runs);
			assertThat(lost).as("jobs acked without their effect (seed %d)", seed).isEmpty();
			assertThat(doubled).as("jobs that took effect more than once (seed %d)", seed).isEmpty();
			assertThat(unexpected).as("effects of jobs never sent").isZero();
			assertThat(effects.keySet()).as("every job took effect").containsAll(sent);
			assertThat(deadLettered).as("dead-lettered jobs").isZero();
			assertThat(locksLeft).as("advisory locks left").isZero();
			assertThat(injected).as("first attempts that threw").isGreaterThanOrEqualTo(failing.size()).isPositive();
		}
	}

	/** A consumer JVM of two transactional pollers claiming {@code batchSize} messages at a time. */
	private static ConsumerSpec spec(String queue, int batchSize) {
		return ConsumerSpec.of(queue).concurrency(2).batchSize(batchSize)
			.property("pgqueue.queues." + queue + ".mode", "transactional");
	}

}
