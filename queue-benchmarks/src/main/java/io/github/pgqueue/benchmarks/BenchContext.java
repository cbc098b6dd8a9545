package io.github.pgqueue.benchmarks;

import java.nio.file.Path;
import java.util.List;

/**
 * What every scenario works with: the database, the systems in report order, the options, where
 * figures go and where files are written.
 */
record BenchContext(BenchDatabase database, List<QueueSystem> allSystems, BenchOptions options, Results results,
		Path outputDirectory, ProcessorTime processorTime) {

	BenchContext(BenchDatabase database, List<QueueSystem> allSystems, BenchOptions options, Results results,
			Path outputDirectory) {
		this(database, allSystems, options, results, outputDirectory, new ProcessorTime());
	}

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

	/** With the {@code probe} option, forgets the statements the server recorded so far. */
	void startProbe() {
		if (this.options.probe()) {
			this.database.forgetStatements();
			this.processorTime.start();
		}
	}

	/**
	 * With the {@code probe} option, prints the statements that took the most of the server's time
	 * since {@link #startProbe()}, the holding table, and the cores this JVM and the server's
	 * processes used, as comment lines that start with {@code # probe} and {@code label}.
	 */
	void endProbe(String label) {
		if (this.options.probe()) {
			for (String line : this.database.busiestStatements(8)) {
				System.out.println("# probe " + label + ": " + line);
			}
			System.out.println("# probe " + label + ": " + this.database.holdingTable());
			System.out.println("# probe " + label + ": " + this.processorTime);
		}
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
