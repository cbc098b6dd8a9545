package io.github.pgqueue.reliability;

import java.time.Duration;

/**
 * How long a soak runs and how often it faults and samples. The short soak, part of
 * the full chaos run ({@code -Dchaos.full=true}), runs a minute of load with a fault every 14 s
 * and a sample every 10 s; the long one ({@code -Dsoak.minutes=N}, 60 for the hour) runs
 * {@code N} minutes with a fault every 2 minutes and a sample every minute.
 * @param load how long the producers send
 * @param faultEvery the time between two faults of the rotation
 * @param sampleEvery the time between two samples of heap, table and index sizes and backlog
 * @param warmUp the samples before this are not part of the flatness check
 * @param partition how long a partitioned consumer stays cut off
 * @param downtime how long PostgreSQL stays down when it is restarted
 */
record SoakPlan(Duration load, Duration faultEvery, Duration sampleEvery, Duration warmUp, Duration partition,
		Duration downtime) {

	static final SoakPlan SHORT = new SoakPlan(Duration.ofSeconds(60), Duration.ofSeconds(14), Duration.ofSeconds(10),
			Duration.ofSeconds(20), Duration.ofSeconds(5), Duration.ofSeconds(3));

	/** The plan the system properties ask for: {@code soak.minutes} if set, else {@link #SHORT}. */
	static SoakPlan fromSystemProperties() {
		String minutes = System.getProperty("soak.minutes");
		return (minutes == null || minutes.isBlank()) ? SHORT : ofMinutes(parseMinutes(minutes));
	}

	/** A soak of {@code minutes}: a fault every 2 minutes, a sample a minute, a sixth (at most 10 minutes) of warm-up. */
	static SoakPlan ofMinutes(int minutes) {
		Duration load = Duration.ofMinutes(minutes);
		Duration warmUp = Duration.ofSeconds(Math.min(600, minutes * 10L));
		return new SoakPlan(load, Duration.ofMinutes(2), Duration.ofMinutes(1), warmUp, Duration.ofSeconds(30),
				Duration.ofSeconds(8));
	}

	private static int parseMinutes(String value) {
		String problem = "soak.minutes must be a whole number of minutes, at least 3, but is '" + value + "'";
		int minutes;
		try {
			minutes = Integer.parseInt(value.trim());
		}
		catch (NumberFormatException ex) {
			throw new IllegalArgumentException(problem, ex);
		}
		if (minutes < 3) {
			throw new IllegalArgumentException(problem);
		}
		return minutes;
	}

	boolean isShort() {
		return this.equals(SHORT);
	}

}
