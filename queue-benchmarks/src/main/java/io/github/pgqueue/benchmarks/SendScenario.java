package io.github.pgqueue.benchmarks;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.atomic.AtomicLong;

import io.github.pgqueue.ConsumptionMode;

/**
 * {@code send}: single sends, one per transaction, from 1 and 4 producer threads; {@code send-batch}:
 * batches of 100 in one transaction from one thread. Each system starts on an empty table and
 * warms up with the same sends until their rate is steady (see {@link WarmUp}) before it is timed. {@code pgqueue-fifo} sends the same messages in
 * FIFO groups (1 000 of them, round robin; one group per batch), whose inserts serialize per group
 * and look up their group's newest message: its ratio to {@code pgqueue} is what groups cost a send.
 */
final class SendScenario {

	static final int BATCH = 100;

	/** pgqueue's sends in FIFO groups. */
	static final String GROUPED = "pgqueue-fifo";

	private final BenchContext context;

	SendScenario(BenchContext context) {
		this.context = context;
	}

	void runSend() {
		for (int threads : new int[] { 1, 4 }) {
			for (QueueSystem system : systems()) {
				measure("send", system, threads, 1, (first, count) -> system.send(first));
			}
		}
		this.context.results().ratios("send");
	}

	void runSendBatch() {
		for (QueueSystem system : systems()) {
			measure("send-batch", system, 1, BATCH, system::sendBatch);
		}
		this.context.results().ratios("send-batch");
	}

	/** Every system's sends, and pgqueue's in FIFO groups right after pgqueue's. */
	private List<QueueSystem> systems() {
		List<QueueSystem> systems = new ArrayList<>();
		for (QueueSystem system : this.context.systems()) {
			systems.add(system);
			if (system.name().equals("pgqueue") && this.context.options().measures(GROUPED)) {
				systems.add(new PgQueueSystem(this.context.database(), ConsumptionMode.SESSION, BenchmarkMain.FIFO_GROUPS));
			}
		}
		return systems;
	}

	private void measure(String scenario, QueueSystem system, int threads, int perSend, Producers.Send send) {
		system.clear();
		AtomicLong sequence = new AtomicLong();
		WarmUp.Result warmUp = WarmUp.untilSteady(this.context.options(),
				() -> Producers.run(threads, Duration.ofMillis(WarmUp.SLICE_MILLIS), sequence, perSend, send), () -> false);
		Duration duration = this.context.options().sendDuration();
		long started = System.nanoTime();
		long sent = Producers.run(threads, duration, sequence, perSend, send);
		double seconds = (System.nanoTime() - started) / 1e9;
		this.context.results()
			.add(BenchRow.throughput(scenario, system.name(), threads, String.valueOf(perSend), sent, sent / seconds)
				.with("warm_up_s", warmUp.seconds()));
		system.clear();
	}

}
