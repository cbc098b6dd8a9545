package io.github.pgqueue.benchmarks;

import java.nio.file.Path;
import java.time.OffsetDateTime;
import java.time.ZoneOffset;
import java.time.format.DateTimeFormatter;
import java.util.ArrayList;
import java.util.List;

import io.github.pgqueue.ConsumptionMode;

/**
 * The benchmark program. Starts one embedded PostgreSQL with pgqueue's migrations, then runs each
 * scenario of {@code bench.md} for pgqueue, the plain-SQL limit (and, in the drain, the same SQL
 * planned at every call), the same protocol without the framework, Spring Integration's JDBC
 * channel store, db-queue, and pg-boss and graphile-worker (in Node, see {@link NodePeers}),
 * printing {@code BENCH} and {@code RATIO} lines and writing them under {@code target/}.
 * Arguments: see {@link BenchOptions}.
 */
public final class BenchmarkMain {

	/** The FIFO groups of {@code pgqueue-tx-fifo}. */
	static final int FIFO_GROUPS = 1000;

	private BenchmarkMain() {
	}

	public static void main(String[] args) {
		// Charts are drawn off screen, whichever way the program was started.
		System.setProperty("java.awt.headless", "true");
		int status = 1;
		try {
			run(BenchOptions.parse(args));
			status = 0;
		}
		catch (RuntimeException ex) {
			ex.printStackTrace();
		}
		finally {
			// Consumer threads of a failed scenario may still run; the figures taken are written.
			System.exit(status);
		}
	}

	private static void run(BenchOptions options) {
		long started = System.nanoTime();
		try (BenchDatabase database = BenchDatabase.start(options.probe())) {
			String date = OffsetDateTime.now(ZoneOffset.UTC).format(DateTimeFormatter.ISO_LOCAL_DATE);
			String hardware = Runtime.getRuntime().availableProcessors() + " cores, PostgreSQL "
					+ database.serverVersion() + " (embedded), Java " + System.getProperty("java.version");
			String machine = "Date " + date + "; machine: " + hardware + ".";
			String mode = options.quick() ? "quick" : "full";
			System.out.println("MACHINE " + machine);
			List<QueueSystem> every = List.of(new PgQueueSystem(database, ConsumptionMode.SESSION),
					new PgQueueSystem(database, ConsumptionMode.TRANSACTIONAL),
					new PgQueueSystem(database, ConsumptionMode.TRANSACTIONAL, FIFO_GROUPS),
					new RawSqlSystem(database, RawSqlSystem.Planning.GENERIC),
					new RawSqlSystem(database, RawSqlSystem.Planning.PER_CALL), new RawSameGuaranteeSystem(database), new SpringIntegrationSystem(database),
					new DbQueueSystem(database));
			List<QueueSystem> systems = every.stream().filter((system) -> options.measures(system.name())).toList();
			if (options.quick() && options.systems().isEmpty()) {
				List<String> left = new ArrayList<>(every.stream().map(QueueSystem::name).toList());
				left.addAll(NodePeers.NAMES);
				left.addAll(BinderSystem.NAMES);
				left.removeAll(BenchOptions.QUICK_SYSTEMS);
				System.out.println("# quick run: " + String.join(", ", left) + " left out; name them in systems= to measure them");
			}
			Results results = new Results();
			Path output = Path.of("target");
			NodePeers peers = NodePeers.prepare(database, options, output);
			BenchContext context = new BenchContext(database, systems, options, results, output);
			ReportWriter report = new ReportWriter(output, machine, mode, mode + " run of " + date + ", " + hardware);
			for (String scenario : options.scenarios()) {
				System.out.println("# " + scenario);
				long scenarioStarted = System.nanoTime();
				peers.run(scenario, context);
				run(scenario, context);
				peers.compare(scenario, context);
				report.write(results);
				System.out.printf("# %s took %.0f s%n", scenario, (System.nanoTime() - scenarioStarted) / 1e9);
			}
		}
		System.out.printf("# done in %.0f s%n", (System.nanoTime() - started) / 1e9);
	}

	private static void run(String scenario, BenchContext context) {
		switch (scenario) {
			case "send" -> new SendScenario(context).runSend();
			case "send-batch" -> new SendScenario(context).runSendBatch();
			case "drain" -> new DrainScenario(context).run();
			case "latency-idle" -> new LatencyIdleScenario(context).run();
			case "delayed" -> new DelayedScenario(context).run();
			case "steady" -> new SteadyScenario(context).run();
			case "backlog" -> new BacklogScenario(context).run();
			case "idle-cost" -> new IdleCostScenario(context).run();
			case "churn" -> new ChurnScenario(context).run();
			case "pressure" -> new PressureScenario(context).run();
			case "memory" -> new MemoryScenario(context).run();
			case "filter" -> new FilterScenario(context).run();
			case "fifo-groups" -> new FifoGroupsScenario(context).run();
			case "many-queues" -> new ManyQueuesScenario(context).run();
			case "binder" -> new BinderScenario(context).run();
			case "retention" -> new RetentionScenario(context).run();
			case "rate-limit" -> new RateLimitScenario(context).run();
			case "granted-role" -> new GrantedRoleScenario(context).run();
			case "noisy-neighbour" -> new NoisyNeighbourScenario(context).run();
			default -> throw new IllegalArgumentException("Unknown scenario " + scenario);
		}
	}

}
