package io.github.pgqueue.boot.autoconfigure.dashboard;

import java.time.Clock;
import java.time.Instant;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.Deque;
import java.util.List;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;

import io.micrometer.core.instrument.Counter;
import io.micrometer.core.instrument.MeterRegistry;

import org.springframework.beans.factory.DisposableBean;
import org.springframework.beans.factory.InitializingBean;

/**
 * Messages processed, retried and dead-lettered per minute in this application, over the last
 * hour: the {@code pgqueue.messages.processed} counters (all queues, by outcome) sampled at the
 * start of every minute into a ring buffer of 60 minutes, kept in memory only. The minute under
 * way is reported as counted so far.
 */
final class ProcessedRates implements InitializingBean, DisposableBean {

	static final int MINUTES = 60;

	private static final String METER = "pgqueue.messages.processed";

	private final MeterRegistry registry;

	private final Clock clock;

	private final Deque<Minute> minutes = new ArrayDeque<>(MINUTES);

	private Totals last;

	private long lastMinute;

	private ScheduledExecutorService sampler;

	ProcessedRates(MeterRegistry registry, Clock clock) {
		this.registry = registry;
		this.clock = clock;
	}

	@Override
	public void afterPropertiesSet() {
		sample();
		this.sampler = Executors.newSingleThreadScheduledExecutor((task) -> {
			Thread thread = new Thread(task, "pgqueue-dashboard-rates");
			thread.setDaemon(true);
			return thread;
		});
		long untilNextMinute = 60_000 - (this.clock.millis() % 60_000);
		this.sampler.scheduleAtFixedRate(this::sample, untilNextMinute, 60_000, TimeUnit.MILLISECONDS);
	}

	@Override
	public void destroy() {
		if (this.sampler != null) {
			this.sampler.shutdownNow();
		}
	}

	/** Closes the minutes since the last sample; the first sample only sets the baseline. */
	synchronized void sample() {
		Totals now = totals();
		long minute = this.clock.millis() / 60_000;
		if (this.last != null && minute > this.lastMinute) {
			// A late tick (a suspended machine) books the whole difference on the minute before this one.
			add(new Minute(minute - 1, now.processed - this.last.processed, now.retried - this.last.retried,
					now.deadLettered - this.last.deadLettered));
		}
		if (this.last == null || minute > this.lastMinute) {
			this.last = now;
			this.lastMinute = minute;
		}
	}

	/** The closed minutes, oldest first, and then the minute under way. */
	synchronized List<Minute> lastHour() {
		List<Minute> result = new ArrayList<>(this.minutes);
		Totals now = totals();
		result.add(new Minute(this.lastMinute, now.processed - this.last.processed, now.retried - this.last.retried,
				now.deadLettered - this.last.deadLettered));
		return result;
	}

	private void add(Minute minute) {
		if (this.minutes.size() == MINUTES) {
			this.minutes.removeFirst();
		}
		this.minutes.addLast(minute);
	}

	private Totals totals() {
		long processed = 0;
		long retried = 0;
		long dead = 0;
		for (Counter counter : this.registry.find(METER).counters()) {
			long count = (long) counter.count();
			String outcome = counter.getId().getTag("outcome");
			if ("success".equals(outcome)) {
				processed += count;
			}
			else if ("retry".equals(outcome)) {
				retried += count;
			}
			else if ("dead".equals(outcome)) {
				dead += count;
			}
		}
		return new Totals(processed, retried, dead);
	}

	private record Totals(long processed, long retried, long deadLettered) {
	}

	/**
	 * One minute's counts.
	 * @param start the minute's start
	 * @param processed messages handled successfully
	 * @param retried failed attempts that were retried
	 * @param deadLettered messages moved to a dead-letter queue
	 */
	record Minute(String start, long processed, long retried, long deadLettered) {

		Minute(long epochMinute, long processed, long retried, long deadLettered) {
			this(Instant.ofEpochSecond(epochMinute * 60).toString(), processed, retried, deadLettered);
		}

	}

}
