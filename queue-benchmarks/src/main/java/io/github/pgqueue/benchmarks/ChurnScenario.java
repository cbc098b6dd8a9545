package io.github.pgqueue.benchmarks;

import java.time.Duration;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.LongAdder;

/**
 * {@code churn}: pgqueue under the steady load for {@code churn-seconds} (default 180 s), the size
 * of its table with indexes and TOAST sampled every 2 s. "Steady size" is the median of the
 * samples after the first quarter of the run; the peak must stay under twice that.
 */
final class ChurnScenario {

	private static final long SAMPLE_MILLIS = 2_000;

	private final BenchContext context;

	ChurnScenario(BenchContext context) {
		this.context = context;
	}

	void run() {
		QueueSystem system = this.context.system("pgqueue");
		system.clear();
		BenchDatabase database = this.context.database();
		database.vacuumAnalyze(system);
		Duration duration = this.context.options().churn();
		long start = database.totalSize(system.table());
		List<Long> sizes = new ArrayList<>();
		long peakDead = 0;
		long peakPending = 0;
		LongAdder handled = new LongAdder();
		long sent;
		try (Consumers consumers = system.startConsumers(SteadyScenario.CONSUMERS, PgQueueSystem.DEFAULT_BATCH_SIZE,
				(n) -> handled.increment())) {
			List<long[]> samples = Collections.synchronizedList(new ArrayList<>());
			Thread probe = new Thread(() -> {
				while (!Thread.currentThread().isInterrupted()) {
					samples.add(new long[] { database.totalSize(system.table()), database.deadTuples(system.table()),
							system.pending() });
					try {
						Thread.sleep(SAMPLE_MILLIS);
					}
					catch (InterruptedException ex) {
						return;
					}
				}
			}, "churn-sampler");
			probe.start();
			sent = Producers.run(SteadyScenario.PRODUCERS, duration, this.context.options().steadyRate(), new AtomicLong(), 1,
					(first, count) -> system.send(first));
			probe.interrupt();
			try {
				probe.join();
			}
			catch (InterruptedException ex) {
				Thread.currentThread().interrupt();
			}
			for (long[] sample : samples) {
				sizes.add(sample[0]);
				peakDead = Math.max(peakDead, sample[1]);
				peakPending = Math.max(peakPending, sample[2]);
			}
		}
		long end = database.totalSize(system.table());
		long peak = Collections.max(sizes);
		List<Long> settled = new ArrayList<>(sizes.subList(sizes.size() / 4, sizes.size()));
		Collections.sort(settled);
		long steady = settled.get(settled.size() / 2);
		this.context.results()
			.add(new BenchRow("churn", system.name(), SteadyScenario.CONSUMERS,
					String.valueOf(PgQueueSystem.DEFAULT_BATCH_SIZE), handled.sum(), handled.sum() / (double) duration.toSeconds(),
					null, null, java.util.Map.of())
				.with("seconds", duration.toSeconds())
				.with("sent", sent)
				.with("size_start_kb", start / 1024)
				.with("size_steady_kb", steady / 1024)
				.with("size_peak_kb", peak / 1024)
				.with("size_end_kb", end / 1024)
				.with("peak_over_steady", (double) peak / steady)
				.with("dead_tuples_peak", peakDead)
				.with("pending_peak", peakPending));
		system.clear();
	}

}
