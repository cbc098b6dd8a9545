package io.github.pgqueue.reliability;

import java.nio.file.Path;
import java.time.Duration;

/**
 * How big a run is: the reduced run of {@code ./mvnw verify}, or the full run with
 * {@code -Dchaos.full=true} (more messages, more JVMs, longer, more faults).
 */
final class ChaosSettings {

	private static final boolean FULL = Boolean.getBoolean("chaos.full");

	private ChaosSettings() {
	}

	/** Whether this is the full run. */
	static boolean full() {
		return FULL;
	}

	/** {@code reduced} in the reduced run, {@code full} in the full one. */
	static int pick(int reduced, int full) {
		return FULL ? full : reduced;
	}

	static Duration pick(Duration reduced, Duration full) {
		return FULL ? full : reduced;
	}

	/** Where consumer JVMs write their logs, one folder per scenario. */
	static Path workDirectory() {
		return Path.of(System.getProperty("chaos.work-directory", "target/chaos"));
	}

}
