package io.github.pgqueue.benchmarks;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.lang.management.ManagementFactory;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Locale;
import java.util.stream.Stream;

/**
 * The processor time this JVM and the machine's PostgreSQL processes used since {@link #start()},
 * in cores (seconds of processor time a second). The server's is read from {@code /proc}: the
 * user and system time of every process named {@code postgres}, so it is the benchmark's server
 * only where that is the machine's only one, and a process that ends in between takes its time
 * with it (the benchmark's pools keep theirs); where {@code /proc} cannot be read, it says so.
 */
final class ProcessorTime {

	private static final double TICKS_PER_SECOND = 100; // USER_HZ on Linux

	private long startedNanos;

	private long jvmNanos;

	private double serverSeconds;

	void start() {
		this.startedNanos = System.nanoTime();
		this.jvmNanos = jvmProcessorNanos();
		this.serverSeconds = serverProcessorSeconds();
	}

	@Override
	public String toString() {
		double elapsed = (System.nanoTime() - this.startedNanos) / 1e9;
		double jvm = (jvmProcessorNanos() - this.jvmNanos) / 1e9 / elapsed;
		double server = serverProcessorSeconds();
		String serverCores = (server < 0 || this.serverSeconds < 0) ? "unknown"
				: String.format(Locale.ROOT, "%.2f", (server - this.serverSeconds) / elapsed);
		return String.format(Locale.ROOT, "cores: jvm=%.2f postgres=%s over %.1f s", jvm, serverCores, elapsed);
	}

	private static long jvmProcessorNanos() {
		return ((com.sun.management.OperatingSystemMXBean) ManagementFactory.getOperatingSystemMXBean())
			.getProcessCpuTime();
	}

	/** User and system time of every live postgres process, in seconds; -1 where /proc cannot say. */
	private static double serverProcessorSeconds() {
		try (Stream<Path> processes = Files.list(Path.of("/proc"))) {
			long ticks = processes.filter((p) -> p.getFileName().toString().chars().allMatch(Character::isDigit))
				.mapToLong(ProcessorTime::postgresTicks)
				.sum();
			return ticks / TICKS_PER_SECOND;
		}
		catch (IOException | UncheckedIOException ex) {
			return -1;
		}
	}

	/** utime + stime of process {@code directory} if it is a postgres process, else 0. */
	private static long postgresTicks(Path directory) {
		try {
			String stat = Files.readString(directory.resolve("stat"));
			int open = stat.indexOf('(');
			int close = stat.lastIndexOf(')');
			if (open < 0 || close < 0 || !stat.substring(open + 1, close).equals("postgres")) {
				return 0;
			}
			String[] fields = stat.substring(close + 2).split(" ");
			// After the name: state is field 3 of stat(5); utime and stime are fields 14 and 15.
			return Long.parseLong(fields[11]) + Long.parseLong(fields[12]);
		}
		catch (IOException ex) {
			return 0; // the process ended while it was read
		}
	}

}
