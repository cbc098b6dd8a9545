package io.github.pgqueue.benchmarks;

import java.util.Arrays;
import java.util.concurrent.atomic.AtomicLongArray;

/**
 * End-to-end latency by sequence number: when the producer's send returned (its transaction
 * committed), or when a delayed message fell due, and when a handler started on the message. A
 * handler may start before the producer records its commit (NOTIFY is delivered at commit); that
 * latency counts as zero, and the message as early.
 */
final class Latencies {

	private final AtomicLongArray committed;

	private final AtomicLongArray started;

	Latencies(int capacity) {
		this.committed = new AtomicLongArray(capacity);
		this.started = new AtomicLongArray(capacity);
	}

	void committed(long sequence) {
		if (sequence >= 0 && sequence < this.committed.length()) {
			this.committed.set((int) sequence, System.nanoTime());
		}
	}

	/** Records the instant a delayed message falls due, to measure its lateness from there. */
	void due(long sequence, long nanos) {
		if (sequence >= 0 && sequence < this.committed.length()) {
			this.committed.set((int) sequence, nanos);
		}
	}

	void started(long sequence) {
		if (sequence >= 0 && sequence < this.started.length()) {
			this.started.compareAndSet((int) sequence, 0, System.nanoTime());
		}
	}

	/** Percentiles over every message both sent and started, in milliseconds. */
	Summary summarize() {
		return summarize(0, this.committed.length());
	}

	/** Percentiles over the messages numbered from {@code first} (inclusive) to {@code end} (exclusive). */
	Summary summarize(long first, long end) {
		int from = (int) Math.max(0, first);
		int to = (int) Math.min(this.committed.length(), end);
		long[] nanos = new long[Math.max(0, to - from)];
		int count = 0;
		int early = 0;
		for (int i = from; i < to; i++) {
			long sent = this.committed.get(i);
			long handled = this.started.get(i);
			if (sent != 0 && handled != 0) {
				nanos[count++] = Math.max(0, handled - sent);
				early += (handled < sent) ? 1 : 0;
			}
		}
		long[] sorted = Arrays.copyOf(nanos, count);
		Arrays.sort(sorted);
		return new Summary(count, percentile(sorted, 0.50), percentile(sorted, 0.99), percentile(sorted, 1.0),
				early);
	}

	/**
	 * Where the tail is: the 99th percentile of the messages committed from {@code warmUpNanos}
	 * after {@code startNanos} on, and the seconds of the run (counted from its start) in which the
	 * most messages committed that waited over {@code slowMillis}, worst first, as
	 * {@code second:count} (at most {@code seconds} of them; none when nothing was slow).
	 */
	Tail tail(long startNanos, long warmUpNanos, long slowMillis, int seconds) {
		long[] nanos = new long[this.committed.length()];
		int count = 0;
		java.util.Map<Long, Integer> slowBySecond = new java.util.TreeMap<>();
		for (int i = 0; i < this.committed.length(); i++) {
			long sent = this.committed.get(i);
			long handled = this.started.get(i);
			if (sent == 0 || handled == 0) {
				continue;
			}
			long latency = Math.max(0, handled - sent);
			if (sent - startNanos >= warmUpNanos) {
				nanos[count++] = latency;
			}
			if (latency > slowMillis * 1_000_000L) {
				slowBySecond.merge((sent - startNanos) / 1_000_000_000L, 1, Integer::sum);
			}
		}
		long[] sorted = Arrays.copyOf(nanos, count);
		Arrays.sort(sorted);
		String worst = slowBySecond.entrySet().stream()
			.sorted(java.util.Map.Entry.<Long, Integer>comparingByValue().reversed())
			.limit(seconds)
			.map((e) -> e.getKey() + ":" + e.getValue())
			.collect(java.util.stream.Collectors.joining(";"));
		int slow = slowBySecond.values().stream().mapToInt(Integer::intValue).sum();
		return new Tail(percentile(sorted, 0.99), slow, worst.isEmpty() ? "-" : worst);
	}

	/** See {@link #tail}: p99 after the warm-up, how many messages were slow, and in which seconds most were. */
	record Tail(Double p99AfterWarmUpMillis, int slow, String slowestSeconds) {
	}

	private static Double percentile(long[] sorted, double fraction) {
		if (sorted.length == 0) {
			return null;
		}
		int index = (int) Math.ceil(fraction * sorted.length) - 1;
		return sorted[Math.max(0, Math.min(sorted.length - 1, index))] / 1_000_000.0;
	}

	/** The latencies of {@code count} messages, of which {@code early} started before their recorded instant. */
	record Summary(int count, Double p50Millis, Double p99Millis, Double maxMillis, int early) {
	}

}
