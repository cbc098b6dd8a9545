package io.github.pgqueue.benchmarks;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.sql.Connection;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.LongAdder;

/**
 * {@code pressure}: the steady load (producers paced to {@code steady-rate} together, 2 000 msg/s by
 * default, here 4 threads; 4 consumers) of one system, after a warm-up that is not measured,, run through a baseline, a stress and a recovery phase for each kind of
 * pressure a PostgreSQL queue meets in production:
 * <ul>
 * <li>{@code idle-in-tx}: one session holds a writing transaction open for the stress phase, so
 * that vacuum can remove nothing dead since it began (the xmin horizon is pinned);</li>
 * <li>{@code active-readers}: 4 {@code REPEATABLE READ} sessions scan the system's table again and
 * again ({@code count(*)} in a transaction of its own, 20 ms apart);</li>
 * <li>{@code high-load}: the producers send 1.5 × the rate during the stress phase.</li>
 * </ul>
 * The three kinds run one after the other on the same consumers, so that each baseline also shows
 * whether the system recovered from the kind before. Then {@code many-queues}: 50 queues, one
 * listener (one thread) each, the producers sending round robin at the same rate, in one phase.
 * <p>
 * Per phase: the rate out (messages handled during the phase per second), latency p50/p99 of the
 * messages sent during the phase (send commit to handler start, handled by the end of the run plus a
 * grace period; the others are counted as {@code unhandled}), table + index size at the end of the
 * phase, the peak of {@code n_dead_tup}, the backlog at the end, and the top wait events of the
 * active client backends sampled from {@code pg_stat_activity} every 200 ms. For pgqueue's session
 * mode and the raw SQL limit, the plans of a claim at the end of the {@code idle-in-tx} baseline and
 * stress phases are written to {@code target/explain-pressure-*.txt}.
 * <p>
 * Phase lengths (baseline / stress / recovery): {@code idle-in-tx} 4 / 12 / 6 s,
 * {@code active-readers} and {@code high-load} 4 / 8 / 4 s, {@code many-queues} 8 s, each run after a
 * 2 s warm-up, with up to 2 s for the last messages; about 75 s per system, under 8 minutes for the
 * six. Quick mode: 1 / 2 / 1 s, 1 / 1 / 1 s and 2 s, warm-up 0.5 s, and only {@code pgqueue},
 * {@code raw-sql} and the two peers: about 75 s.
 */
final class PressureScenario {

	/** Twice steady's: on a busy 2-core machine two threads of single sends fall short of 2 000 msg/s. */
	static final int PRODUCERS = 2 * SteadyScenario.PRODUCERS;

	static final int CONSUMERS = SteadyScenario.CONSUMERS;

	static final int QUEUES = 50;

	static final int READERS = 4;

	static final double HIGH_LOAD_FACTOR = 1.5;

	private static final long SAMPLE_MILLIS = 200;

	private static final long READER_PAUSE_MILLIS = 20;

	private static final List<String> QUICK_SYSTEMS = List.of("pgqueue", "raw-sql", "spring-integration-jdbc",
			"db-queue");

	/** The systems whose claim is explained under {@code idle-in-tx}, and the file label of each. */
	private static final Map<String, String> EXPLAINED = Map.of("pgqueue", "pgqueue", "raw-sql", "raw-sql");

	/** raw-sql's receive from the front, as its consumers run it at batch 10. */
	private static final String RAW_RECEIVE = """
			DELETE FROM pgqueue.message
			 WHERE id = ANY (ARRAY(SELECT id FROM pgqueue.message
			                        WHERE queue = 'bench' AND visible_at <= now()
			                        ORDER BY priority, visible_at, id
			                        LIMIT 10 FOR UPDATE SKIP LOCKED))""";

	private final BenchContext context;

	private final Lengths lengths;

	PressureScenario(BenchContext context) {
		this.context = context;
		this.lengths = context.options().quick() ? Lengths.QUICK : Lengths.FULL;
	}

	void run() {
		this.context.database()
			.execute("CREATE TABLE IF NOT EXISTS bench_pressure (id int PRIMARY KEY, touched timestamptz)");
		this.context.database()
			.execute("INSERT INTO bench_pressure VALUES (1, now()) ON CONFLICT (id) DO NOTHING");
		List<QueueSystem> systems = this.context.systems()
			.stream()
			.filter((system) -> !this.context.options().quick() || QUICK_SYSTEMS.contains(system.name()))
			.toList();
		for (QueueSystem system : systems) {
			runSingleQueue(system);
			runManyQueues(system);
		}
		ratios(systems);
	}

	private void runSingleQueue(QueueSystem system) {
		prepare(system);
		double rate = this.context.options().steadyRate();
		int batchSize = batchSize(system);
		Latencies latencies = new Latencies(capacity(this.lengths.singleQueueSeconds(), rate));
		LongAdder handled = new LongAdder();
		AtomicLong sequence = new AtomicLong();
		List<Window> windows = new ArrayList<>();
		try (Consumers consumers = system.startConsumers(CONSUMERS, batchSize, (n) -> {
			latencies.started(n);
			handled.increment();
		})) {
			Producers.Send send = (first, count) -> {
				system.send(first);
				latencies.committed(first);
			};
			Load load = new Load(system, sequence, handled, send);
			Producers.run(PRODUCERS, this.lengths.warmUp(), rate, sequence, 1, send);
			// idle-in-tx
			windows.add(load.phase("idle-in-tx", "baseline", this.lengths.idleBaseline(), rate));
			explain(system, "baseline");
			try (Pressure pressure = idleInTransaction()) {
				windows.add(load.phase("idle-in-tx", "stress", this.lengths.idleStress(), rate));
				explain(system, "idle-in-tx");
			}
			windows.add(load.phase("idle-in-tx", "recovery", this.lengths.idleRecovery(), rate));
			// active-readers
			windows.add(load.phase("active-readers", "baseline", this.lengths.baseline(), rate));
			try (Pressure pressure = activeReaders(system.table())) {
				windows.add(load.phase("active-readers", "stress", this.lengths.stress(), rate));
			}
			windows.add(load.phase("active-readers", "recovery", this.lengths.recovery(), rate));
			// high-load
			windows.add(load.phase("high-load", "baseline", this.lengths.baseline(), rate));
			windows.add(load.phase("high-load", "stress", this.lengths.stress(), rate * HIGH_LOAD_FACTOR));
			windows.add(load.phase("high-load", "recovery", this.lengths.recovery(), rate));
			awaitHandled(handled, sequence.get());
		}
		record(system, CONSUMERS, batchSize, windows, latencies, handled.sum());
		system.clear();
	}

	private void runManyQueues(QueueSystem system) {
		int batchSize = batchSize(system);
		if (!system.hasQueues()) {
			System.out.println("# pressure: " + system.name() + " has one queue; no many-queues figure");
			this.context.results()
				.add(new BenchRow("pressure-many-queues", system.name(), QUEUES, String.valueOf(batchSize), 0, null,
						null, null, Map.of())
					.with("phase", "stress")
					.with("note", "one_queue_only"));
			return;
		}
		prepare(system);
		double rate = this.context.options().steadyRate();
		Latencies latencies = new Latencies(capacity(this.lengths.manyQueues().toSeconds() + 1, rate));
		LongAdder handled = new LongAdder();
		AtomicLong sequence = new AtomicLong();
		List<String> queues = new ArrayList<>();
		for (int i = 0; i < QUEUES; i++) {
			queues.add("mq-" + i);
		}
		List<Window> windows = new ArrayList<>();
		try (Consumers consumers = system.startQueueListeners(queues, batchSize, (n) -> {
			latencies.started(n);
			handled.increment();
		})) {
			Producers.Send send = (first, count) -> {
				system.send(queues.get((int) (first % QUEUES)), first);
				latencies.committed(first);
			};
			Producers.run(PRODUCERS, this.lengths.warmUp(), rate, sequence, 1, send);
			windows.add(new Load(system, sequence, handled, send).phase("many-queues", "stress",
					this.lengths.manyQueues(), rate));
			awaitHandled(handled, sequence.get());
		}
		record(system, QUEUES, batchSize, windows, latencies, handled.sum());
		system.clear();
	}

	private void prepare(QueueSystem system) {
		system.clear();
		this.context.database().vacuumAnalyze(system);
	}

	private static int batchSize(QueueSystem system) {
		return system.claimsInBatches() ? PgQueueSystem.DEFAULT_BATCH_SIZE : 1;
	}

	/** Room for every sequence number sent in {@code seconds} at up to 1.5 × {@code rate}, or flat out. */
	private static int capacity(long seconds, double rate) {
		double perSecond = (rate > 0) ? rate * HIGH_LOAD_FACTOR : 20_000;
		return (int) Math.min(20_000_000, seconds * perSecond * 1.2 + 10_000);
	}

	private void awaitHandled(LongAdder handled, long sent) {
		long deadline = System.nanoTime() + this.lengths.grace().toNanos();
		while (handled.sum() < sent && System.nanoTime() < deadline) {
			BenchContext.pause(10);
		}
	}

	private void record(QueueSystem system, int consumers, int batchSize, List<Window> windows, Latencies latencies,
			long handledTotal) {
		for (Window window : windows) {
			Latencies.Summary summary = latencies.summarize(window.firstSequence(), window.endSequence());
			long sent = window.endSequence() - window.firstSequence();
			BenchRow row = new BenchRow("pressure-" + window.kind(), system.name(), consumers,
					String.valueOf(batchSize), window.handled(), window.handled() / window.seconds(),
					summary.p50Millis(), summary.p99Millis(), Map.of())
				.with("phase", window.phase())
				.with("seconds", window.seconds())
				.with("target_in_msgs_per_s", window.targetRate())
				.with("in_msgs_per_s", sent / window.seconds())
				.with("backlog_end", window.backlogEnd())
				.with("size_kb", window.sizeEnd() / 1024)
				.with("dead_tuples_peak", window.deadPeak())
				.with("waits", window.waits())
				.with("unhandled", Math.max(0, sent - summary.count()));
			this.context.results().add(row);
		}
	}

	/**
	 * Per kind and phase, pgqueue's rate and p99 over each other system's; per system and kind, its
	 * stress and recovery figures over its baseline (many-queues: over the idle-in-tx baseline).
	 */
	private void ratios(List<QueueSystem> systems) {
		List<BenchRow> rows = this.context.results()
			.rows()
			.stream()
			.filter((row) -> row.scenario().startsWith("pressure-"))
			.toList();
		for (String mine : List.of("pgqueue", "pgqueue-tx")) {
			for (BenchRow row : rows) {
				if (!row.system().equals(mine) || row.msgsPerSecond() == null) {
					continue;
				}
				StringBuilder rates = new StringBuilder();
				StringBuilder p99s = new StringBuilder();
				for (QueueSystem other : systems) {
					BenchRow theirs = find(rows, row.scenario(), other.name(), row.extra().get("phase"));
					if (other.name().equals(mine) || theirs == null) {
						continue;
					}
					if (theirs.msgsPerSecond() != null && theirs.msgsPerSecond() > 0) {
						rates.append(' ').append(mine).append('/').append(other.name()).append('=')
							.append(Results.ratio(row.msgsPerSecond() / theirs.msgsPerSecond()));
					}
					if (row.p99Millis() != null && theirs.p99Millis() != null && theirs.p99Millis() > 0) {
						p99s.append(' ').append(mine).append('/').append(other.name()).append('=')
							.append(Results.ratio(row.p99Millis() / theirs.p99Millis()));
					}
				}
				String head = "scenario=" + row.scenario() + " phase=" + row.extra().get("phase");
				this.context.results().ratio(head + " metric=msgs_per_s" + rates);
				this.context.results().ratio(head + " metric=p99_ms" + p99s);
			}
		}
		for (QueueSystem system : systems) {
			BenchRow first = find(rows, "pressure-idle-in-tx", system.name(), "baseline");
			for (BenchRow row : rows) {
				if (!row.system().equals(system.name()) || "baseline".equals(row.extra().get("phase"))) {
					continue;
				}
				BenchRow baseline = row.scenario().equals("pressure-many-queues") ? first
						: find(rows, row.scenario(), system.name(), "baseline");
				if (baseline == null || row.msgsPerSecond() == null || baseline.msgsPerSecond() == null) {
					continue;
				}
				StringBuilder line = new StringBuilder("scenario=").append(row.scenario())
					.append(" system=").append(system.name())
					.append(" phase=").append(row.extra().get("phase"))
					.append(" over=baseline msgs_per_s=")
					.append(Results.ratio(row.msgsPerSecond() / baseline.msgsPerSecond()));
				if (row.p99Millis() != null && baseline.p99Millis() != null && baseline.p99Millis() > 0) {
					line.append(" p99_ms=").append(Results.ratio(row.p99Millis() / baseline.p99Millis()));
				}
				this.context.results().ratio(line.toString());
			}
		}
	}

	private static BenchRow find(List<BenchRow> rows, String scenario, String system, String phase) {
		return rows.stream()
			.filter((row) -> row.scenario().equals(scenario) && row.system().equals(system)
					&& phase.equals(row.extra().get("phase")))
			.findFirst()
			.orElse(null);
	}

	/** One session with a writing transaction open (an xid assigned) until closed. */
	private Pressure idleInTransaction() {
		try {
			Connection connection = this.context.database().pressureConnection();
			connection.setAutoCommit(false);
			try (Statement statement = connection.createStatement()) {
				statement.executeUpdate("UPDATE bench_pressure SET touched = now() WHERE id = 1");
			}
			return () -> close(List.of(connection));
		}
		catch (SQLException ex) {
			throw new IllegalStateException("Could not open the idle-in-transaction session", ex);
		}
	}

	/** {@link #READERS} threads, each scanning {@code table} in REPEATABLE READ transactions until closed. */
	private Pressure activeReaders(String table) {
		List<Thread> threads = new ArrayList<>();
		List<Connection> connections = new ArrayList<>();
		try {
			for (int i = 0; i < READERS; i++) {
				Connection connection = this.context.database().pressureConnection();
				connection.setAutoCommit(false);
				connection.setTransactionIsolation(Connection.TRANSACTION_REPEATABLE_READ);
				connections.add(connection);
				Thread thread = new Thread(() -> scan(connection, table), "pressure-reader-" + i);
				threads.add(thread);
			}
		}
		catch (SQLException ex) {
			close(connections);
			throw new IllegalStateException("Could not open the reader sessions", ex);
		}
		threads.forEach(Thread::start);
		return () -> {
			threads.forEach(Thread::interrupt);
			for (Thread thread : threads) {
				try {
					thread.join(10_000);
				}
				catch (InterruptedException ex) {
					Thread.currentThread().interrupt();
				}
			}
			close(connections);
		};
	}

	private static void scan(Connection connection, String table) {
		try (Statement statement = connection.createStatement()) {
			while (!Thread.currentThread().isInterrupted()) {
				try (ResultSet rs = statement.executeQuery("SELECT count(*) FROM " + table)) {
					rs.next();
				}
				connection.commit();
				Thread.sleep(READER_PAUSE_MILLIS);
			}
		}
		catch (InterruptedException ex) {
			Thread.currentThread().interrupt();
		}
		catch (SQLException ex) {
			throw new IllegalStateException("A reader session failed", ex);
		}
	}

	/** Closes the sessions; an open transaction is rolled back by the close. */
	private static void close(List<Connection> connections) {
		for (Connection connection : connections) {
			try {
				connection.close();
			}
			catch (SQLException ex) {
				throw new IllegalStateException("Could not close a pressure session", ex);
			}
		}
	}

	/** Writes the plan of one claim of the system, if it is one whose claim is explained. */
	private void explain(QueueSystem system, String phase) {
		String label = EXPLAINED.get(system.name());
		if (label == null) {
			return;
		}
		if (system.name().equals("pgqueue")) {
			BacklogScenario.explainClaim(this.context, "pressure-" + phase);
			return;
		}
		StringBuilder plan = new StringBuilder();
		try (Connection connection = this.context.database().adminPool().getConnection()) {
			connection.setAutoCommit(false);
			try (Statement statement = connection.createStatement()) {
				statement.execute("SET LOCAL enable_seqscan = off"); // as raw-sql's consumers run
			}
			try (Statement statement = connection.createStatement();
					ResultSet rs = statement.executeQuery("EXPLAIN (ANALYZE, BUFFERS) " + RAW_RECEIVE)) {
				while (rs.next()) {
					plan.append(rs.getString(1)).append('\n');
				}
			}
			// The receive deleted what it took: rolled back, the messages stay for the consumers.
			connection.rollback();
			connection.setAutoCommit(true);
			Files.createDirectories(this.context.outputDirectory());
			Files.writeString(this.context.outputDirectory().resolve("explain-" + label + "-pressure-" + phase + ".txt"),
					plan);
		}
		catch (SQLException ex) {
			throw new IllegalStateException("Could not explain the raw receive", ex);
		}
		catch (IOException ex) {
			throw new UncheckedIOException(ex);
		}
	}

	/** A session or sessions put beside the load for a stress phase; closing ends them. */
	@FunctionalInterface
	private interface Pressure extends AutoCloseable {

		@Override
		void close();

	}

	/** The load of one system's run: its producers, the sequence they number from, what was handled. */
	private final class Load {

		private final QueueSystem system;

		private final AtomicLong sequence;

		private final LongAdder handled;

		private final Producers.Send send;

		Load(QueueSystem system, AtomicLong sequence, LongAdder handled, Producers.Send send) {
			this.system = system;
			this.sequence = sequence;
			this.handled = handled;
			this.send = send;
		}

		/** Runs the producers for one phase while a sampler watches the database. */
		Window phase(String kind, String phase, Duration duration, double rate) {
			BenchDatabase database = PressureScenario.this.context.database();
			String table = this.system.table();
			long first = this.sequence.get();
			long handledBefore = this.handled.sum();
			Sampler sampler = new Sampler(database, table);
			sampler.start();
			long started = System.nanoTime();
			Producers.run(PRODUCERS, duration, rate, this.sequence, 1, this.send);
			double seconds = (System.nanoTime() - started) / 1e9;
			long end = this.sequence.get();
			long handledNow = this.handled.sum();
			sampler.stop();
			return new Window(kind, phase, first, end, handledNow - handledBefore, seconds, rate,
					Math.max(0, end - handledNow), database.totalSize(table), sampler.deadPeak(), sampler.waits());
		}

	}

	/** Samples dead tuples and wait events every {@link #SAMPLE_MILLIS} on a thread of its own. */
	private static final class Sampler {

		private final BenchDatabase database;

		private final String table;

		private final Map<String, Integer> waits = new HashMap<>();

		private final Thread thread;

		private volatile long deadPeak;

		private volatile RuntimeException failure;

		Sampler(BenchDatabase database, String table) {
			this.database = database;
			this.table = table;
			this.thread = new Thread(this::run, "pressure-sampler");
		}

		void start() {
			this.thread.start();
		}

		private void run() {
			try {
				while (!Thread.currentThread().isInterrupted()) {
					peakOnce();
					List<String> sample = this.database.waitSample();
					synchronized (this.waits) {
						sample.forEach((wait) -> this.waits.merge(wait, 1, Integer::sum));
					}
					Thread.sleep(SAMPLE_MILLIS);
				}
			}
			catch (InterruptedException ex) {
				Thread.currentThread().interrupt();
			}
			catch (RuntimeException ex) {
				this.failure = ex;
			}
		}

		void stop() {
			this.thread.interrupt();
			try {
				this.thread.join(10_000);
			}
			catch (InterruptedException ex) {
				Thread.currentThread().interrupt();
			}
			if (this.failure != null) {
				throw new IllegalStateException("The pressure sampler failed", this.failure);
			}
			peakOnce();
		}

		private void peakOnce() {
			this.deadPeak = Math.max(this.deadPeak, this.database.deadTuples(this.table));
		}

		long deadPeak() {
			return this.deadPeak;
		}

		/** The three most frequent waits as {@code event:percent}, comma-separated; {@code -} if none. */
		String waits() {
			Map<String, Integer> copy;
			synchronized (this.waits) {
				copy = new LinkedHashMap<>(this.waits);
			}
			int total = copy.values().stream().mapToInt(Integer::intValue).sum();
			if (total == 0) {
				return "-";
			}
			StringBuilder text = new StringBuilder();
			copy.entrySet()
				.stream()
				.sorted(Map.Entry.<String, Integer>comparingByValue().reversed())
				.limit(3)
				.forEach((entry) -> text.append(text.isEmpty() ? "" : ",")
					.append(entry.getKey())
					.append(':')
					.append(String.format(Locale.ROOT, "%.0f%%", 100.0 * entry.getValue() / total)));
			return text.toString();
		}

	}

	/** What one phase of one system measured; its messages are numbered from first to end (exclusive). */
	private record Window(String kind, String phase, long firstSequence, long endSequence, long handled,
			double seconds, double targetRate, long backlogEnd, long sizeEnd, long deadPeak, String waits) {
	}

	/** How long each phase runs. */
	private record Lengths(Duration idleBaseline, Duration idleStress, Duration idleRecovery, Duration baseline,
			Duration stress, Duration recovery, Duration manyQueues, Duration warmUp, Duration grace) {

		static final Lengths FULL = new Lengths(Duration.ofSeconds(4), Duration.ofSeconds(12), Duration.ofSeconds(6),
				Duration.ofSeconds(4), Duration.ofSeconds(8), Duration.ofSeconds(4), Duration.ofSeconds(8),
				Duration.ofSeconds(2), Duration.ofSeconds(2));

		static final Lengths QUICK = new Lengths(Duration.ofSeconds(1), Duration.ofSeconds(2), Duration.ofSeconds(1),
				Duration.ofSeconds(1), Duration.ofSeconds(1), Duration.ofSeconds(1), Duration.ofSeconds(2),
				Duration.ofMillis(500), Duration.ofSeconds(1));

		long singleQueueSeconds() {
			return this.warmUp.plus(this.idleBaseline).plus(this.idleStress)
				.plus(this.idleRecovery)
				.plus(this.baseline.plus(this.stress).plus(this.recovery).multipliedBy(2))
				.toSeconds() + 1;
		}

	}

}
