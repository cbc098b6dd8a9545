package io.github.pgqueue;

import java.time.Duration;

/**
 * The policy of one queue, shared by every consumer through the {@code queue} table: how often a
 * message is tried, how long to back off between tries, and where it goes when it runs out.
 * @param name the queue
 * @param maxAttempts deliveries before a message is dead-lettered
 * @param backoffInitial back-off after the first failure
 * @param backoffMultiplier factor applied to the back-off after each further failure
 * @param backoffMax the longest back-off
 * @param deadLetterQueue where exhausted messages go; null for {@code <name>.dlq}
 * @param rateLimit the most messages its consumers of every JVM hand to handlers per second or
 * minute, together; null for no limit
 */
public record QueueDefinition(String name, int maxAttempts, Duration backoffInitial, double backoffMultiplier,
		Duration backoffMax, String deadLetterQueue, RateLimit rateLimit) {

	/** The defaults a queue without a definition gets. */
	public static final int DEFAULT_MAX_ATTEMPTS = 5;

	public static final Duration DEFAULT_BACKOFF_INITIAL = Duration.ofSeconds(1);

	public static final double DEFAULT_BACKOFF_MULTIPLIER = 2.0;

	public static final Duration DEFAULT_BACKOFF_MAX = Duration.ofMinutes(10);

	public QueueDefinition {
		QueueNames.requireQueue(name);
		if (maxAttempts < 1) {
			throw new IllegalArgumentException("Queue '" + name + "': max attempts must be at least 1, was "
					+ maxAttempts);
		}
		if (backoffInitial == null || backoffInitial.isNegative() || backoffMax == null || backoffMax.isNegative()) {
			throw new IllegalArgumentException("Queue '" + name + "': back-off durations must be zero or positive, were "
					+ backoffInitial + " and " + backoffMax);
		}
		if (!(backoffMultiplier >= 1.0)) {
			throw new IllegalArgumentException("Queue '" + name + "': back-off multiplier must be at least 1.0, was "
					+ backoffMultiplier);
		}
		if (deadLetterQueue != null) {
			QueueNames.requireQueue(deadLetterQueue);
			if (deadLetterQueue.equals(name)) {
				throw new IllegalArgumentException("Queue '" + name + "' cannot be its own dead-letter queue");
			}
		}
	}

	/** A definition without a rate limit. */
	public QueueDefinition(String name, int maxAttempts, Duration backoffInitial, double backoffMultiplier,
			Duration backoffMax, String deadLetterQueue) {
		this(name, maxAttempts, backoffInitial, backoffMultiplier, backoffMax, deadLetterQueue, null);
	}

	/** A definition of {@code name} with the defaults. */
	public static QueueDefinition of(String name) {
		return new QueueDefinition(name, DEFAULT_MAX_ATTEMPTS, DEFAULT_BACKOFF_INITIAL, DEFAULT_BACKOFF_MULTIPLIER,
				DEFAULT_BACKOFF_MAX, null);
	}

	/** This definition with another max attempts. */
	public QueueDefinition withMaxAttempts(int maxAttempts) {
		return new QueueDefinition(this.name, maxAttempts, this.backoffInitial, this.backoffMultiplier,
				this.backoffMax, this.deadLetterQueue, this.rateLimit);
	}

	/** This definition with another back-off. */
	public QueueDefinition withBackoff(Duration initial, double multiplier, Duration max) {
		return new QueueDefinition(this.name, this.maxAttempts, initial, multiplier, max, this.deadLetterQueue,
				this.rateLimit);
	}

	/** This definition with another dead-letter queue. */
	public QueueDefinition withDeadLetterQueue(String deadLetterQueue) {
		return new QueueDefinition(this.name, this.maxAttempts, this.backoffInitial, this.backoffMultiplier,
				this.backoffMax, deadLetterQueue, this.rateLimit);
	}

	/** This definition with another rate limit; null for none. */
	public QueueDefinition withRateLimit(RateLimit rateLimit) {
		return new QueueDefinition(this.name, this.maxAttempts, this.backoffInitial, this.backoffMultiplier,
				this.backoffMax, this.deadLetterQueue, rateLimit);
	}

	/** The dead-letter queue in effect. */
	public String effectiveDeadLetterQueue() {
		return (this.deadLetterQueue != null) ? this.deadLetterQueue : QueueNames.defaultDeadLetterQueue(this.name);
	}

}
