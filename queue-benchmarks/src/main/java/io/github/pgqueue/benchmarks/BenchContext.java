package io.github.pgqueue.benchmarks;

import java.nio.file.Path;
import java.util.List;

/**
 * What every scenario works with: the database, the systems in report order, the options, where
 * figures go and where files are written.
 */
record BenchContext(BenchDatabase database, List<QueueSystem> allSystems, BenchOptions options, Results results,
		Path outputDirectory) {

	/** The systems every scenario measures. */
	List<QueueSystem> systems() {
		return this.allSystems.stream().filter((system) -> !system.drainOnly()).toList();
	}

	QueueSystem system(String name) {
		return this.allSystems.stream()
			.filter((system) -> system.name().equals(name))
			.findFirst()
			.orElseThrow(() -> new IllegalArgumentException("No system " + name));
	}

	static void pause(long millis) {
		try {
			Thread.sleep(millis);
		}
		catch (InterruptedException ex) {
			Thread.currentThread().interrupt();
			throw new IllegalStateException("Interrupted", ex);
		}
	}

}
