package io.github.pgqueue.benchmarks;

import java.util.ArrayList;
import java.util.List;
import java.util.Locale;

/**
 * {@code drain}: a backlog of tiny messages and a no-op listener, with 1 and 4 consumer threads and
 * batch sizes 10 (pgqueue's default) and 100. Before each system and configuration is timed, its
 * consumers warm up on a backlog of their own until their rate is steady; the timed drain then lasts
 * {@code drain-seconds} (3 s in quick mode, 6 s in full), from a backlog sized by that rate to
 * outlast it (see {@link Drain#measure}). The full run times it three times and reports the median,
 * with the range in {@code min}/{@code max}.
 * {@code pgqueue-tx-fifo} has the backlog spread over 1 000 FIFO groups (see also
 * {@link FifoGroupsScenario}).
 * <p>
 * Besides pgqueue's ratios, the scenario prints how {@code raw-sql} (one generic plan per
 * connection) fares against {@code raw-sql-planned} (planned per call), and how much each system
 * gains from one consumer to four, next to what the limit gains in the same run.
 */
final class DrainScenario {

	private static final int[] CONCURRENCY = { 1, 4 };

	private static final int[] BATCH_SIZES = { PgQueueSystem.DEFAULT_BATCH_SIZE, 100 };

	/** A system's next configuration may run this many times as fast as the fastest one so far. */
	private static final double GUESS_FACTOR = 2;

	private final BenchContext context;

	DrainScenario(BenchContext context) {
		this.context = context;
	}

	void run() {
		for (QueueSystem system : this.context.allSystems()) {
			system.clear();
			double guess = Drain.FIRST_GUESS;
			for (int concurrency : CONCURRENCY) {
				for (int batchSize : system.claimsInBatches() ? BATCH_SIZES : new int[] { 1 }) {
					WarmUp.Result warmUp = Drain.warmUp(this.context, system, concurrency, batchSize, guess);
					Drain.Runs runs = Drain.measure(this.context, system, concurrency, batchSize, warmUp.rate());
					Drain.Outcome median = runs.median();
					BenchRow row = BenchRow
						.throughput("drain", system.name(), concurrency, String.valueOf(batchSize), median.messages(),
								runs.medianRate())
						.with("backlog", runs.backlog())
						.with("seconds", median.seconds())
						.with("warm_up_s", warmUp.seconds())
						.with("runs", runs.outcomes().size());
					if (runs.outcomes().size() > 1) {
						row = row.with("min", BenchRow.format(runs.minRate(), 1))
							.with("max", BenchRow.format(runs.maxRate(), 1));
					}
					this.context.results().add(row);
					guess = Math.max(guess, GUESS_FACTOR * runs.maxRate());
				}
			}
			system.clear();
		}
		this.context.results().ratios("drain");
		limitRatios();
		scaling();
	}

	/** {@code raw-sql} over {@code raw-sql-planned} per configuration, and which is faster. */
	private void limitRatios() {
		Results results = this.context.results();
		int faster = 0;
		int compared = 0;
		for (int concurrency : CONCURRENCY) {
			for (int batchSize : BATCH_SIZES) {
				BenchRow generic = results.find("drain", "raw-sql", concurrency, String.valueOf(batchSize));
				BenchRow planned = results.find("drain", "raw-sql-planned", concurrency, String.valueOf(batchSize));
				if (generic == null || planned == null) {
					continue;
				}
				double ratio = generic.msgsPerSecond() / planned.msgsPerSecond();
				results.ratio("scenario=drain consumers=" + concurrency + " batch=" + batchSize
						+ " raw-sql/raw-sql-planned=" + Results.ratio(ratio));
				compared++;
				faster += (ratio >= 1) ? 1 : 0;
			}
		}
		if (compared > 0) {
			System.out.printf(Locale.ROOT, "# drain: raw-sql is the faster of the two limits in %d of %d configurations%s%n",
					faster, compared, (faster < compared) ? "; raw-sql-planned is faster in the others" : "");
		}
	}

	/**
	 * Per batch size, each system's rate with 4 consumers over its rate with 1, and pgqueue's gain
	 * over the limit's ({@code raw-sql}) in the same run.
	 */
	private void scaling() {
		Results results = this.context.results();
		for (int batchSize : BATCH_SIZES) {
			String batch = String.valueOf(batchSize);
			Double limit = gain(results, "raw-sql", batch);
			StringBuilder gains = new StringBuilder();
			List<String> overLimit = new ArrayList<>();
			for (QueueSystem system : this.context.allSystems()) {
				Double gain = gain(results, system.name(), batch);
				if (gain == null) {
					continue;
				}
				gains.append(' ').append(system.name()).append('=').append(Results.ratio(gain));
				if (limit != null && Results.MINE.contains(system.name())) {
					overLimit.add(system.name() + "/raw-sql=" + Results.ratio(gain / limit));
				}
			}
			if (!gains.isEmpty()) {
				results.ratio("scenario=drain batch=" + batch + " scaling=4/1" + gains
						+ (overLimit.isEmpty() ? "" : " " + String.join(" ", overLimit)));
			}
		}
	}

	private static Double gain(Results results, String system, String batch) {
		BenchRow one = results.find("drain", system, 1, batch);
		BenchRow four = results.find("drain", system, 4, batch);
		if (one == null || four == null || one.msgsPerSecond() == null || four.msgsPerSecond() == null
				|| one.msgsPerSecond() == 0) {
			return null;
		}
		return four.msgsPerSecond() / one.msgsPerSecond();
	}

}
