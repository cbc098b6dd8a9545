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
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

import io.github.pgqueue.internal.NamedStatement;
import io.github.pgqueue.internal.QueueSql;

/**
 * {@code backlog}: drain rate (4 consumers, batch 100) with 10 000 messages in the table, with
 * 1 000 000, with 10 000 000 (seed 003's scale; {@code backlog-huge=N} changes it, 0 leaves it out),
 * and with 10 000 ready next to 1 000 000 delayed by a day; for pgqueue and the two plain-SQL
 * baselines on the same table. Each system warms up (see {@link Drain#warmUp}) before its first
 * drain. Writes the plan of pgqueue's claim at each size.
 */
final class BacklogScenario {

	private static final int CONCURRENCY = 4;

	private static final int BATCH = 100;

	private static final int SMALL = 10_000;

	private static final int LARGE = 1_000_000;

	private static final int ROUNDS = 3;

	private static final Duration CAP = Duration.ofSeconds(30);

	private static final List<String> SYSTEMS = List.of("pgqueue", "pgqueue-tx", "raw-sql", "raw-sql-same-guarantee");

	private final BenchContext context;

	BacklogScenario(BenchContext context) {
		this.context = context;
	}

	void run() {
		Map<String, Double> small = new LinkedHashMap<>();
		Map<String, Double> large = new LinkedHashMap<>();
		Map<String, Double> huge = new LinkedHashMap<>();
		Map<String, Double> delayed = new LinkedHashMap<>();
		for (String name : SYSTEMS) {
			QueueSystem system = this.context.system(name);
			system.clear();
			Drain.warmUp(this.context, system, CONCURRENCY, BATCH, Drain.FIRST_GUESS);
			List<Drain.Outcome> rounds = new ArrayList<>();
			for (int i = 0; i < ROUNDS; i++) {
				system.clear();
				Drain.prepare(this.context, system, SMALL);
				rounds.add(Drain.run(system, CONCURRENCY, BATCH, SMALL, CAP));
			}
			small.put(name, record("backlog-10k", name, rounds, SMALL));
		}
		QueueSystem table = this.context.system("pgqueue");
		table.clear();
		for (String name : SYSTEMS) {
			QueueSystem system = this.context.system(name);
			Drain.prepare(this.context, system, LARGE);
			if (name.equals("pgqueue")) {
				explainClaim(this.context, "1M");
			}
			large.put(name, record("backlog-1M", name, List.of(Drain.run(system, CONCURRENCY, BATCH, 3L * SMALL, CAP)),
					LARGE));
		}
		int hugeBacklog = this.context.options().hugeBacklog();
		if (hugeBacklog > 0) {
			table.clear();
			String label = "backlog-" + sizeLabel(hugeBacklog);
			for (String name : SYSTEMS) {
				QueueSystem system = this.context.system(name);
				long started = System.nanoTime();
				Drain.prepare(this.context, system, hugeBacklog);
				System.out.printf("# %s: %s made ready and vacuumed in %.0f s%n", label, name,
						(System.nanoTime() - started) / 1e9);
				if (name.equals("pgqueue")) {
					explainClaim(this.context, sizeLabel(hugeBacklog));
				}
				huge.put(name, record(label, name,
						List.of(Drain.run(system, CONCURRENCY, BATCH, 3L * SMALL, CAP)), hugeBacklog));
			}
			try (Connection connection = this.context.database().adminPool().getConnection();
					Statement statement = connection.createStatement();
					ResultSet rs = statement.executeQuery("SELECT pg_size_pretty(pg_total_relation_size('pgqueue.message'))")) {
				rs.next();
				System.out.printf("# %s: pgqueue.message with its indexes takes %s%n", label, rs.getString(1));
			}
			catch (SQLException ex) {
				throw new IllegalStateException("Could not read the size of the message table", ex);
			}
		}
		table.clear();
		table.preload(LARGE, Duration.ofDays(1));
		for (String name : SYSTEMS) {
			QueueSystem system = this.context.system(name);
			List<Drain.Outcome> rounds = new ArrayList<>();
			for (int i = 0; i < ROUNDS; i++) {
				Drain.prepare(this.context, system, LARGE + SMALL);
				if (name.equals("pgqueue") && i == 0) {
					explainClaim(this.context, "1M-delayed");
				}
				rounds.add(Drain.run(system, CONCURRENCY, BATCH, SMALL, CAP));
			}
			delayed.put(name, record("backlog-1M-delayed", name, rounds, LARGE + SMALL));
		}
		table.clear();
		List<String> scenarios = new ArrayList<>(List.of("backlog-10k", "backlog-1M"));
		if (hugeBacklog > 0) {
			scenarios.add("backlog-" + sizeLabel(hugeBacklog));
		}
		scenarios.add("backlog-1M-delayed");
		for (String scenario : scenarios) {
			this.context.results().ratios(scenario);
		}
		for (String name : SYSTEMS) {
			String hugeRatio = (hugeBacklog > 0)
					? " " + sizeLabel(hugeBacklog) + "/10k=" + Results.ratio(huge.get(name) / small.get(name)) : "";
			this.context.results()
				.ratio("scenario=backlog system=" + name + " 1M/10k=" + Results.ratio(large.get(name) / small.get(name))
						+ hugeRatio + " 1M-delayed/10k=" + Results.ratio(delayed.get(name) / small.get(name)));
		}
	}

	/** 10M for 10 000 000, 2500k for 2 500 000. */
	private static String sizeLabel(int size) {
		return (size % 1_000_000 == 0) ? (size / 1_000_000) + "M" : (size / 1_000) + "k";
	}

	private double record(String scenario, String system, List<Drain.Outcome> rounds, int backlog) {
		long messages = rounds.stream().mapToLong(Drain.Outcome::messages).sum();
		double seconds = rounds.stream().mapToDouble(Drain.Outcome::seconds).sum();
		double rate = messages / seconds;
		this.context.results()
			.add(BenchRow.throughput(scenario, system, CONCURRENCY, String.valueOf(BATCH), messages, rate)
				.with("backlog", backlog));
		return rate;
	}

	/** Writes EXPLAIN (ANALYZE, BUFFERS) of pgqueue's claim of one batch to {@code target/explain-claim-<label>.txt}. */
	static void explainClaim(BenchContext context, String label) {
		QueueSql sql = QueueSql.of("pgqueue");
		StringBuilder plan = new StringBuilder();
		try (Connection connection = context.database().adminPool().getConnection()) {
			int namespace;
			try (Statement statement = connection.createStatement();
					ResultSet rs = statement.executeQuery(sql.namespace.sql())) {
				rs.next();
				namespace = rs.getInt(1);
			}
			// EXPLAIN ANALYZE runs the claim: its attempt counts are rolled back, its session locks released.
			connection.setAutoCommit(false);
			NamedStatement<QueueSql.SessionClaim> claim = sql.claimWalk.variant(BATCH, false);
			try (PreparedStatement ps = connection.prepareStatement("EXPLAIN (ANALYZE, BUFFERS) " + claim.sql())) {
				claim.bind(ps, RawSameGuaranteeSystem.claimParameters(MessageTableSystem.QUEUE, namespace, 0, true, null));
				try (ResultSet rs = ps.executeQuery()) {
					while (rs.next()) {
						plan.append(rs.getString(1)).append('\n');
					}
				}
			}
			connection.rollback();
			connection.setAutoCommit(true);
			try (Statement statement = connection.createStatement()) {
				statement.execute("SELECT pg_advisory_unlock_all()");
			}
			Files.createDirectories(context.outputDirectory());
			Files.writeString(context.outputDirectory().resolve("explain-claim-" + label + ".txt"), plan);
		}
		catch (SQLException ex) {
			throw new IllegalStateException("Could not explain the claim", ex);
		}
		catch (IOException ex) {
			throw new UncheckedIOException(ex);
		}
	}

}
