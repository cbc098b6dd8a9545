package io.github.pgqueue.reliability;

import java.time.Duration;
import java.util.Collection;
import java.util.LinkedHashMap;
import java.util.Map;

import io.github.pgqueue.QueueNames;

/**
 * The end of every scenario: wait until the queue is drained, measure the advisory locks while
 * the consumers still run, stop them gracefully, count, print.
 */
final class Drain {

	private static final Duration DRAIN_TIMEOUT = ChaosSettings.pick(Duration.ofMinutes(2), Duration.ofMinutes(5));

	private final ChaosDatabase database;

	Drain(ChaosDatabase database) {
		this.database = database;
	}

	/** The keys, each expected to end as {@code outcome}. */
	static Map<Long, Outcome> expect(Collection<Long> keys, Outcome outcome) {
		Map<Long, Outcome> expected = new LinkedHashMap<>();
		keys.forEach((key) -> expected.put(key, outcome));
		return expected;
	}

	/** Drains {@code queue} with {@code fleet}, stops it, and counts the scenario. */
	ChaosReport drainAndCheck(String scenario, ConsumerFleet fleet, String queue, Map<Long, Outcome> expected) {
		// A scenario whose keys must stay untouched ran no consumer: there is nothing to wait for.
		if (expected.values().stream().noneMatch((outcome) -> outcome == Outcome.UNTOUCHED)) {
			try {
				this.database.queues().awaitDrained(queue, DRAIN_TIMEOUT);
			}
			catch (AssertionError ex) {
				// Not drained: the count below shows what is missing, key by key.
				System.out.println(ex.getMessage());
			}
		}
		long locksLeft = this.database.awaitNoAdvisoryLocks(Duration.ofSeconds(5));
		if (fleet != null) {
			fleet.stop();
		}
		return new ChaosChecker(this.database)
			.check(scenario, expected, QueueNames.defaultDeadLetterQueue(queue), locksLeft)
			.print();
	}

}
