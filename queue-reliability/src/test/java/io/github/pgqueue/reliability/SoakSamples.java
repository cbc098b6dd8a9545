package io.github.pgqueue.reliability;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.function.ToDoubleFunction;

import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * What a soak measures while it runs: at each sample, the backlog of each queue, the size of
 * pgqueue's message table, of its indexes and of the whole {@code pgqueue} schema, and the heap in
 * use after a full collection of each consumer JVM (written by the consumers themselves into
 * {@code chaos.heap}); and the faults, with when they hit. Written out as two CSV files.
 */
final class SoakSamples {

	private static final Logger logger = LoggerFactory.getLogger(SoakSamples.class);

	private static final double MB = 1024 * 1024;

	/** How much a flat metric's last third may exceed its first third, besides the absolute slack. */
	static final double GROWTH = 1.25;

	private final ChaosDatabase database;

	private final List<String> queues;

	private final Map<String, ConsumerFleet> slots;

	private final Instant start;

	private final List<Sample> samples = Collections.synchronizedList(new ArrayList<>());

	private final List<FaultMark> faults = Collections.synchronizedList(new ArrayList<>());

	/**
	 * @param queues the queues whose backlog is sampled
	 * @param slots the consumer fleets by the name their heap goes under (a fleet whose JVM was
	 * killed and replaced stays one slot)
	 */
	SoakSamples(ChaosDatabase database, List<String> queues, Map<String, ConsumerFleet> slots, Instant start) {
		this.database = database;
		this.queues = List.copyOf(queues);
		this.slots = slots;
		this.start = start;
	}

	/**
	 * Takes one sample; while PostgreSQL is down (a restart), tries again each second for 20 s and
	 * then leaves this one out, saying so.
	 */
	void sample() {
		RuntimeException last = null;
		for (int i = 0; i < 20; i++) {
			try {
				this.samples.add(take());
				return;
			}
			catch (RuntimeException ex) {
				last = ex;
				ChaosDatabase.pause(Duration.ofSeconds(1));
			}
		}
		logger.warn("A soak sample was left out: the database did not answer for 20 s", last);
	}

	private Sample take() {
		double minutes = minutesSinceStart();
		Map<String, Double> backlog = new LinkedHashMap<>();
		for (String queue : this.queues) {
			backlog.put(queue, (double) this.database.pending(queue));
		}
		Map<String, Object> sizes = this.database.jdbc().queryForMap("""
				SELECT pg_relation_size('pgqueue.message') AS message_table,
				       pg_indexes_size('pgqueue.message') AS message_indexes,
				       pg_total_relation_size('pgqueue.message') AS message_total,
				       (SELECT sum(pg_total_relation_size(c.oid)) FROM pg_class c
				          JOIN pg_namespace n ON n.oid = c.relnamespace
				         WHERE n.nspname = 'pgqueue' AND c.relkind IN ('r', 'p')) AS schema_total""");
		Map<String, Double> heap = new LinkedHashMap<>();
		this.slots.forEach((slot, fleet) -> heap.put(slot, heapOf(fleet)));
		return new Sample(minutes, backlog, megabytes(sizes.get("message_table")),
				megabytes(sizes.get("message_indexes")), megabytes(sizes.get("message_total")),
				megabytes(sizes.get("schema_total")), heap);
	}

	/** The last heap sample of the fleet's live consumer, in MB, or NaN while it has none (starting). */
	private double heapOf(ConsumerFleet fleet) {
		List<ConsumerProcess> ready = fleet.ready();
		if (ready.isEmpty()) {
			return Double.NaN;
		}
		List<Long> used = this.database.jdbc().queryForList(
				"SELECT used_bytes FROM chaos.heap WHERE consumer = ? ORDER BY sampled_at DESC LIMIT 1", Long.class,
				ready.get(ready.size() - 1).name());
		return used.isEmpty() ? Double.NaN : used.get(0) / MB;
	}

	/** Notes that {@code fault} hit {@code victim} now. */
	void fault(String fault, String victim) {
		this.faults.add(new FaultMark(minutesSinceStart(), fault, victim));
	}

	List<Sample> samples() {
		synchronized (this.samples) {
			return List.copyOf(this.samples);
		}
	}

	List<FaultMark> faults() {
		synchronized (this.faults) {
			return List.copyOf(this.faults);
		}
	}

	/**
	 * Whether {@code metric} stayed flat after {@code warmUp}: the samples after it are split in
	 * thirds, and the largest of the last third may be at most 1.25 times the largest of the first
	 * third plus {@code slackMb}. The first third's largest value, not its first one, is the
	 * baseline: a single sample may fall in a trough of the saw that faults and backlogs draw.
	 */
	Flatness flatness(String metric, ToDoubleFunction<Sample> value, Duration warmUp, double slackMb) {
		double from = warmUp.toMillis() / 60_000.0;
		List<Sample> after = samples().stream().filter((sample) -> sample.minutes() >= from)
			.filter((sample) -> !Double.isNaN(value.applyAsDouble(sample))).toList();
		if (after.size() < 3) {
			throw new IllegalStateException("Only " + after.size() + " samples of " + metric + " after the warm-up of "
					+ warmUp + "; at least 3 are needed to judge flatness");
		}
		int third = (after.size() + 2) / 3;
		double baseline = after.subList(0, third).stream().mapToDouble(value).max().orElseThrow();
		double last = after.subList(after.size() - third, after.size()).stream().mapToDouble(value).max().orElseThrow();
		return new Flatness(metric, baseline, last, GROWTH * baseline + slackMb, slopePerHour(after, value), after.size());
	}

	/** The least-squares slope of {@code value} over the samples, in MB per hour. */
	private static double slopePerHour(List<Sample> samples, ToDoubleFunction<Sample> value) {
		double meanX = samples.stream().mapToDouble(Sample::minutes).average().orElseThrow();
		double meanY = samples.stream().mapToDouble(value).average().orElseThrow();
		double covariance = 0;
		double variance = 0;
		for (Sample sample : samples) {
			covariance += (sample.minutes() - meanX) * (value.applyAsDouble(sample) - meanY);
			variance += (sample.minutes() - meanX) * (sample.minutes() - meanX);
		}
		return (variance == 0) ? 0 : covariance / variance * 60;
	}

	/** Writes {@code samples.csv} and {@code faults.csv} into {@code directory}. */
	void writeCsv(Path directory) {
		StringBuilder samples = new StringBuilder("minutes");
		this.queues.forEach((queue) -> samples.append(",backlog_").append(queue));
		samples.append(",message_table_mb,message_indexes_mb,message_total_mb,schema_total_mb");
		this.slots.keySet().forEach((slot) -> samples.append(",heap_").append(slot).append("_mb"));
		samples.append('\n');
		for (Sample sample : samples()) {
			samples.append(number(sample.minutes()));
			sample.backlog().values().forEach((depth) -> samples.append(',').append(number(depth)));
			samples.append(',').append(number(sample.messageTable())).append(',').append(number(sample.messageIndexes()))
				.append(',').append(number(sample.messageTotal())).append(',').append(number(sample.schemaTotal()));
			sample.heap().values().forEach((mb) -> samples.append(',').append(Double.isNaN(mb) ? "" : number(mb)));
			samples.append('\n');
		}
		StringBuilder faults = new StringBuilder("minutes,fault,victim\n");
		faults().forEach((fault) -> faults.append(number(fault.minutes())).append(',').append(fault.fault()).append(',')
			.append(fault.victim()).append('\n'));
		try {
			Files.createDirectories(directory);
			Files.writeString(directory.resolve("samples.csv"), samples, StandardCharsets.UTF_8);
			Files.writeString(directory.resolve("faults.csv"), faults, StandardCharsets.UTF_8);
		}
		catch (IOException ex) {
			throw new UncheckedIOException("Could not write the soak's CSV files into " + directory, ex);
		}
	}

	private double minutesSinceStart() {
		return Duration.between(this.start, Instant.now()).toMillis() / 60_000.0;
	}

	private static double megabytes(Object bytes) {
		return (bytes != null) ? ((Number) bytes).doubleValue() / MB : 0;
	}

	private static String number(double value) {
		return String.format(Locale.ROOT, "%.3f", value);
	}

	/** One sample; sizes and heap in MB (MiB), heap NaN for a slot whose JVM had not reported yet. */
	record Sample(double minutes, Map<String, Double> backlog, double messageTable, double messageIndexes,
			double messageTotal, double schemaTotal, Map<String, Double> heap) {
	}

	/** A fault of the rotation, {@code minutes} after the start. */
	record FaultMark(double minutes, String fault, String victim) {
	}

	/**
	 * The flatness of one metric after the warm-up.
	 * @param baseline the largest value of the first third after the warm-up
	 * @param lastMax the largest value of the last third
	 * @param limit what {@code lastMax} may reach: {@link #GROWTH} × baseline + slack
	 * @param slopePerHour the least-squares slope after the warm-up, MB per hour
	 */
	record Flatness(String metric, double baseline, double lastMax, double limit, double slopePerHour, int samples) {

		boolean flat() {
			return this.lastMax <= this.limit;
		}

		String line() {
			return String.format(Locale.ROOT,
					"SOAK flat metric=%s first_third_max=%.2fMB last_third_max=%.2fMB limit=%.2fMB slope=%+.2fMB/h samples=%d %s",
					this.metric, this.baseline, this.lastMax, this.limit, this.slopePerHour, this.samples,
					flat() ? "flat" : "GROWING");
		}

	}

}
