package io.github.pgqueue.benchmarks;

import java.nio.file.Path;
import java.util.List;

/**
 * What every scenario works with: the database, the systems in report order, the options, where
 * figures go and where files are written.
 */
record BenchContext(BenchDatabase database, List<QueueSystem> systems, BenchOptions options, Results results,
		Path outputDirectory) {

	QueueSystem system(String name) {
		return this.systems.stream()
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
