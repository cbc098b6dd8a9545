package io.github.pgqueue.benchmarks;

import java.util.Optional;

/**
 * {@code idle-cost}: an idle application with 10 listeners (one thread each) for 30 s; what
 * PostgreSQL sees is the growth of {@code pg_stat_database.xact_commit}. The database with no
 * listener at all is measured first, as system {@code none}.
 */
final class IdleCostScenario {

	private static final int LISTENERS = 10;

	// Longer than the 10 s an idle backend may hold back its statistics.
	private static final long WARM_UP_MILLIS = 11_000;

	private static final long WINDOW_MILLIS = 30_000;

	/** The two statements of each reading of the counter: one of them falls inside the window. */
	private static final int READING_STATEMENTS = 2;

	private final BenchContext context;

	IdleCostScenario(BenchContext context) {
		this.context = context;
	}

	void run() {
		BenchContext.pause(WARM_UP_MILLIS);
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
		long before = this.context.database().committedTransactions();
		BenchContext.pause(windowMillis);
		long after = this.context.database().committedTransactions();
		double perSecond = Math.max(0, after - before - READING_STATEMENTS) / (windowMillis / 1000.0);
		BenchRow row = new BenchRow("idle-cost", system, listeners, "-", 0, null, null, null, java.util.Map.of())
			.with("statements_per_s", perSecond);
		if (listeners > 0) {
			row = row.with("per_listener", perSecond / listeners);
		}
		this.context.results().add(row);
	}

}
