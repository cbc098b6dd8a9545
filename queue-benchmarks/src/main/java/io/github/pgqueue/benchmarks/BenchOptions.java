package io.github.pgqueue.benchmarks;

import java.time.Duration;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Set;

/**
 * The command line: {@code quick} (send, send-batch, drain and latency-idle at reduced size) or
 * {@code full} (every scenario); {@code only=a,b} to pick scenarios; {@code systems=a,b} to measure only
 * the systems of these names (ratios need their baseline among them); {@code churn-seconds=N},
 * {@code steady-seconds=N} and {@code steady-rate=N} (messages/s the producers of steady and churn
 * send together, 0 for flat out; default 2000); {@code backlog-huge=N} (the largest backlog of the
 * backlog scenario, default 10 000 000; 0 leaves it out). A leading {@code --} on any of them is
 * accepted.
 */
record BenchOptions(boolean quick, Set<String> scenarios, Set<String> systems, Duration steady, Duration churn,
		double steadyRate, int hugeBacklog) {

	static final List<String> ALL = List.of("send", "send-batch", "drain", "latency-idle", "delayed", "steady",
			"backlog", "idle-cost", "many-queues", "churn", "pressure", "filter", "fifo-groups", "memory");

	static final List<String> QUICK = List.of("send", "send-batch", "drain", "latency-idle");

	static BenchOptions parse(String[] args) {
		boolean quick = false;
		Set<String> only = null;
		Set<String> systems = Set.of();
		Duration steady = Duration.ofSeconds(60);
		Duration churn = Duration.ofSeconds(180);
		double steadyRate = 2000;
		int hugeBacklog = 10_000_000;
		for (String raw : String.join(" ", args).trim().split("\\s+")) {
			String arg = raw.startsWith("--") ? raw.substring(2) : raw;
			if (arg.isEmpty() || arg.equals("full")) {
				continue;
			}
			if (arg.equals("quick")) {
				quick = true;
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
			else {
				throw new IllegalArgumentException("Unknown argument '" + raw + "'; expected quick, full, only=a,b, "
						+ "systems=a,b, steady-seconds=N, steady-rate=N, churn-seconds=N or backlog-huge=N");
			}
		}
		Set<String> scenarios = new LinkedHashSet<>(quick ? QUICK : ALL);
		if (only != null) {
			scenarios.retainAll(only);
			if (scenarios.isEmpty()) {
				scenarios.addAll(only);
			}
		}
		return new BenchOptions(quick, scenarios, systems, steady, churn, steadyRate, hugeBacklog);
	}

	private static void requireKnown(String scenario) {
		if (!ALL.contains(scenario)) {
			throw new IllegalArgumentException("Unknown scenario '" + scenario + "'; known: " + ALL);
		}
	}

	/** Whether the system of this name is measured: every system unless {@code systems=a,b} names some. */
	boolean measures(String system) {
		return this.systems.isEmpty() || this.systems.contains(system);
	}

	boolean runs(String scenario) {
		return this.scenarios.contains(scenario);
	}

	/** Long enough to measure, short enough for the quick mode's 3-minute budget. */
	Duration sendDuration() {
		return Duration.ofSeconds(this.quick ? 2 : 5);
	}

	int drainBacklog() {
		return this.quick ? 30_000 : 200_000;
	}

	/** The longest a drain may run: slow systems are measured on the part of the backlog they get through. */
	Duration drainCap() {
		return Duration.ofSeconds(this.quick ? 6 : 25);
	}

	int idleMessages() {
		return this.quick ? 150 : 500;
	}

}
