package io.github.pgqueue.benchmarks;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.LongAdder;

/**
 * {@code many-queues}: many quiet queues in one JVM. For 50 and then 500 queues, one listener
 * (one thread) each: the producers send {@code steadyRate} messages a second in all (2 000 by
 * default), round robin over the queues, so each queue gets few (40 or 4 a second); reported is
 * the time from send commit to handler start, p50/p99, of a 10 s window after a 20 s warm-up
 * ({@code many-queues}). Then the 500 listeners stay idle: the queries PostgreSQL runs over a
 * minute, from 30 s after the run, are what they cost it ({@code many-queues-idle}).
 * A minute is one period of the pollers' safeguard poll: they went idle together, so a shorter
 * window counts all of their safeguard polls or none. Only systems that have queues take part.
 */
final class ManyQueuesScenario {

	private static final int[] LISTENERS = { 50, 500 };

	private static final int PRODUCERS = 4;

	private static final Duration START_UP = Duration.ofSeconds(3);

	// Long enough for the steady state: in the first seconds each of 500 new connections still parses
	// and plans its statements (the driver prepares a statement on the server at its fifth run), and
	// the holding table's pages grow to what the load keeps them at.
	private static final Duration WARM_UP = Duration.ofSeconds(20);

	private static final Duration WINDOW = Duration.ofSeconds(10);

	private static final Duration GRACE = Duration.ofSeconds(10);

	// From 30 s to 90 s after the pollers went idle, together, at the end of the run: each idle pgqueue
	// poller polls once a safeguard wait, PollLoop.WATCHED_IDLE_FACTOR poll intervals of a second
	// within a fifth either way (48 to 72 s), so the window holds exactly one such poll of each.
	private static final long IDLE_SETTLE_MILLIS = 30_000;

	private static final long IDLE_WINDOW_MILLIS = 60_000;

	/** How many listeners are measured idle as well. */
	private static final int IDLE_LISTENERS = 500;

	private final BenchContext context;

	ManyQueuesScenario(BenchContext context) {
		this.context = context;
	}

	void run() {
		for (QueueSystem system : this.context.systems()) {
			if (!system.hasQueues()) {
				System.out.println("# many-queues: " + system.name() + " has one queue; skipped");
				continue;
			}
			for (int listeners : LISTENERS) {
				measure(system, listeners);
			}
		}
	}

	private void measure(QueueSystem system, int listeners) {
		system.clear();
		this.context.database().vacuumAnalyze(system);
		int batchSize = system.claimsInBatches() ? PgQueueSystem.DEFAULT_BATCH_SIZE : 1;
		double rate = this.context.options().steadyRate();
		List<String> queues = new ArrayList<>();
		for (int i = 0; i < listeners; i++) {
			queues.add("mq" + listeners + "-" + i);
		}
		long capacity = (long) (rate * (WARM_UP.toSeconds() + WINDOW.toSeconds() + 2) * 1.2) + 10_000;
		Latencies latencies = new Latencies((int) capacity);
		LongAdder handled = new LongAdder();
		AtomicLong sequence = new AtomicLong();
		Producers.Send send = (first, count) -> {
			system.send(queues.get((int) (first % listeners)), first);
			latencies.committed(first);
		};
		this.context.database().openConsumerConnections(listeners + 2);
		try (Consumers consumers = system.startQueueListeners(queues, batchSize, (n) -> {
			latencies.started(n);
			handled.increment();
		})) {
			BenchContext.pause(START_UP.toMillis());
			Producers.run(PRODUCERS, WARM_UP, rate, sequence, 1, send);
			long first = sequence.get();
			long handledBefore = handled.sum();
			this.context.startProbe();
			long started = System.nanoTime();
			Producers.run(PRODUCERS, WINDOW, rate, sequence, 1, send);
			double seconds = (System.nanoTime() - started) / 1e9;
			long end = sequence.get();
			long handledInWindow = handled.sum() - handledBefore;
			this.context.endProbe("many-queues " + system.name() + " " + listeners);
			awaitHandled(handled, end);
			Latencies.Summary summary = latencies.summarize(first, end);
			this.context.results()
				.add(new BenchRow("many-queues", system.name(), listeners, String.valueOf(batchSize), end - first,
						handledInWindow / seconds, summary.p50Millis(), summary.p99Millis(), Map.of())
					.with("offered_per_s", (end - first) / seconds)
					.with("max_ms", summary.maxMillis())
					.with("lost", end - handled.sum()));

			if (listeners == IDLE_LISTENERS) {
				measureIdle(system, listeners);
			}
		}
		system.clear();
	}

	private void measureIdle(QueueSystem system, int listeners) {
		BenchContext.pause(IDLE_SETTLE_MILLIS);
		BenchDatabase.StatementsRun run = this.context.database().statementsDuring(IDLE_WINDOW_MILLIS);
		double perSecond = run.statements() / (IDLE_WINDOW_MILLIS / 1000.0);
		run.busiest().forEach((line) -> System.out.println("# many-queues-idle " + system.name() + ": " + line));
		this.context.results()
			.add(new BenchRow("many-queues-idle", system.name(), listeners, "-", 0, null, null, null, Map.of())
				.with("statements_per_s", perSecond)
				.with("per_listener", perSecond / listeners));
	}

	private static void awaitHandled(LongAdder handled, long sent) {
		long deadline = System.nanoTime() + GRACE.toNanos();
		while (handled.sum() < sent && System.nanoTime() < deadline) {
			BenchContext.pause(20);
		}
	}

}
