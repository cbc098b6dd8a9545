package io.github.pgqueue.benchmarks;

import java.time.Duration;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Set;

/**
 * The command line: {@code quick} (send, send-batch, drain, latency-idle and binder at reduced size;
 * binder only when {@code systems=} names its systems) or
 * {@code full} (every scenario); {@code only=a,b} to pick scenarios; {@code systems=a,b} to measure only
 * the systems of these names (ratios need their baseline among them; a quick run without it measures
 * {@link #QUICK_SYSTEMS}); {@code churn-seconds=N},
 * {@code steady-seconds=N} and {@code steady-rate=N} (messages/s the producers of steady and churn
 * send together, 0 for flat out; default 2000); {@code backlog-huge=N} (the largest backlog of the
 * backlog scenario, default 10 000 000; 0 leaves it out); {@code drain-seconds=N} (how long each
 * timed drain lasts, from a backlog sized by the rate its warm-up reached: default 3 in quick mode,
 * 6 in full; never under {@value #MIN_DRAIN_SECONDS}) and {@code drain-runs=N} (measured drains per system
 * and configuration, reported as median and range: default 1 in quick mode, 3 in full);
 * {@code probe} (the server records every statement, and each drain and many-queues window is
 * followed by the statements that took the most of the server's time in it, as comment lines). A
 * leading {@code --} on any of them is accepted.
 */
record BenchOptions(boolean quick, Set<String> scenarios, Set<String> systems, Duration steady, Duration churn,
		double steadyRate, int hugeBacklog, Duration drainTime, int drainRuns, boolean probe) {

	/** The shortest a timed drain may last: one whose backlog ran out sooner is run again from a larger one. */
	static final int MIN_DRAIN_SECONDS = 3;

	static final List<String> ALL = List.of("send", "send-batch", "drain", "latency-idle", "delayed", "steady",
			"backlog", "idle-cost", "many-queues", "churn", "pressure", "filter", "fifo-groups", "memory", "binder",
			"retention", "rate-limit", "granted-role", "noisy-neighbour");

	static final List<String> QUICK = List.of("send", "send-batch", "drain", "latency-idle", "binder");

	/**
	 * The systems of a quick run that does not name its own: pgqueue's two modes, the limit and the
	 * same protocol without the framework, so that it ends within bench.md's 3 minutes.
	 */
	static final List<String> QUICK_SYSTEMS = List.of("pgqueue", "pgqueue-tx", "raw-sql", "raw-sql-same-guarantee");

	static BenchOptions parse(String[] args) {
		boolean quick = false;
		boolean probe = false;
		Set<String> only = null;
		Set<String> systems = Set.of();
		Duration steady = Duration.ofSeconds(60);
		Duration churn = Duration.ofSeconds(180);
		double steadyRate = 2000;
		int hugeBacklog = 10_000_000;
		Integer drainSeconds = null;
		Integer drainRuns = null;
		for (String raw : String.join(" ", args).trim().split("\\s+")) {
			String arg = raw.startsWith("--") ? raw.substring(2) : raw;
			if (arg.isEmpty() || arg.equals("full")) {
				continue;
			}
			if (arg.equals("quick")) {
				quick = true;
			}
			else if (arg.equals("probe")) {
				probe = true;
			}
			else if (arg.startsWith("only=")) {
				only = new LinkedHashSet<>(List.of(arg.substring(5).split(",")));
				only.forEach(BenchOptions::requireKnown);
			}
			else if (arg.startsWith("systems=")) {
				systems = new LinkedHashSet<>(List.of(arg.substring(8).split(",")));
			}
			else if (arg.startsWith("steady-seconds=")) {
				steady = Duration.ofSeconds(Long.parseLong(arg.substring(15)));
			}
			else if (arg.startsWith("steady-rate=")) {
				steadyRate = Double.parseDouble(arg.substring(12));
			}
			else if (arg.startsWith("churn-seconds=")) {
				churn = Duration.ofSeconds(Long.parseLong(arg.substring(14)));
			}
			else if (arg.startsWith("backlog-huge=")) {
				hugeBacklog = Integer.parseInt(arg.substring(13));
			}
			else if (arg.startsWith("drain-seconds=")) {
				drainSeconds = Math.max(MIN_DRAIN_SECONDS, Integer.parseInt(arg.substring(14)));
			}
			else if (arg.startsWith("drain-runs=")) {
				drainRuns = Math.max(1, Integer.parseInt(arg.substring(11)));
			}
			else {
				throw new IllegalArgumentException("Unknown argument '" + raw + "'; expected quick, full, only=a,b, "
						+ "systems=a,b, steady-seconds=N, steady-rate=N, churn-seconds=N, backlog-huge=N, "
						+ "drain-seconds=N, drain-runs=N or probe");
			}
		}
		Set<String> scenarios = new LinkedHashSet<>(quick ? QUICK : ALL);
		if (only != null) {
			scenarios.retainAll(only);
			if (scenarios.isEmpty()) {
				scenarios.addAll(only);
			}
		}
		Duration drainTime = Duration.ofSeconds((drainSeconds != null) ? drainSeconds : quick ? MIN_DRAIN_SECONDS : 6);
		return new BenchOptions(quick, scenarios, systems, steady, churn, steadyRate, hugeBacklog, drainTime,
				(drainRuns != null) ? drainRuns : quick ? 1 : 3, probe);
	}

	private static void requireKnown(String scenario) {
		if (!ALL.contains(scenario)) {
			throw new IllegalArgumentException("Unknown scenario '" + scenario + "'; known: " + ALL);
		}
	}

	/**
	 * Whether the system of this name is measured: those {@code systems=a,b} names; without it, every
	 * system in a full run and {@link #QUICK_SYSTEMS} in a quick one.
	 */
	boolean measures(String system) {
		if (!this.systems.isEmpty()) {
			return this.systems.contains(system);
		}
		return !this.quick || QUICK_SYSTEMS.contains(system);
	}

	boolean runs(String scenario) {
		return this.scenarios.contains(scenario);
	}

	/** Long enough to measure, short enough for the quick mode's 3-minute budget. */
	Duration sendDuration() {
		return Duration.ofSeconds(this.quick ? 2 : 5);
	}

	/** The backlog of the memory scenario's drain; the scenarios that time drains size theirs by time. */
	int drainBacklog() {
		return this.quick ? 30_000 : 200_000;
	}

	/** The shortest warm-up before a measurement; it goes on while the rate still changes. */
	Duration warmUpMin() {
		return Duration.ofSeconds(1);
	}

	/** The longest warm-up before a measurement, steady or not. */
	Duration warmUpMax() {
		return Duration.ofMillis(this.quick ? 1500 : 4000);
	}

	int idleMessages() {
		return this.quick ? 150 : 500;
	}

}
