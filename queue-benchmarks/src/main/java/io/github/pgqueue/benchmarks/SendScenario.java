package io.github.pgqueue.benchmarks;

import java.time.Duration;
import java.util.concurrent.atomic.AtomicLong;

/**
 * {@code send}: single sends, one per transaction, from 1 and 4 producer threads; {@code send-batch}:
 * batches of 100 in one transaction from one thread. Each system starts on an empty table and
 * warms up for a second before it is timed.
 */
final class SendScenario {

	static final int BATCH = 100;

	private final BenchContext context;

	SendScenario(BenchContext context) {
		this.context = context;
	}

	void runSend() {
		for (int threads : new int[] { 1, 4 }) {
			for (QueueSystem system : this.context.systems()) {
				measure("send", system, threads, 1, (first, count) -> system.send(first));
			}
		}
		this.context.results().ratios("send");
	}

	void runSendBatch() {
		for (QueueSystem system : this.context.systems()) {
			measure("send-batch", system, 1, BATCH, system::sendBatch);
		}
		this.context.results().ratios("send-batch");
	}

	private void measure(String scenario, QueueSystem system, int threads, int perSend, Producers.Send send) {
		system.clear();
		AtomicLong sequence = new AtomicLong();
		Producers.run(threads, Duration.ofSeconds(1), sequence, perSend, send);
		Duration duration = this.context.options().sendDuration();
		long started = System.nanoTime();
		long sent = Producers.run(threads, duration, sequence, perSend, send);
		double seconds = (System.nanoTime() - started) / 1e9;
		this.context.results()
			.add(BenchRow.throughput(scenario, system.name(), threads, String.valueOf(perSend), sent, sent / seconds));
		system.clear();
	}

}
