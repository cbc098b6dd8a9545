package io.github.pgqueue.benchmarks;

import java.util.function.BooleanSupplier;
import java.util.function.LongSupplier;

/**
 * The warm-up before a measurement: the scenario's own load runs in half-second slices that are not
 * measured, at least {@link BenchOptions#warmUpMin()} and until two slices in a row run within
 * 15 % of each other's rate (the JIT, the pools and the prepared statements have settled), but no
 * longer than {@link BenchOptions#warmUpMax()}.
 */
final class WarmUp {

	static final long SLICE_MILLIS = 500;

	/** How far apart the rates of two slices in a row may be for the load to count as steady. */
	static final double STEADY = 0.15;

	private WarmUp() {
	}

	/**
	 * Runs {@code slice} (one slice of load, returning how many messages it handled) until the rate
	 * is steady, the longest warm-up has passed, or {@code exhausted} says the load cannot go on;
	 * returns the rate of the last slice, in messages per second, and how long the warm-up took.
	 */
	static Result untilSteady(BenchOptions options, LongSupplier slice, BooleanSupplier exhausted) {
		long started = System.nanoTime();
		long min = options.warmUpMin().toNanos();
		long max = options.warmUpMax().toNanos();
		double previous = -1;
		while (true) {
			long sliceStarted = System.nanoTime();
			long handled = slice.getAsLong();
			long now = System.nanoTime();
			double rate = handled / ((now - sliceStarted) / 1e9);
			boolean steady = previous > 0 && Math.abs(rate - previous) <= STEADY * Math.max(rate, previous);
			previous = rate;
			long elapsed = now - started;
			if (elapsed >= max || (elapsed >= min && steady) || exhausted.getAsBoolean()) {
				return new Result(rate, elapsed / 1e9);
			}
		}
	}

	/** The rate of the warm-up's last slice, and how long the warm-up took. */
	record Result(double rate, double seconds) {
	}

}
