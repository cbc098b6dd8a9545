package io.github.pgqueue.benchmarks;

import java.util.Optional;

/**
 * {@code idle-cost}: an idle application with 10 listeners (one thread each) for a minute, from
 * 30 s after they start; what PostgreSQL sees is the queries it runs. The database with no
 * listener at all is measured first, for 10 s, as system {@code none}.
 */
final class IdleCostScenario {

	private static final int LISTENERS = 10;

	// From 30 s to 90 s after the listeners started: as in many-queues-idle, each pgqueue poller's
	// safeguard poll falls in the window exactly once.
	private static final long WARM_UP_MILLIS = 30_000;

	private static final long WINDOW_MILLIS = 60_000;

	private final BenchContext context;

	IdleCostScenario(BenchContext context) {
		this.context = context;
	}

	void run() {
		BenchContext.pause(5_000);
		record("none", 0, 10_000);
		for (QueueSystem system : this.context.systems()) {
			Optional<Consumers> listeners = system.startIdleListeners(LISTENERS);
			if (listeners.isEmpty()) {
				continue;
			}
			try (Consumers running = listeners.get()) {
				BenchContext.pause(WARM_UP_MILLIS);
				record(system.name(), LISTENERS, WINDOW_MILLIS);
			}
		}
	}

	private void record(String system, int listeners, long windowMillis) {
		BenchDatabase.StatementsRun run = this.context.database().statementsDuring(windowMillis);
		double perSecond = run.statements() / (windowMillis / 1000.0);
		run.busiest().forEach((line) -> System.out.println("# idle-cost " + system + ": " + line));
		BenchRow row = new BenchRow("idle-cost", system, listeners, "-", 0, null, null, null, java.util.Map.of())
			.with("statements_per_s", perSecond);
		if (listeners > 0) {
			row = row.with("per_listener", perSecond / listeners);
		}
		this.context.results().add(row);
	}

}
