package io.github.pgqueue.internal;

import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;

import io.micrometer.core.instrument.Counter;
import io.micrometer.core.instrument.MeterRegistry;
import io.micrometer.core.instrument.Timer;

/** The processing meters of design.md, cached per queue so the hot path does no registry lookup. */
public final class ListenerMetrics {

	/** How a delivery ended, as the {@code outcome} tag says it. */
	public enum Outcome {

		SUCCESS, RETRY, DEAD;

		String tag() {
			return name().toLowerCase(java.util.Locale.ROOT);
		}

	}

	private final MeterRegistry registry;

	private final Map<String, Counter> counters = new ConcurrentHashMap<>();

	private final Map<String, Timer> timers = new ConcurrentHashMap<>();

	private final Map<String, Counter> waits = new ConcurrentHashMap<>();

	public ListenerMetrics(MeterRegistry registry) {
		this.registry = registry;
	}

	public void processed(String queue, Outcome outcome, int count) {
		if (count > 0) {
			this.counters.computeIfAbsent(queue + '\u0000' + outcome.tag(),
					(key) -> Counter.builder("pgqueue.messages.processed")
						.description("Messages whose processing ended, by outcome")
						.tag("queue", queue)
						.tag("outcome", outcome.tag())
						.register(this.registry))
				.increment(count);
		}
	}

	/**
	 * A poller of {@code queue} found its rate-limit bucket short of a batch and waits for tokens
	 * instead of claiming ({@code pgqueue.rate.limit.waits}).
	 */
	public void rateLimitWait(String queue) {
		this.waits.computeIfAbsent(queue, (key) -> Counter.builder("pgqueue.rate.limit.waits")
			.description("Claims a poller did not make because the queue's rate limit had no tokens for them")
			.tag("queue", queue)
			.register(this.registry))
			.increment();
	}

	public Timer timer(String queue) {
		return this.timers.computeIfAbsent(queue, (key) -> Timer.builder("pgqueue.processing.duration")
			.description("Time a listener took to handle a message")
			.tag("queue", queue)
			.register(this.registry));
	}

}
