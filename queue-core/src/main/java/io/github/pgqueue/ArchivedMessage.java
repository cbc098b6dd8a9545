package io.github.pgqueue;

import java.time.Instant;
import java.util.Map;

/**
 * A message kept in the archive after it completed in a queue with a
 * {@linkplain QueueDefinition#retention() retention}.
 * @param id the message's id (a message dead-lettered and then acked in the dead-letter queue is
 * archived by each queue that keeps messages)
 * @param queue the queue it completed in
 * @param outcome how it completed
 * @param payload its body, as stored (JSON text)
 * @param headers its headers
 * @param priority its priority
 * @param attempts its deliveries, the last one included (none for a message cancelled or purged
 * before a consumer took it)
 * @param maxAttempts its own max attempts, or null for its queue's
 * @param group its FIFO group, or null
 * @param deduplicationKey its deduplication key, or null
 * @param lastError the error of its last failed attempt (for a dead letter, the one that sent it
 * there), or null
 * @param createdAt when it was sent
 * @param completedAt when it completed
 * @param expiresAt when it leaves the archive
 */
public record ArchivedMessage(long id, String queue, Outcome outcome, String payload, Map<String, String> headers,
		int priority, int attempts, Integer maxAttempts, String group, String deduplicationKey, String lastError,
		Instant createdAt, Instant completedAt, Instant expiresAt) {

	/** How a message completed. */
	public enum Outcome {

		/** A handler succeeded and the message was acked. */
		ACKED("acked"),

		/** It was cancelled ({@link QueueTemplate#cancel}, or from the dashboard). */
		CANCELLED("cancelled"),

		/** It was purged ({@link QueueAdmin#purge}). */
		PURGED("purged"),

		/** It ran out of attempts, or a handler rejected it, and it was moved to the dead-letter queue. */
		DEAD_LETTERED("dead-lettered");

		private final String stored;

		Outcome(String stored) {
			this.stored = stored;
		}

		/** The outcome as the archive's {@code outcome} column holds it. */
		public String stored() {
			return this.stored;
		}

		static Outcome of(String stored) {
			for (Outcome outcome : values()) {
				if (outcome.stored.equals(stored)) {
					return outcome;
				}
			}
			throw new IllegalStateException("Unknown archived outcome '" + stored + "'");
		}

	}

}
