package io.github.pgqueue.reliability;

import java.time.Duration;
import java.util.Collection;
import java.util.LinkedHashMap;
import java.util.Map;

import io.github.pgqueue.QueueNames;
import org.awaitility.core.ConditionTimeoutException;

import static org.awaitility.Awaitility.await;

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
		long untouched = expected.values().stream().filter((outcome) -> outcome == Outcome.UNTOUCHED).count();
		try {
			await().atMost(DRAIN_TIMEOUT).pollInterval(Duration.ofMillis(100))
				.until(() -> this.database.pending(queue) <= untouched);
		}
		catch (ConditionTimeoutException ex) {
			// Not drained: the count below shows what is missing, key by key.
			System.out.println("Queue " + queue + " was not drained within " + DRAIN_TIMEOUT + ": "
					+ this.database.pending(queue) + " messages left");
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
