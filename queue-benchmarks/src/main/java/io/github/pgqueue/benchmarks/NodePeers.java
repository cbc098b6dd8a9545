package io.github.pgqueue.benchmarks;

import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.stream.Collectors;

/**
 * The Node.js peers, pg-boss and graphile-worker: each scenario they share with the Java systems
 * runs in a Node program ({@code peers/bench.mjs}) that sends and consumes through the peer's own
 * API, on the benchmark's PostgreSQL, in a schema of the peer's own. Sizes, counts, rates, batch
 * sizes and consumers are the Java scenarios'; each figure comes back as one {@code RESULT} line
 * and becomes a {@link BenchRow}, so that the {@code BENCH}, {@code RATIO} and report lines
 * include the peers. A peer whose program fails leaves a {@code #} line and no figure; the run
 * goes on.
 */
final class NodePeers {

	/** The peers, in report order. */
	static final List<String> NAMES = List.of("pg-boss", "graphile-worker");

	/** The schema each peer keeps its tables in: its default, created by the peer itself. */
	private static final Map<String, String> SCHEMAS = Map.of("pg-boss", "pgboss", "graphile-worker", "graphile_worker");

	private static final Path DIRECTORY = Path.of("peers");

	private static final int[] CONCURRENCY = { 1, 4 };

	private static final int[] BATCH_SIZES = { PgQueueSystem.DEFAULT_BATCH_SIZE, 100 };

	/** Room for start-up, bulk loads and shutdown on top of what a scenario itself takes. */
	private static final Duration SLACK = Duration.ofMinutes(3);

	private final List<String> peers;

	private final NodeRuntime node;

	private final String databaseUrl;

	private NodePeers(List<String> peers, NodeRuntime node, String databaseUrl) {
		this.peers = peers;
		this.node = node;
		this.databaseUrl = databaseUrl;
	}

	/**
	 * The peers {@code options} select, with their packages installed; none, after one line saying
	 * why, when this machine cannot run them, or in a quick run that does not name them.
	 */
	static NodePeers prepare(BenchDatabase database, BenchOptions options, Path output) {
		List<String> peers = NAMES.stream().filter(options::measures).toList();
		if (peers.isEmpty()) {
			return new NodePeers(List.of(), null, null);
		}
		try {
			NodeRuntime node = NodeRuntime.install(DIRECTORY, output.resolve("npm-ci.log"));
			System.out.println("# peers: " + String.join(", ", peers) + " on Node " + node.version());
			String url = "postgresql://" + database.username() + "@"
					+ database.jdbcUrl().substring("jdbc:postgresql://".length());
			return new NodePeers(peers, node, url);
		}
		catch (NodeRuntime.Missing ex) {
			System.out.println("# peers: " + String.join(", ", peers) + " skipped: " + ex.getMessage());
			return new NodePeers(List.of(), null, null);
		}
	}

	/** Measures the peers in {@code scenario}; run before the Java systems, whose RATIO lines then include them. */
	void run(String scenario, BenchContext context) {
		if (this.peers.isEmpty()) {
			return;
		}
		switch (scenario) {
			case "send" -> {
				for (int threads : CONCURRENCY) {
					this.peers.forEach((peer) -> send(context, "send", peer, threads, 1));
				}
			}
			case "send-batch" -> this.peers.forEach((peer) -> send(context, "send-batch", peer, 1, SendScenario.BATCH));
			case "drain" -> this.peers.forEach((peer) -> drain(context, peer));
			case "steady" -> this.peers.forEach((peer) -> steady(context, peer));
			case "delayed" -> this.peers.forEach((peer) -> delayed(context, peer));
			default -> System.out.println("# " + scenario + ": " + String.join(", ", this.peers) + " not measured");
		}
	}

	/**
	 * After the Java systems: in {@code steady}, one line per pgqueue system of its p99 latency over
	 * each peer's, {@code metric=p99_ms}, lower is better (the scenario's own RATIO lines compare rates).
	 */
	void compare(String scenario, BenchContext context) {
		if (this.peers.isEmpty() || !scenario.equals("steady")) {
			return;
		}
		Results results = context.results();
		for (String system : Results.MINE) {
			BenchRow mine = results.find("steady", system, SteadyScenario.CONSUMERS, batch(PgQueueSystem.DEFAULT_BATCH_SIZE));
			if (mine == null || mine.p99Millis() == null) {
				continue;
			}
			String ratios = this.peers.stream()
				.map((peer) -> results.find("steady", peer, SteadyScenario.CONSUMERS, mine.batch()))
				.filter((theirs) -> theirs != null && theirs.p99Millis() != null && theirs.p99Millis() > 0)
				.map((theirs) -> system + "/" + theirs.system() + "=" + Results.ratio(mine.p99Millis() / theirs.p99Millis()))
				.collect(Collectors.joining(" "));
			if (!ratios.isEmpty()) {
				results.ratio("scenario=steady consumers=" + mine.consumers() + " batch=" + mine.batch()
						+ " metric=p99_ms " + ratios);
			}
		}
	}

	private void send(BenchContext context, String scenario, String peer, int threads, int perSend) {
		Duration warmUp = Duration.ofSeconds(1);
		Duration duration = context.options().sendDuration();
		Map<String, String> figures = measure(peer, "send", "", warmUp.plus(duration),
				poolSize(threads, 0), "threads", threads, "per-send", perSend, "warm-up-ms", warmUp.toMillis(),
				"duration-ms", duration.toMillis());
		if (figures != null) {
			long sent = Long.parseLong(figures.get("messages"));
			context.results()
				.add(BenchRow.throughput(scenario, peer, threads, batch(perSend), sent, sent / seconds(figures)));
		}
	}

	/**
	 * As the Java drains: warmed up until steady, then {@code drain-runs} drains of
	 * {@code drain-seconds} each from backlogs sized by the warm-up's rate; the median rate, with the
	 * range when there are several.
	 */
	private void drain(BenchContext context, String peer) {
		BenchOptions options = context.options();
		Duration window = options.drainTime();
		int runs = options.drainRuns();
		// Each run: up to three attempts of a drain window, each after a bulk load and a vacuum.
		Duration expected = options.warmUpMax().multipliedBy(3).plus(window.multipliedBy(3L * runs));
		for (int concurrency : CONCURRENCY) {
			for (int batchSize : BATCH_SIZES) {
				Map<String, String> figures = measure(peer, "drain", "", expected, poolSize(0, concurrency),
						"consumers", concurrency, "batch", batchSize, "poll-ms", PgQueueSystem.POLL_INTERVAL.toMillis(),
						"drain-ms", window.toMillis(), "min-drain-ms", BenchOptions.MIN_DRAIN_SECONDS * 1000,
						"runs", runs, "warm-up-min-ms", options.warmUpMin().toMillis(), "warm-up-max-ms",
						options.warmUpMax().toMillis(), "backlog-margin", Drain.BACKLOG_MARGIN, "min-messages",
						Drain.MIN_MESSAGES, "max-messages", Drain.MAX_MESSAGES, "first-guess", Drain.FIRST_GUESS);
				if (figures == null) {
					continue;
				}
				BenchRow row = BenchRow
					.throughput("drain", peer, concurrency, batch(batchSize), Long.parseLong(figures.get("messages")),
							Double.parseDouble(figures.get("rate")))
					.with("backlog", Long.parseLong(figures.get("backlog")))
					.with("seconds", seconds(figures))
					.with("warm_up_s", Double.parseDouble(figures.get("warm_up_s")))
					.with("runs", Integer.parseInt(figures.get("runs")));
				if (runs > 1) {
					row = row.with("min", BenchRow.format(Double.parseDouble(figures.get("min")), 1))
						.with("max", BenchRow.format(Double.parseDouble(figures.get("max")), 1));
				}
				context.results().add(row);
			}
		}
	}

	private void steady(BenchContext context, String peer) {
		Duration duration = context.options().steady();
		Duration grace = Duration.ofSeconds(15);
		double rate = context.options().steadyRate();
		Map<String, String> figures = measure(peer, "steady", "", duration.plus(grace),
				poolSize(SteadyScenario.PRODUCERS, SteadyScenario.CONSUMERS), "producers", SteadyScenario.PRODUCERS,
				"consumers", SteadyScenario.CONSUMERS, "batch", PgQueueSystem.DEFAULT_BATCH_SIZE, "poll-ms",
				PgQueueSystem.POLL_INTERVAL.toMillis(), "rate", rate, "duration-ms", duration.toMillis(), "grace-ms",
				grace.toMillis(), "capacity", 4_000_000, "warm-up-ms", SteadyScenario.WARM_UP_NANOS / 1_000_000,
				"slow-ms", SteadyScenario.SLOW_MILLIS);
		if (figures == null) {
			return;
		}
		long out = Long.parseLong(figures.get("messages"));
		double seconds = seconds(figures);
		context.results()
			.add(new BenchRow("steady", peer, SteadyScenario.CONSUMERS, batch(PgQueueSystem.DEFAULT_BATCH_SIZE), out,
					out / seconds, millis(figures, "p50_ms"), millis(figures, "p99_ms"), Map.of())
				.with("producers", SteadyScenario.PRODUCERS)
				.with("target_in_msgs_per_s", rate)
				.with("in_msgs_per_s", Long.parseLong(figures.get("in_messages")) / seconds)
				.with("unhandled", figures.get("unhandled"))
				.with("p99_after_5s_ms", millis(figures, "p99_after_warm_up_ms"))
				.with("over_100ms", figures.get("slow"))
				.with("seconds_most_over_100ms", figures.get("slowest_seconds")));
	}

	private void delayed(BenchContext context, String peer) {
		StringBuilder delays = new StringBuilder();
		DelayedScenario.delays().forEach((delay) -> delays.append(delay.toNanos() / 1e6).append('\n'));
		Duration duration = DelayedScenario.SPREAD.plus(DelayedScenario.GRACE)
			.plusMillis(DelayedScenario.STATS_FLUSH_MILLIS);
		Map<String, String> figures = measure(peer, "delayed", delays.toString(), duration, poolSize(1, 1), "batch",
				PgQueueSystem.DEFAULT_BATCH_SIZE, "poll-ms", DelayedScenario.POLL_INTERVAL.toMillis(), "grace-ms",
				DelayedScenario.GRACE.toMillis(), "stats-flush-ms", DelayedScenario.STATS_FLUSH_MILLIS);
		if (figures == null) {
			return;
		}
		long transactions = Long.parseLong(figures.get("transactions"));
		int messages = DelayedScenario.MESSAGES;
		context.results()
			.add(new BenchRow("delayed", peer, 1, batch(PgQueueSystem.DEFAULT_BATCH_SIZE),
					Long.parseLong(figures.get("messages")), null, millis(figures, "p50_ms"), millis(figures, "p99_ms"),
					Map.of())
				.with("max_ms", millis(figures, "max_ms"))
				.with("poll_interval_s", DelayedScenario.POLL_INTERVAL.toSeconds())
				.with("send_s", Double.parseDouble(figures.get("send_s")))
				.with("due_after_sends", figures.get("due_after_sends"))
				.with("after_sends_p50_ms", BenchRow.format(millis(figures, "after_sends_p50_ms"), 2))
				.with("after_sends_p99_ms", BenchRow.format(millis(figures, "after_sends_p99_ms"), 2))
				// The sends are one transaction each; the rest is the worker's (and its wake-ups').
				.with("consumer_xacts_per_msg", Math.max(0, transactions - messages) / (double) messages)
				.with("early", figures.get("early"))
				.with("unhandled", figures.get("unhandled")));
	}

	/**
	 * Runs {@code scenario} for {@code peer} with the arguments given as key, value, key, value…;
	 * returns the figures of its RESULT line, or null (after a line saying why) if it failed.
	 */
	private Map<String, String> measure(String peer, String scenario, String input, Duration expected, int poolSize,
			Object... keyValues) {
		List<String> args = new ArrayList<>(List.of("bench.mjs", peer, scenario, "schema=" + SCHEMAS.get(peer),
				"pool-size=" + poolSize));
		for (int i = 0; i < keyValues.length; i += 2) {
			args.add(keyValues[i] + "=" + keyValues[i + 1]);
		}
		try {
			Map<String, String> figures = null;
			for (String line : this.node.run(args, Map.of("DATABASE_URL", this.databaseUrl), input,
					expected.plus(SLACK))) {
				if (line.startsWith("RESULT ")) {
					figures = parse(line);
				}
				else {
					System.out.println("# " + peer + ": " + line);
				}
			}
			if (figures == null) {
				throw new IllegalStateException("node " + String.join(" ", args) + " printed no RESULT line");
			}
			return figures;
		}
		catch (RuntimeException ex) {
			System.out.println("# " + scenario + ": " + peer + " failed, no figure: " + ex.getMessage());
			return null;
		}
	}

	private static Map<String, String> parse(String line) {
		Map<String, String> figures = new LinkedHashMap<>();
		for (String field : line.substring("RESULT ".length()).trim().split("\\s+")) {
			int eq = field.indexOf('=');
			figures.put(field.substring(0, eq), field.substring(eq + 1));
		}
		return figures;
	}

	/** Both libraries' default pool (10), or room for every producer and consumer plus a listener and a spare. */
	private static int poolSize(int producers, int consumers) {
		return Math.max(10, producers + consumers + 2);
	}

	private static String batch(int size) {
		return String.valueOf(size);
	}

	private static double seconds(Map<String, String> figures) {
		return Double.parseDouble(figures.get("seconds"));
	}

	private static Double millis(Map<String, String> figures, String key) {
		String value = figures.get(key);
		return (value == null || value.equals("-")) ? null : Double.valueOf(value);
	}

}
