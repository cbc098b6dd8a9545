package io.github.pgqueue.benchmarks;

import java.util.concurrent.atomic.LongAdder;

/**
 * {@code latency-idle}: one message every 20 ms into an idle queue watched by one consumer thread
 * (pgqueue's default batch size); latency runs from the send's commit to the handler's start. Each
 * system first handles {@value #WARM_UP_MESSAGES} messages sent the same way, not measured, so that
 * its send and its consumer's statements are prepared and compiled.
 */
final class LatencyIdleScenario {

	private static final long INTERVAL_NANOS = 20_000_000L;

	static final int WARM_UP_MESSAGES = 25;

	private final BenchContext context;

	LatencyIdleScenario(BenchContext context) {
		this.context = context;
	}

	void run() {
		int messages = this.context.options().idleMessages();
		for (QueueSystem system : this.context.systems()) {
			system.clear();
			Latencies latencies = new Latencies(messages);
			LongAdder handled = new LongAdder();
			int batchSize = system.claimsInBatches() ? PgQueueSystem.DEFAULT_BATCH_SIZE : 1;
			try (Consumers consumers = system.startConsumers(1, batchSize, (n) -> {
				if (n >= 0) {
					latencies.started(n);
					handled.increment();
				}
			})) {
				// Warm-up messages are numbered below -1 (bulk loads carry -1), so they are not counted.
				for (int i = 0; i < WARM_UP_MESSAGES; i++) {
					system.send(-2 - i);
					BenchContext.pause(INTERVAL_NANOS / 1_000_000);
				}
				// Let the consumer find the queue empty and go to sleep waiting for work.
				BenchContext.pause(1_500);
				long next = System.nanoTime();
				for (int i = 0; i < messages; i++) {
					system.send(i);
					latencies.committed(i);
					next += INTERVAL_NANOS;
					long wait = next - System.nanoTime();
					if (wait > 0) {
						BenchContext.pause(wait / 1_000_000);
					}
				}
				long deadline = System.nanoTime() + 3_000_000_000L;
				while (handled.sum() < messages && System.nanoTime() < deadline) {
					BenchContext.pause(10);
				}
			}
			Latencies.Summary summary = latencies.summarize();
			this.context.results()
				.add(new BenchRow("latency-idle", system.name(), 1, String.valueOf(batchSize), summary.count(), null,
						summary.p50Millis(), summary.p99Millis(), java.util.Map.of()));
			system.clear();
		}
	}

}
