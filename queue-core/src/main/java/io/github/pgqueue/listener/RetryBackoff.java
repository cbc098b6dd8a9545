package io.github.pgqueue.listener;

import java.time.Duration;
import java.util.concurrent.ThreadLocalRandom;

/**
 * Bounded exponential back-off with jitter for reconnecting after a database outage, so that
 * many pollers neither busy-loop nor reconnect in lock step.
 */
final class RetryBackoff {

	private static final long INITIAL_MS = 100;

	private static final long MAX_MS = 15_000;

	private long nextMs = INITIAL_MS;

	/** The pause before the next try; doubles each time up to the maximum. */
	Duration next() {
		long base = this.nextMs;
		this.nextMs = Math.min(MAX_MS, this.nextMs * 2);
		return Duration.ofMillis(base + ThreadLocalRandom.current().nextLong(base / 2 + 1));
	}

	void reset() {
		this.nextMs = INITIAL_MS;
	}

}
