package io.github.pgqueue;

import java.time.Duration;



/**
 * The policy of one queue, shared by every consumer through the {@code queue} table: how often a
 * message is tried, how long to back off between tries, where it goes when it runs out, how long
 * a deduplication key is refused after its message completed, how long completed messages are
 * archived, and how fast its messages may be handled.
 * @param name the queue
 * @param maxAttempts deliveries before a message is dead-lettered
 * @param backoffInitial back-off after the first failure
 * @param backoffMultiplier factor applied to the back-off after each further failure
 * @param backoffMax the longest back-off
 * @param deadLetterQueue where exhausted messages go; null for {@code <name>.dlq}
 * @param deduplicationWindow how long after a message with a
 * {@linkplain SendOptions#deduplicationKey() deduplication key} completed (acked, cancelled, purged
 * or dead-lettered) a send with the same key is still refused; null for none: the key is refused
 * only while its message is in the queue
 * @param retention how long a message that completed in the queue (acked, cancelled, purged or
 * dead-lettered from it) is kept in the archive ({@link MessageArchive}); null for none
 * @param rateLimit the most messages its consumers of every JVM hand to handlers per second or
 * minute, together; null for no limit
 */
public record QueueDefinition(String name, int maxAttempts, Duration backoffInitial, double backoffMultiplier,
		Duration backoffMax, String deadLetterQueue, Duration deduplicationWindow, Duration retention,
		RateLimit rateLimit) {

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
		if (deduplicationWindow != null && deduplicationWindow.toMillis() < 1) {
			throw new IllegalArgumentException("Queue '" + name + "': deduplication window must be at least 1 ms, was "
					+ deduplicationWindow + "; leave it null for none");
		}
		if (retention != null && retention.toMillis() < 1) {
			throw new IllegalArgumentException("Queue '" + name + "': retention must be at least 1 ms, was " + retention
					+ "; leave it null for none");
		}
		if (deadLetterQueue != null) {
			QueueNames.requireQueue(deadLetterQueue);
			if (deadLetterQueue.equals(name)) {
				throw new IllegalArgumentException("Queue '" + name + "' cannot be its own dead-letter queue");
			}
		}
	}

	/** A definition without a deduplication window, retention or rate limit. */
	public QueueDefinition(String name, int maxAttempts, Duration backoffInitial, double backoffMultiplier,
			Duration backoffMax, String deadLetterQueue) {
		this(name, maxAttempts, backoffInitial, backoffMultiplier, backoffMax, deadLetterQueue, null, null, null);
	}

	/** A definition of {@code name} with the defaults. */
	public static QueueDefinition of(String name) {
		return new QueueDefinition(name, DEFAULT_MAX_ATTEMPTS, DEFAULT_BACKOFF_INITIAL, DEFAULT_BACKOFF_MULTIPLIER,
				DEFAULT_BACKOFF_MAX, null, null, null, null);
	}

	/** This definition with another max attempts. */
	public QueueDefinition withMaxAttempts(int maxAttempts) {
		return new QueueDefinition(this.name, maxAttempts, this.backoffInitial, this.backoffMultiplier,
				this.backoffMax, this.deadLetterQueue, this.deduplicationWindow,
				this.retention, this.rateLimit);
	}

	/** This definition with another back-off. */
	public QueueDefinition withBackoff(Duration initial, double multiplier, Duration max) {
		return new QueueDefinition(this.name, this.maxAttempts, initial, multiplier, max, this.deadLetterQueue,
				this.deduplicationWindow, this.retention, this.rateLimit);
	}

	/** This definition with another dead-letter queue. */
	public QueueDefinition withDeadLetterQueue(String deadLetterQueue) {
		return new QueueDefinition(this.name, this.maxAttempts, this.backoffInitial, this.backoffMultiplier,
				this.backoffMax, deadLetterQueue, this.deduplicationWindow, this.retention, this.rateLimit);
	}

	/** This definition with another deduplication window; null for none. */
	public QueueDefinition withDeduplicationWindow(Duration deduplicationWindow) {
		return new QueueDefinition(this.name, this.maxAttempts, this.backoffInitial, this.backoffMultiplier,
				this.backoffMax, this.deadLetterQueue, deduplicationWindow, this.retention, this.rateLimit);
	}

	/** This definition with another retention; null for none. */
	public QueueDefinition withRetention(Duration retention) {
		return new QueueDefinition(this.name, this.maxAttempts, this.backoffInitial, this.backoffMultiplier,
				this.backoffMax, this.deadLetterQueue, this.deduplicationWindow, retention, this.rateLimit);
	}

	/** This definition with another rate limit; null for none. */
	public QueueDefinition withRateLimit(RateLimit rateLimit) {
		return new QueueDefinition(this.name, this.maxAttempts, this.backoffInitial, this.backoffMultiplier,
				this.backoffMax, this.deadLetterQueue, this.deduplicationWindow, this.retention, rateLimit);
	}

	/** The dead-letter queue in effect. */
	public String effectiveDeadLetterQueue() {
		return (this.deadLetterQueue != null) ? this.deadLetterQueue : QueueNames.defaultDeadLetterQueue(this.name);
	}

}
