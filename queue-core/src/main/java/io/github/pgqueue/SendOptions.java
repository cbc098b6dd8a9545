package io.github.pgqueue;

import java.time.Duration;
import java.time.Instant;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.Map;

/**
 * How a message is sent: priority, delay or not-before time, headers and max attempts.
 * Immutable; build with {@link #builder()}.
 */
public final class SendOptions {

	/** Priority 0, no delay, no headers, the queue's max attempts. */
	public static final SendOptions DEFAULTS = builder().build();

	private final int priority;

	private final Duration delay;

	private final Instant notBefore;

	private final Map<String, String> headers;

	private final Integer maxAttempts;

	private final String deduplicationKey;

	private final String group;

	private SendOptions(Builder builder) {
		this.priority = builder.priority;
		this.delay = builder.delay;
		this.notBefore = builder.notBefore;
		this.headers = Collections.unmodifiableMap(new LinkedHashMap<>(builder.headers));
		this.maxAttempts = builder.maxAttempts;
		this.deduplicationKey = builder.deduplicationKey;
		this.group = builder.group;
	}

	public static Builder builder() {
		return new Builder();
	}

	/** Whether these are the defaults: priority 0, no delay, no headers, the queue's max attempts. */
	public boolean isDefault() {
		return this.priority == 0 && this.delay.isZero() && this.notBefore == null && this.headers.isEmpty()
				&& this.maxAttempts == null && this.deduplicationKey == null
				&& this.group == null;
	}

	/** Lower is delivered first; default 0. */
	public int priority() {
		return this.priority;
	}

	/** How long after the send commits the message becomes visible; zero by default. */
	public Duration delay() {
		return this.delay;
	}

	/** The time before which the message is not delivered, or null; overrides {@link #delay()}. */
	public Instant notBefore() {
		return this.notBefore;
	}

	/** Headers stored with the message. */
	public Map<String, String> headers() {
		return this.headers;
	}

	/** Attempts before the message is dead-lettered, or null for the queue's setting. */
	public Integer maxAttempts() {
		return this.maxAttempts;
	}

	/**
	 * The deduplication key, or null: while a message with this key is in the queue (waiting,
	 * scheduled or being handled), a send with the same key inserts nothing and returns that
	 * message's id. Acked or dead-lettered, the message no longer holds the key, unless its queue
	 * has a {@linkplain QueueDefinition#deduplicationWindow() deduplication window}: the key is then
	 * refused for that long after the message completed, and a refused send returns its id.
	 */
	public String deduplicationKey() {
		return this.deduplicationKey;
	}

	/**
	 * The FIFO group, or null: the messages of one group in one queue are delivered one at a time
	 * (at most one in flight across every consumer) and in the order they were sent; a failing
	 * message holds up its group, and only its group, until it succeeds or is dead-lettered.
	 */
	public String group() {
		return this.group;
	}

	/** Builds {@link SendOptions}. */
	public static final class Builder {

		private int priority;

		private Duration delay = Duration.ZERO;

		private Instant notBefore;

		private final Map<String, String> headers = new LinkedHashMap<>();

		private Integer maxAttempts;

		private String deduplicationKey;

		private String group;

		private Builder() {
		}

		public Builder priority(int priority) {
			this.priority = priority;
			return this;
		}

		public Builder delay(Duration delay) {
			if (delay == null || delay.isNegative()) {
				throw new IllegalArgumentException("Delay must be zero or positive, was " + delay);
			}
			this.delay = delay;
			return this;
		}

		public Builder notBefore(Instant notBefore) {
			this.notBefore = notBefore;
			return this;
		}

		public Builder header(String name, String value) {
			if (name == null || name.isEmpty() || value == null) {
				throw new IllegalArgumentException("Header name and value must not be empty or null, were '" + name
						+ "' and '" + value + "'");
			}
			this.headers.put(name, value);
			return this;
		}

		public Builder maxAttempts(int maxAttempts) {
			if (maxAttempts < 1) {
				throw new IllegalArgumentException("Max attempts must be at least 1, was " + maxAttempts);
			}
			this.maxAttempts = maxAttempts;
			return this;
		}

		/** See {@link SendOptions#deduplicationKey()}: 1 to 512 characters. */
		public Builder deduplicationKey(String deduplicationKey) {
			if (deduplicationKey == null || deduplicationKey.isEmpty() || deduplicationKey.length() > 512) {
				throw new IllegalArgumentException("Deduplication key must have 1 to 512 characters, was "
						+ ((deduplicationKey == null) ? "null" : deduplicationKey.length() + " characters"));
			}
			this.deduplicationKey = deduplicationKey;
			return this;
		}

		/** See {@link SendOptions#group()}: 1 to 512 characters. */
		public Builder group(String group) {
			if (group == null || group.isEmpty() || group.length() > 512) {
				throw new IllegalArgumentException("Group must have 1 to 512 characters, was "
						+ ((group == null) ? "null" : group.length() + " characters"));
			}
			this.group = group;
			return this;
		}

		public SendOptions build() {
			return new SendOptions(this);
		}

	}

}
