package io.github.pgqueue.benchmarks;

import java.time.Duration;
import java.util.List;

import io.github.pgqueue.QueueAdmin;
import io.github.pgqueue.QueueContext;
import io.github.pgqueue.QueueDefinition;

/**
 * {@code retention}: the {@code drain} of {@code pgqueue} and {@code pgqueue-tx} with 4 consumers
 * and batches of 10, on the same queue with and without a 7-day retention (every acked message
 * archived), timed alternately (without, with, with, without) so that a machine that slows down
 * or speeds up during the run weighs on both alike. Prints each drain as system
 * {@code <system>+retention} or {@code <system>}, with how many rows the archive gained (the
 * warm-up's and earlier drains' leftovers included), and the ratio of the mean rates.
 */
final class RetentionScenario {

	private static final int CONCURRENCY = 4;

	private static final Duration RETENTION = Duration.ofDays(7);

	private final BenchContext context;

	private final QueueAdmin admin;

	RetentionScenario(BenchContext context) {
		this.context = context;
		this.admin = new QueueAdmin(QueueContext.of(context.database().appPool()));
	}

	void run() {
		for (QueueSystem system : this.context.allSystems()) {
			if (!List.of("pgqueue", "pgqueue-tx").contains(system.name())) {
				continue;
			}
			system.clear();
			int batchSize = PgQueueSystem.DEFAULT_BATCH_SIZE;
			WarmUp.Result warmUp = Drain.warmUp(this.context, system, CONCURRENCY, batchSize, Drain.FIRST_GUESS);
			double[] without = new double[2];
			double[] with = new double[2];
			for (int round = 0; round < 2; round++) {
				boolean keptFirst = (round == 1);
				for (boolean kept : new boolean[] { keptFirst, !keptFirst }) {
					retention(kept ? RETENTION : null);
					Drain.Runs runs = Drain.measure(this.context, system, CONCURRENCY, batchSize, warmUp.rate(), 1);
					(kept ? with : without)[round] = runs.medianRate();
					// What the archive holds: every message acked with the retention on, none without.
					long archived = this.context.database().queryLong("SELECT count(*) FROM pgqueue.archive");
					this.context.database().execute("TRUNCATE pgqueue.archive");
					this.context.results()
						.add(BenchRow
							.throughput("retention", system.name() + (kept ? "+retention" : ""), CONCURRENCY,
									String.valueOf(batchSize), runs.median().messages(), runs.medianRate())
							.with("round", round + 1)
							.with("seconds", runs.median().seconds())
							.with("archived", archived));
				}
			}
			retention(null);
			system.clear();
			double ratio = (with[0] + with[1]) / (without[0] + without[1]);
			this.context.results()
				.ratio("scenario=retention system=" + system.name() + " consumers=" + CONCURRENCY + " batch=" + batchSize
						+ " retention/without=" + Results.ratio(ratio) + " rounds=" + Results.ratio(with[0] / without[0])
						+ "," + Results.ratio(with[1] / without[1]));
		}
	}

	private void retention(Duration retention) {
		this.admin.declare(QueueDefinition.of(MessageTableSystem.QUEUE).withRetention(retention));
	}

}
