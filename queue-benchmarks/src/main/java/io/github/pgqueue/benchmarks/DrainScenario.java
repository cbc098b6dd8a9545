package io.github.pgqueue.benchmarks;

/**
 * {@code drain}: a backlog of 200 000 tiny messages (30 000 in quick mode) and a no-op listener,
 * with 1 and 4 consumer threads and batch sizes 10 (pgqueue's default) and 100. A system that
 * cannot get through the backlog within the cap is measured on the part it got through, with the
 * rest of the backlog still in its table. {@code pgqueue-tx-fifo} has the backlog spread over 1 000
 * FIFO groups (see also {@link FifoGroupsScenario}).
 */
final class DrainScenario {

	private static final int[] CONCURRENCY = { 1, 4 };

	private static final int[] BATCH_SIZES = { PgQueueSystem.DEFAULT_BATCH_SIZE, 100 };

	private final BenchContext context;

	DrainScenario(BenchContext context) {
		this.context = context;
	}

	void run() {
		int backlog = this.context.options().drainBacklog();
		for (QueueSystem system : this.context.allSystems()) {
			system.clear();
			for (int concurrency : CONCURRENCY) {
				for (int batchSize : system.claimsInBatches() ? BATCH_SIZES : new int[] { 1 }) {
					Drain.prepare(this.context, system, backlog);
					Drain.Outcome outcome = Drain.run(system, concurrency, batchSize, backlog,
							this.context.options().drainCap());
					this.context.results()
						.add(BenchRow.throughput("drain", system.name(), concurrency, String.valueOf(batchSize),
								outcome.messages(), outcome.rate())
							.with("backlog", backlog));
				}
			}
			system.clear();
		}
		this.context.results().ratios("drain");
	}

}
