package io.github.pgqueue.benchmarks;

import java.time.Duration;
import java.util.concurrent.atomic.LongAdder;

/** Times consumers working through a backlog that is already in the table. */
final class Drain {

	private Drain() {
	}

	/** Makes the system's backlog {@code size} ready messages, then vacuums and analyzes its table. */
	static void prepare(BenchContext context, QueueSystem system, int size) {
		long pending = system.pending();
		if (pending < size) {
			system.preload((int) (size - pending), Duration.ZERO);
		}
		context.database().vacuumAnalyze(system.table());
	}

	/**
	 * Starts consumers and waits until they have handled {@code target} messages or {@code cap}
	 * has passed; returns how many they handled and in how long. Fails if they handled none: a
	 * system whose consumers fail has no rate to report.
	 */
	static Outcome run(QueueSystem system, int concurrency, int batchSize, long target, Duration cap) {
		LongAdder handled = new LongAdder();
		long started = System.nanoTime();
		long deadline = started + cap.toNanos();
		long count;
		long finished;
		try (Consumers consumers = system.startConsumers(concurrency, batchSize, (n) -> handled.increment())) {
			do {
				BenchContext.pause(5);
				count = handled.sum();
				finished = System.nanoTime();
			}
			while (count < target && finished < deadline);
		}
		if (count == 0) {
			throw new IllegalStateException("The consumers of " + system.name() + " (" + concurrency + " x batch "
					+ batchSize + ") handled no message in " + cap.toSeconds() + " s; see the errors logged above");
		}
		return new Outcome(count, (finished - started) / 1e9);
	}

	/** {@code messages} handled in {@code seconds}. */
	record Outcome(long messages, double seconds) {

		double rate() {
			return this.messages / this.seconds;
		}

	}

}
