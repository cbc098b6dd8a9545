package io.github.pgqueue;

import java.time.Duration;

/**
 * The policy of one queue, shared by every consumer through the {@code queue} table: how often a
 * message is tried, how long to back off between tries, where it goes when it runs out, how long
 * a deduplication key is refused after its message completed, how long completed messages are
 * archived, how fast its messages may be handled, and which header keys its messages for fair claims.
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
 * @param concurrencyKey the header whose value is each message's concurrency key, and how many
 * messages of one key may be in flight at once; null for none
 */
public record QueueDefinition(String name, int maxAttempts, Duration backoffInitial, double backoffMultiplier,
		Duration backoffMax, String deadLetterQueue, Duration deduplicationWindow, Duration retention,
		RateLimit rateLimit, ConcurrencyKey concurrencyKey) {

	/** The longest header name a concurrency key may be read from. */
	public static final int MAX_CONCURRENCY_KEY_HEADER_LENGTH = 200;

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
		if (concurrencyKey != null) {
			concurrencyKey.check(name);
		}
	}

	/** A definition without a concurrency key. */
	public QueueDefinition(String name, int maxAttempts, Duration backoffInitial, double backoffMultiplier,
			Duration backoffMax, String deadLetterQueue, Duration deduplicationWindow, Duration retention,
			RateLimit rateLimit) {
		this(name, maxAttempts, backoffInitial, backoffMultiplier, backoffMax, deadLetterQueue, deduplicationWindow,
				retention, rateLimit, null);
	}

	/** A definition without a deduplication window, retention, rate limit or concurrency key. */
	public QueueDefinition(String name, int maxAttempts, Duration backoffInitial, double backoffMultiplier,
			Duration backoffMax, String deadLetterQueue) {
		this(name, maxAttempts, backoffInitial, backoffMultiplier, backoffMax, deadLetterQueue, null, null, null, null);
	}

	/** A definition of {@code name} with the defaults. */
	public static QueueDefinition of(String name) {
		return new QueueDefinition(name, DEFAULT_MAX_ATTEMPTS, DEFAULT_BACKOFF_INITIAL, DEFAULT_BACKOFF_MULTIPLIER,
				DEFAULT_BACKOFF_MAX, null, null, null, null, null);
	}

	/** This definition with another max attempts. */
	public QueueDefinition withMaxAttempts(int maxAttempts) {
		return new QueueDefinition(this.name, maxAttempts, this.backoffInitial, this.backoffMultiplier,
				this.backoffMax, this.deadLetterQueue, this.deduplicationWindow,
				this.retention, this.rateLimit, this.concurrencyKey);
	}

	/** This definition with another back-off. */
	public QueueDefinition withBackoff(Duration initial, double multiplier, Duration max) {
		return new QueueDefinition(this.name, this.maxAttempts, initial, multiplier, max, this.deadLetterQueue,
				this.deduplicationWindow, this.retention, this.rateLimit, this.concurrencyKey);
	}

	/** This definition with another dead-letter queue. */
	public QueueDefinition withDeadLetterQueue(String deadLetterQueue) {
		return new QueueDefinition(this.name, this.maxAttempts, this.backoffInitial, this.backoffMultiplier,
				this.backoffMax, deadLetterQueue, this.deduplicationWindow, this.retention, this.rateLimit, this.concurrencyKey);
	}

	/** This definition with another deduplication window; null for none. */
	public QueueDefinition withDeduplicationWindow(Duration deduplicationWindow) {
		return new QueueDefinition(this.name, this.maxAttempts, this.backoffInitial, this.backoffMultiplier,
				this.backoffMax, this.deadLetterQueue, deduplicationWindow, this.retention, this.rateLimit, this.concurrencyKey);
	}

	/** This definition with another retention; null for none. */
	public QueueDefinition withRetention(Duration retention) {
		return new QueueDefinition(this.name, this.maxAttempts, this.backoffInitial, this.backoffMultiplier,
				this.backoffMax, this.deadLetterQueue, this.deduplicationWindow, retention, this.rateLimit, this.concurrencyKey);
	}

	/** This definition with another rate limit; null for none. */
	public QueueDefinition withRateLimit(RateLimit rateLimit) {
		return new QueueDefinition(this.name, this.maxAttempts, this.backoffInitial, this.backoffMultiplier,
				this.backoffMax, this.deadLetterQueue, this.deduplicationWindow, this.retention, rateLimit, this.concurrencyKey);
	}

	/**
	 * This definition with messages keyed by the value of header {@code header} for fair claims,
	 * without a limit on how many messages of one key are in flight at once.
	 */
	public QueueDefinition withConcurrencyKey(String header) {
		return keyed(new ConcurrencyKey(header, null));
	}

	/**
	 * This definition with messages keyed by the value of header {@code header} for fair claims, and
	 * at most {@code maxInFlight} messages of one key in flight at once across every consumer.
	 */
	public QueueDefinition withConcurrencyKey(String header, int maxInFlight) {
		return keyed(new ConcurrencyKey(header, maxInFlight));
	}

	/**
	 * This definition with messages keyed by the value of header {@code header} for fair claims, at
	 * most {@code maxInFlight} messages of one key in flight at once (null: no such limit), and each
	 * key's messages handed out at most at {@code rateLimit} (null: no such limit), every key on its
	 * own, across every consumer.
	 */
	public QueueDefinition withConcurrencyKey(String header, Integer maxInFlight, RateLimit rateLimit) {
		return keyed(new ConcurrencyKey(header, maxInFlight, rateLimit));
	}

	/** This definition without a concurrency key. */
	public QueueDefinition withoutConcurrencyKey() {
		return keyed(null);
	}

	private QueueDefinition keyed(ConcurrencyKey concurrencyKey) {
		return new QueueDefinition(this.name, this.maxAttempts, this.backoffInitial, this.backoffMultiplier,
				this.backoffMax, this.deadLetterQueue, this.deduplicationWindow, this.retention, this.rateLimit,
				concurrencyKey);
	}

	/** The dead-letter queue in effect. */
	public String effectiveDeadLetterQueue() {
		return (this.deadLetterQueue != null) ? this.deadLetterQueue : QueueNames.defaultDeadLetterQueue(this.name);
	}

	/**
	 * Which header keys a queue's messages for fair claims, and how many messages of one key may be
	 * in flight at once. Consumers claim messages round robin across keys, so that one key's
	 * backlog does not hold back the others; messages without the header have no key. Checked when
	 * it becomes part of a {@link QueueDefinition}.
	 * @param header the name of the header whose value is each message's key: not blank, at most
	 * {@value QueueDefinition#MAX_CONCURRENCY_KEY_HEADER_LENGTH} characters, no control characters
	 * @param maxInFlight the most messages of one key that consumers of every JVM hold at once, at
	 * least 1; null for no limit
	 * @param rateLimit the rate at which consumers of every JVM take the messages of each key, every
	 * key on its own; null for no limit. Messages without the header are not limited per key.
	 */
	public record ConcurrencyKey(String header, Integer maxInFlight, RateLimit rateLimit) {

		/** A concurrency key without a rate limit per key. */
		public ConcurrencyKey(String header, Integer maxInFlight) {
			this(header, maxInFlight, null);
		}

		/** Fails, naming {@code queue}, if the header or the limit is not valid. */
		void check(String queue) {
			if (this.header == null || this.header.isBlank()) {
				throw new IllegalArgumentException("Queue '" + queue + "': concurrency key header must name a header, was "
						+ ((this.header != null) ? "'" + this.header + "'" : "null"));
			}
			int length = this.header.codePointCount(0, this.header.length());
			if (length > MAX_CONCURRENCY_KEY_HEADER_LENGTH) {
				throw new IllegalArgumentException("Queue '" + queue + "': concurrency key header must be at most "
						+ MAX_CONCURRENCY_KEY_HEADER_LENGTH + " characters, was " + length);
			}
			this.header.codePoints().filter(Character::isISOControl).findFirst().ifPresent((control) -> {
				throw new IllegalArgumentException("Queue '" + queue + "': concurrency key header must not contain "
						+ "control characters, has U+" + String.format("%04X", control));
			});
			if (this.maxInFlight != null && this.maxInFlight < 1) {
				throw new IllegalArgumentException("Queue '" + queue + "': max in flight per key must be at least 1, was "
						+ this.maxInFlight);
			}
		}

	}

}
