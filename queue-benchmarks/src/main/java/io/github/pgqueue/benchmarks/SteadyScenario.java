package io.github.pgqueue.benchmarks;

import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.LongAdder;

/**
 * {@code steady}: two producer threads sending single messages flat out while four consumer
 * threads (pgqueue's default batch size) handle them, for 60 s. The rate reported is the rate out;
 * the rate in and what was left unhandled are extra columns. Latency: send commit to handler start,
 * over the messages handled by 15 s after the producers stopped. Before it is measured, each system
 * runs the same load until its rate out is steady (see {@link WarmUp}); those messages, numbered
 * apart, are handled before the measured run starts and are not counted.
 */
final class SteadyScenario {

	static final int PRODUCERS = 2;

	static final int CONSUMERS = 4;

	/** The start of the run left out of the p99 after warm-up (consumers' connections, plans, JIT). */
	static final long WARM_UP_NANOS = 5_000_000_000L;

	/** The first sequence number of the warm-up's messages: negative, so that latencies leave them out. */
	static final long WARM_UP_FIRST = -1_000_000_000L;

	/** A latency counted as slow in the breakdown of the tail by second. */
	static final long SLOW_MILLIS = 100;

	private final BenchContext context;

	SteadyScenario(BenchContext context) {
		this.context = context;
	}

	void run() {
		for (QueueSystem system : this.context.systems()) {
			this.context.results().add(measure(system, "steady", this.context.options().steady()));
		}
		this.context.results().ratios("steady");
	}

	/**
	 * Measures {@code system} under the steady load for {@code duration} (after its warm-up) and
	 * returns its row, named {@code scenario}; empties the system's queue before and after.
	 */
	BenchRow measure(QueueSystem system, String scenario, java.time.Duration duration) {
		system.clear();
		this.context.database().vacuumAnalyze(system);
		int batchSize = system.claimsInBatches() ? PgQueueSystem.DEFAULT_BATCH_SIZE : 1;
		Latencies latencies = new Latencies(4_000_000);
		LongAdder handled = new LongAdder();
		LongAdder warmUpHandled = new LongAdder();
		long sent;
		long out;
		long started;
		double seconds;
		WarmUp.Result warmUp;
		try (Consumers consumers = system.startConsumers(CONSUMERS, batchSize, (n) -> {
			if (n < 0) {
				warmUpHandled.increment();
				return;
			}
			latencies.started(n);
			handled.increment();
		})) {
			warmUp = warmUp(system, warmUpHandled);
			started = System.nanoTime();
			sent = Producers.run(PRODUCERS, duration, this.context.options().steadyRate(),
					new AtomicLong(), 1, (first, count) -> {
				system.send(first);
				latencies.committed(first);
			});
			out = handled.sum();
			seconds = (System.nanoTime() - started) / 1e9;
			long deadline = System.nanoTime() + 15_000_000_000L;
			while (handled.sum() < sent && System.nanoTime() < deadline) {
				BenchContext.pause(10);
			}
		}
		Latencies.Summary summary = latencies.summarize();
		Latencies.Tail tail = latencies.tail(started, WARM_UP_NANOS, SLOW_MILLIS, 5);
		BenchRow row = new BenchRow(scenario, system.name(), CONSUMERS, String.valueOf(batchSize), out, out / seconds,
					summary.p50Millis(), summary.p99Millis(), java.util.Map.of())
				.with("producers", PRODUCERS)
				.with("warm_up_s", warmUp.seconds())
				.with("target_in_msgs_per_s", this.context.options().steadyRate())
				.with("in_msgs_per_s", sent / seconds)
				.with("unhandled", Math.max(0, sent - summary.count()))
				.with("p99_after_5s_ms", tail.p99AfterWarmUpMillis())
				.with("over_100ms", tail.slow())
				.with("seconds_most_over_100ms", tail.slowestSeconds());
		system.clear();
		return row;
	}

	/**
	 * Runs the load, numbered from {@link #WARM_UP_FIRST} up, until the rate out is steady, then
	 * waits (up to 10 s) for its messages to be handled.
	 */
	private WarmUp.Result warmUp(QueueSystem system, LongAdder handled) {
		AtomicLong sequence = new AtomicLong(WARM_UP_FIRST);
		long[] seen = { 0 };
		WarmUp.Result result = WarmUp.untilSteady(this.context.options(), () -> {
			Producers.run(PRODUCERS, java.time.Duration.ofMillis(WarmUp.SLICE_MILLIS),
					this.context.options().steadyRate(), sequence, 1, (first, count) -> system.send(first));
			long now = handled.sum();
			long slice = now - seen[0];
			seen[0] = now;
			return slice;
		}, () -> false);
		long deadline = System.nanoTime() + 10_000_000_000L;
		while (handled.sum() < sequence.get() - WARM_UP_FIRST && System.nanoTime() < deadline) {
			BenchContext.pause(10);
		}
		return result;
	}

}
