package io.github.pgqueue.benchmarks;

import java.util.LinkedHashMap;
import java.util.Locale;
import java.util.Map;

/**
 * One figure of a run, printed as a {@code BENCH} line. {@code consumers} is the number of
 * consumer threads, or of producer threads in the send scenarios; {@code extra} holds the figures
 * some scenarios add after the fixed columns.
 */
record BenchRow(String scenario, String system, int consumers, String batch, long messages, Double msgsPerSecond,
		Double p50Millis, Double p99Millis, Map<String, String> extra) {

	BenchRow {
		extra = new LinkedHashMap<>(extra);
	}

	static BenchRow throughput(String scenario, String system, int consumers, String batch, long messages,
			double msgsPerSecond) {
		return new BenchRow(scenario, system, consumers, batch, messages, msgsPerSecond, null, null, Map.of());
	}

	BenchRow with(String key, Object value) {
		Map<String, String> more = new LinkedHashMap<>(this.extra);
		more.put(key, (value instanceof Double d) ? format(d, 2) : String.valueOf(value));
		return new BenchRow(this.scenario, this.system, this.consumers, this.batch, this.messages, this.msgsPerSecond,
				this.p50Millis, this.p99Millis, more);
	}

	String line() {
		StringBuilder line = new StringBuilder("BENCH");
		line.append(" scenario=").append(this.scenario)
			.append(" system=").append(this.system)
			.append(" consumers=").append(this.consumers)
			.append(" batch=").append(this.batch)
			.append(" messages=").append(this.messages)
			.append(" msgs_per_s=").append(format(this.msgsPerSecond, 1))
			.append(" p50_ms=").append(format(this.p50Millis, 2))
			.append(" p99_ms=").append(format(this.p99Millis, 2));
		this.extra.forEach((key, value) -> line.append(' ').append(key).append('=').append(value));
		return line.toString();
	}

	static String format(Double value, int decimals) {
		return (value == null) ? "-" : String.format(Locale.ROOT, "%." + decimals + "f", value);
	}

}
