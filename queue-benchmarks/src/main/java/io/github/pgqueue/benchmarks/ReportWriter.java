package io.github.pgqueue.benchmarks;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;

/**
 * Writes a run's figures under {@code target/}: {@code bench-results.csv} (the BENCH rows),
 * {@code bench-ratios.txt} (the RATIO lines), {@code bench-results.md}, a table the README's
 * performance section can quote, with the date and the machine, and the charts of {@link Charts} in
 * {@code charts/}. Rewritten after each scenario, so that an interrupted run leaves what it measured.
 */
final class ReportWriter {

	private final Path directory;

	private final String machine;

	private final String mode;

	private final Charts charts;

	/** {@code chartSubtitle} says under each chart's title what run and machine drew it. */
	ReportWriter(Path directory, String machine, String mode, String chartSubtitle) {
		this.directory = directory;
		this.machine = machine;
		this.mode = mode;
		this.charts = new Charts(directory, chartSubtitle);
		this.charts.clear();
	}

	void write(Results results) {
		try {
			Files.createDirectories(this.directory);
			Files.writeString(this.directory.resolve("bench-results.csv"), csv(results.rows()));
			Files.writeString(this.directory.resolve("bench-ratios.txt"), String.join("\n", results.ratios()) + "\n");
			Files.writeString(this.directory.resolve("bench-results.md"), markdown(results));
		}
		catch (IOException ex) {
			throw new UncheckedIOException("Could not write the report to " + this.directory, ex);
		}
		try {
			this.charts.write(results.rows());
		}
		catch (RuntimeException ex) {
			// The figures are written; a chart that cannot be drawn must not end the run.
			System.out.println("# charts: could not draw them: " + ex);
			ex.printStackTrace();
		}
	}

	private static String csv(List<BenchRow> rows) {
		StringBuilder csv = new StringBuilder("scenario,system,consumers,batch,messages,msgs_per_s,p50_ms,p99_ms,extra\n");
		for (BenchRow row : rows) {
			StringBuilder extra = new StringBuilder();
			row.extra().forEach((key, value) -> extra.append(extra.isEmpty() ? "" : " ").append(key).append('=').append(value));
			csv.append(String.join(",", row.scenario(), row.system(), String.valueOf(row.consumers()), row.batch(),
					String.valueOf(row.messages()), BenchRow.format(row.msgsPerSecond(), 1),
					BenchRow.format(row.p50Millis(), 2), BenchRow.format(row.p99Millis(), 2), "\"" + extra + "\""))
				.append('\n');
		}
		return csv.toString();
	}

	private String markdown(Results results) {
		StringBuilder md = new StringBuilder("# pgqueue benchmark (" + this.mode + " run)\n\n");
		md.append(this.machine).append("\n\n");
		md.append("Embedded PostgreSQL with fsync, synchronous_commit and full_page_writes off (the project's test ")
			.append("settings), so figures measure CPU and locking, not the disk. The machine is shared and noisy ")
			.append("(±20 % between identical runs): compare the ratios, not the absolute numbers. ")
			.append("`consumers` is the number of producer threads in the send scenarios.\n\n");
		md.append("| scenario | system | consumers | batch | messages | msgs/s | p50 ms | p99 ms | more |\n");
		md.append("|---|---|---|---|---|---|---|---|---|\n");
		for (BenchRow row : results.rows()) {
			StringBuilder extra = new StringBuilder();
			row.extra().forEach((key, value) -> extra.append(extra.isEmpty() ? "" : ", ").append(key).append(' ').append(value));
			md.append("| ").append(String.join(" | ", row.scenario(), row.system(), String.valueOf(row.consumers()),
					row.batch(), String.valueOf(row.messages()), BenchRow.format(row.msgsPerSecond(), 1),
					BenchRow.format(row.p50Millis(), 2), BenchRow.format(row.p99Millis(), 2), extra.toString()))
				.append(" |\n");
		}
		md.append("\n## Ratios\n\n```\n");
		results.ratios().forEach((line) -> md.append(line).append('\n'));
		md.append("```\n");
		return md.toString();
	}

}
