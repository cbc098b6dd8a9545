package io.github.pgqueue.boot.autoconfigure;

import java.util.Map;
import java.util.function.Supplier;

import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * How many messages of each queue wait for one kind of limit (a rate limit, an in-flight limit per
 * key), for the gauges of {@link QueueMetrics}: read for every limited queue at once, at most once
 * per refresh interval however many gauges ask. While the database does not answer the gauges show
 * NaN, and the failure is logged once per outage.
 */
final class WaitingCounts {

	private static final Logger logger = LoggerFactory.getLogger(WaitingCounts.class);

	private final String limits;

	private final Supplier<Map<String, Long>> reader;

	private final long refreshNanos;

	private Sample sample;

	private volatile boolean failing;

	/**
	 * @param limits what the limits are, for the log ("rate limits")
	 * @param reader the waiting count of every limited queue, by name
	 * @param refreshNanos how long a reading is used
	 */
	WaitingCounts(String limits, Supplier<Map<String, Long>> reader, long refreshNanos) {
		this.limits = limits;
		this.reader = reader;
		this.refreshNanos = refreshNanos;
	}

	/** How many messages of {@code queue} wait for the limit; 0 for a queue without one. */
	synchronized double waiting(String queue) {
		if (this.sample == null || System.nanoTime() - this.sample.takenAt() >= this.refreshNanos) {
			try {
				this.sample = new Sample(this.reader.get(), System.nanoTime());
				this.failing = false;
			}
			catch (RuntimeException ex) {
				if (!this.failing) {
					logger.warn("Could not read the queues' {} for their gauges, which show NaN until the database "
							+ "answers again: {}", this.limits, ex.toString());
					this.failing = true;
				}
				this.sample = new Sample(null, System.nanoTime());
			}
		}
		return (this.sample.waiting() != null) ? this.sample.waiting().getOrDefault(queue, 0L) : Double.NaN;
	}

	private record Sample(Map<String, Long> waiting, long takenAt) {
	}

}
