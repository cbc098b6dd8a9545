package io.github.pgqueue.benchmarks;

import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Objects;
import java.util.stream.Stream;

/**
 * Every figure of a run, in order. Prints each {@code BENCH} line as it is taken and, per
 * scenario, one {@code RATIO} line per pgqueue figure: pgqueue's rate over each other system's
 * rate with the same number of threads (and the same batch size, where the system has one).
 */
final class Results {

	/** pgqueue's systems: one per consumption mode, and their FIFO-grouped variants. */
	static final List<String> MINE = List.of("pgqueue", "pgqueue-tx", "pgqueue-tx-fifo", "pgqueue-fifo");

	static final List<String> OTHERS = List.of("raw-sql", "raw-sql-planned", "raw-sql-same-guarantee",
			"spring-integration-jdbc", "db-queue", "pg-boss", "graphile-worker");

	private final List<BenchRow> rows = new ArrayList<>();

	private final List<String> ratios = new ArrayList<>();

	synchronized void add(BenchRow row) {
		this.rows.add(row);
		System.out.println(row.line());
	}

	synchronized List<BenchRow> rows() {
		return List.copyOf(this.rows);
	}

	synchronized List<String> ratios() {
		return List.copyOf(this.ratios);
	}

	/** Prints and keeps the RATIO lines of {@code scenario}. */
	synchronized void ratios(String scenario) {
		for (BenchRow mine : this.rows) {
			if (!mine.scenario().equals(scenario) || !MINE.contains(mine.system()) || mine.msgsPerSecond() == null) {
				continue;
			}
			Map<String, Double> ratio = new LinkedHashMap<>();
			// Each variant is compared with the one it varies first: pgqueue-tx with pgqueue,
			// pgqueue-tx-fifo with pgqueue-tx, pgqueue-fifo (grouped sends) with pgqueue.
			List<String> others = switch (mine.system()) {
				case "pgqueue-tx" -> Stream.concat(Stream.of("pgqueue"), OTHERS.stream()).toList();
				case "pgqueue-tx-fifo" -> Stream.concat(Stream.of("pgqueue-tx"), OTHERS.stream()).toList();
				case "pgqueue-fifo" -> Stream.concat(Stream.of("pgqueue"), OTHERS.stream()).toList();
				default -> OTHERS;
			};
			for (String other : others) {
				BenchRow theirs = counterpart(mine, other);
				if (theirs != null && theirs.msgsPerSecond() != null && theirs.msgsPerSecond() > 0) {
					ratio.put(other, mine.msgsPerSecond() / theirs.msgsPerSecond());
				}
			}
			if (ratio.isEmpty()) {
				continue;
			}
			StringBuilder line = new StringBuilder("RATIO scenario=").append(scenario)
				.append(" consumers=").append(mine.consumers())
				.append(" batch=").append(mine.batch());
			ratio.forEach((other, value) -> line.append(' ').append(mine.system()).append('/').append(other).append('=')
				.append(ratio(value)));
			this.ratios.add(line.toString());
			System.out.println(line);
		}
	}

	/** Prints and keeps a free-form RATIO line, e.g. one system's rate at two backlog sizes. */
	synchronized void ratio(String line) {
		this.ratios.add("RATIO " + line);
		System.out.println("RATIO " + line);
	}

	synchronized BenchRow find(String scenario, String system, int consumers, String batch) {
		for (BenchRow row : this.rows) {
			if (row.scenario().equals(scenario) && row.system().equals(system) && row.consumers() == consumers
					&& Objects.equals(row.batch(), batch)) {
				return row;
			}
		}
		return null;
	}

	private BenchRow counterpart(BenchRow mine, String system) {
		BenchRow sameBatch = find(mine.scenario(), system, mine.consumers(), mine.batch());
		if (sameBatch != null) {
			return sameBatch;
		}
		// Peers take one message per transaction: their only row for this thread count.
		List<BenchRow> candidates = this.rows.stream()
			.filter((row) -> row.scenario().equals(mine.scenario()) && row.system().equals(system)
					&& row.consumers() == mine.consumers())
			.toList();
		return (candidates.size() == 1) ? candidates.get(0) : null;
	}

	static String ratio(double value) {
		return String.format(Locale.ROOT, (value >= 10) ? "%.1f" : "%.2f", value);
	}

}
