package io.github.pgqueue.internal;

import java.time.Duration;
import java.time.Instant;

/**
 * A message as the re-check returned it: locked by the claiming session, its attempt counted,
 * with the retry policy of its queue, and whether its queue keeps what completes there (a
 * retention or a deduplication window), which its ack then does.
 */
public record ClaimedMessage(long id, String queue, String payloadJson, String headersJson, int priority,
		int attempt, Instant createdAt, int maxAttempts, String deadLetterQueue, long backoffInitialMs,
		double backoffMultiplier, long backoffMaxMs, String lastError, int payloadBytes, boolean keeps) {

	/** Whether the payload was above the limit and so not read: {@link #payloadJson()} is null. */
	public boolean oversized() {
		return this.payloadJson == null;
	}

	/** Whether the attempts are used up: the claims before this one all ended without an ack. */
	public boolean exhausted() {
		return this.attempt > this.maxAttempts;
	}

	/** Whether this is the last attempt the queue allows. */
	public boolean lastAttempt() {
		return this.attempt >= this.maxAttempts;
	}

	/** The exponential back-off before the next attempt after this one failed. */
	public Duration backoff() {
		double delay = this.backoffInitialMs * Math.pow(this.backoffMultiplier, Math.max(0, this.attempt - 1));
		return Duration.ofMillis((long) Math.min(delay, this.backoffMaxMs));
	}

}
