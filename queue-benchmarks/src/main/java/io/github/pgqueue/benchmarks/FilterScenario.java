package io.github.pgqueue.benchmarks;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.time.Duration;
import java.util.List;

import io.github.pgqueue.ConsumptionMode;
import io.github.pgqueue.QueueTemplate;
import io.github.pgqueue.SendOptions;
import io.github.pgqueue.internal.HeaderFilter;
import io.github.pgqueue.internal.NamedStatement;
import io.github.pgqueue.internal.QueueSql;

/**
 * {@code filter}: a listener with a header filter drains, for the drain time ({@code drain-seconds}),
 * the 1 % of a backlog that it matches (every hundredth message, the others stay), in both modes,
 * with the GIN index on headers and without it, after one unmeasured drain; the baseline is an
 * unfiltered listener draining the matching messages alone in their queue. Also the cost of that
 * index to senders: single sends and batches of 100, with and without it, alternated. Writes the
 * plan of the filtered claim (custom and generic) at a backlog of 100 000.
 */
final class FilterScenario {

	private static final String QUEUE = "filter-bench";

	private static final String INDEX = "pgqueue.message_headers_idx";

	private static final String FILTER = "type = 'match'";

	/** One message in this many matches the filter. */
	private static final int MATCH_EVERY = 100;

	/** The backlog the filtered claim's plans are written at. */
	private static final int EXPLAINED_BACKLOG = 100_000;

	private static final int CONCURRENCY = 4;

	private static final int BATCH = PgQueueSystem.DEFAULT_BATCH_SIZE;

	private final BenchContext context;

	private final QueueTemplate template;

	FilterScenario(BenchContext context) {
		this.context = context;
		this.template = QueueTemplate.builder(context.database().appPool()).build();
	}

	void run() {
		sendCost();
		// Matches drain at about two thousand a second, alone at 20 000 to 30 000 (a backlog that runs out grows).
		Drain.Timed filtered = new Drain.Timed(this.context, 2_500);
		Drain.Timed alone = new Drain.Timed(this.context, 30_000);
		setIndex(true);
		drain(filtered, ConsumptionMode.SESSION, FILTER);
		drain(alone, ConsumptionMode.SESSION, null);
		for (boolean indexed : List.of(true, false)) {
			setIndex(indexed);
			load(EXPLAINED_BACKLOG / MATCH_EVERY, true);
			explain(indexed ? "index" : "no-index");
			for (ConsumptionMode mode : ConsumptionMode.values()) {
				record("filter", systemName(mode) + (indexed ? "" : "-no-index"), drain(filtered, mode, FILTER),
						filtered.backlog() * MATCH_EVERY);
			}
		}
		setIndex(true);
		for (ConsumptionMode mode : ConsumptionMode.values()) {
			record("filter", systemName(mode) + "-unfiltered-alone", drain(alone, mode, null), alone.backlog());
		}
		this.context.database().execute("TRUNCATE pgqueue.message");
		this.context.results().ratios("filter");
		for (ConsumptionMode mode : ConsumptionMode.values()) {
			String name = systemName(mode);
			this.context.results()
				.ratio("scenario=filter system=" + name + " filtered/unfiltered-alone="
						+ ratio("filter", name, name + "-unfiltered-alone") + " index/no-index="
						+ ratio("filter", name, name + "-no-index"));
		}
		this.context.results()
			.ratio("scenario=filter-send index/no-index single=" + ratio("filter-send", "pgqueue", "pgqueue-no-index")
					+ " batch100=" + ratio("filter-send-batch", "pgqueue", "pgqueue-no-index"));
	}

	private static String systemName(ConsumptionMode mode) {
		return (mode == ConsumptionMode.TRANSACTIONAL) ? "pgqueue-tx" : "pgqueue";
	}

	private String ratio(String scenario, String mine, String theirs) {
		return Results.ratio(rate(scenario, mine) / rate(scenario, theirs));
	}

	private double rate(String scenario, String system) {
		return this.context.results().rows().stream()
			.filter((row) -> row.scenario().equals(scenario) && row.system().equals(system))
			.mapToDouble(BenchRow::msgsPerSecond)
			.findFirst()
			.orElse(Double.NaN);
	}

	/** Single sends (1 thread) and batches of 100 with two headers, with and without the index, alternated. */
	private void sendCost() {
		int singles = this.context.options().quick() ? 3_000 : 10_000;
		int batches = this.context.options().quick() ? 100 : 300;
		SendOptions options = SendOptions.builder().header("type", "other").header("tenant", "t7").build();
		long[] singleNanos = new long[2];
		long[] batchNanos = new long[2];
		List<Integer> payloads = java.util.stream.IntStream.range(0, 100).boxed().toList();
		for (int round = 0; round < 4; round++) {
			boolean indexed = round % 2 == 0;
			setIndex(indexed);
			this.context.database().execute("TRUNCATE pgqueue.message");
			int slot = indexed ? 0 : 1;
			long started = System.nanoTime();
			for (int i = 0; i < singles / 2; i++) {
				this.template.send(QUEUE, i, options);
			}
			singleNanos[slot] += System.nanoTime() - started;
			started = System.nanoTime();
			for (int i = 0; i < batches / 2; i++) {
				this.template.sendBatch(QUEUE, payloads, options);
			}
			batchNanos[slot] += System.nanoTime() - started;
		}
		setIndex(true);
		for (int slot = 0; slot < 2; slot++) {
			String system = (slot == 0) ? "pgqueue" : "pgqueue-no-index";
			this.context.results()
				.add(BenchRow.throughput("filter-send", system, 1, "1", singles, singles / (singleNanos[slot] / 1e9)));
			this.context.results()
				.add(BenchRow.throughput("filter-send-batch", system, 1, "100", batches * 100L,
						batches * 100L / (batchNanos[slot] / 1e9)));
		}
	}

	private void setIndex(boolean present) {
		this.context.database()
			.execute(present ? "CREATE INDEX IF NOT EXISTS message_headers_idx ON pgqueue.message USING gin (headers jsonb_path_ops)"
					: "DROP INDEX IF EXISTS " + INDEX);
	}

	/** The backlog: {@code matching} messages that match, each after 99 that do not if {@code withOthers}. */
	private void load(long matching, boolean withOthers) {
		this.context.database().execute("TRUNCATE pgqueue.message");
		this.context.database().admin().update("""
				INSERT INTO pgqueue.message (queue, payload, headers)
				SELECT ?, '{"n": -1}'::jsonb,
				       CASE WHEN g % ? = 0 THEN '{"type": "match", "tenant": "t1"}'::jsonb
				            ELSE jsonb_build_object('type', 'other', 'tenant', 't' || (g % 50)) END
				  FROM generate_series(1, ?) g
				 WHERE ? OR g % ? = 0""", QUEUE, MATCH_EVERY, matching * MATCH_EVERY, withOthers, MATCH_EVERY);
		this.context.database().vacuumAnalyze("pgqueue.message");
	}

	/** One of {@code drains}, in {@code mode}, with {@code filter} (none if null) and the matching messages alone if none. */
	private Drain.Outcome drain(Drain.Timed drains, ConsumptionMode mode, String filter) {
		String label = "filter " + mode.name().toLowerCase(java.util.Locale.ROOT) + ((filter != null) ? " filtered" : " alone");
		return drains.drain(label, (matching) -> load(matching, filter != null), (handled) -> Drain.countingListener(
				this.template.context(), this.context.database().consumerPool(), "filter-bench", QUEUE, CONCURRENCY,
				BATCH, mode, filter, handled));
	}

	/** Adds the row of {@code system}'s drain, with the backlog it started from and what it left in the queue. */
	private void record(String scenario, String system, Drain.Outcome drained, long backlog) {
		long left = this.context.database().queryLong("SELECT count(*) FROM pgqueue.message WHERE queue = ?", QUEUE);
		this.context.results()
			.add(BenchRow.throughput(scenario, system, CONCURRENCY, String.valueOf(BATCH), drained.messages(),
					drained.rate())
				.with("backlog", backlog)
				.with("drain_ms", drained.seconds() * 1000)
				.with("left", left));
	}

	/** Writes EXPLAIN (ANALYZE, BUFFERS) of the filtered session claim of one batch, custom and generic plan. */
	private void explain(String label) {
		QueueSql sql = QueueSql.of("pgqueue");
		StringBuilder plan = new StringBuilder();
		try (Connection connection = this.context.database().adminPool().getConnection()) {
			int namespace;
			try (Statement statement = connection.createStatement();
					ResultSet rs = statement.executeQuery(sql.namespace.sql())) {
				rs.next();
				namespace = rs.getInt(1);
			}
			// EXPLAIN ANALYZE runs the claim: its attempt counts are rolled back, its session locks released.
			connection.setAutoCommit(false);
			for (String planMode : List.of("force_custom_plan", "force_generic_plan")) {
				try (Statement statement = connection.createStatement()) {
					statement.execute("SET LOCAL plan_cache_mode = " + planMode);
				}
				plan.append("-- ").append(planMode).append('\n');
				NamedStatement<QueueSql.SessionClaim> claim = sql.claimWalk.variant(BATCH, true);
				try (PreparedStatement ps = connection.prepareStatement("EXPLAIN (ANALYZE, BUFFERS) " + claim.sql())) {
					// no session (0): nothing listed as held
					claim.bind(ps, new QueueSql.SessionClaim(QUEUE, true, HeaderFilter.parse(FILTER).documents(), namespace,
							0, 1 << 20, null, null, null));
					try (ResultSet rs = ps.executeQuery()) {
						while (rs.next()) {
							plan.append(rs.getString(1)).append('\n');
						}
					}
				}
				connection.rollback();
				try (Statement statement = connection.createStatement()) {
					statement.execute("SELECT pg_advisory_unlock_all()");
				}
			}
			connection.setAutoCommit(true);
			Files.createDirectories(this.context.outputDirectory());
			Files.writeString(this.context.outputDirectory().resolve("explain-filter-claim-" + label + ".txt"), plan);
		}
		catch (SQLException ex) {
			throw new IllegalStateException("Could not explain the filtered claim", ex);
		}
		catch (IOException ex) {
			throw new UncheckedIOException(ex);
		}
	}

}
