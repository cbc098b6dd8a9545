package io.github.pgqueue.benchmarks;

import java.util.LinkedHashMap;
import java.util.Map;

import io.github.pgqueue.ConsumptionMode;

/**
 * {@code fifo-groups}: the drain's backlog spread round robin over 1 000 FIFO groups and over 10,
 * in both modes, 4 consumers at batch 10 and 100. With 10 groups at most 10 messages are claimable
 * at a time, fewer than the 4 consumers' batches ask for: the figure shows what a claim that
 * cannot fill its batch costs when the rest of the backlog is the groups' later messages. Before
 * each drain the consumers warm up on the same kind of backlog until their rate is steady (see
 * {@link Drain#warmUp}); the drain then lasts the drain time, from a backlog sized by the rate they
 * reached ({@link Drain#measure}).
 */
final class FifoGroupsScenario {

	private static final int[] GROUPS = { 1000, 10 };

	private static final int CONCURRENCY = 4;

	private static final int[] BATCH_SIZES = { PgQueueSystem.DEFAULT_BATCH_SIZE, 100 };

	private final BenchContext context;

	FifoGroupsScenario(BenchContext context) {
		this.context = context;
	}

	void run() {
		for (ConsumptionMode mode : ConsumptionMode.values()) {
			Map<String, Double> rates = new LinkedHashMap<>();
			for (int groups : GROUPS) {
				QueueSystem system = new PgQueueSystem(this.context.database(), mode, groups);
				system.clear();
				for (int batchSize : BATCH_SIZES) {
					WarmUp.Result warmUp = Drain.warmUp(this.context, system, CONCURRENCY, batchSize,
							Drain.FIRST_GUESS);
					Drain.Runs runs = Drain.measure(this.context, system, CONCURRENCY, batchSize, warmUp.rate(), 1);
					Drain.Outcome outcome = runs.median();
					this.context.results()
						.add(BenchRow.throughput("fifo-groups", system.name(), CONCURRENCY, String.valueOf(batchSize),
								outcome.messages(), outcome.rate())
							.with("groups", groups)
							.with("backlog", runs.backlog()));
					rates.put(groups + "/" + batchSize, outcome.rate());
				}
				system.clear();
			}
			String name = new PgQueueSystem(this.context.database(), mode, 1).name();
			for (int batchSize : BATCH_SIZES) {
				this.context.results()
					.ratio("scenario=fifo-groups system=" + name + " consumers=" + CONCURRENCY + " batch=" + batchSize
							+ " 10-groups/1000-groups="
							+ Results.ratio(rates.get("10/" + batchSize) / rates.get("1000/" + batchSize)));
			}
		}
	}

}
