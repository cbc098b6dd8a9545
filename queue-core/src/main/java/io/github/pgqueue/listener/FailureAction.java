package io.github.pgqueue.listener;

import java.time.Duration;
import java.util.Objects;

/** What to do with a message whose handler failed: retry it after a delay, or dead-letter it. */
public final class FailureAction {

	private final Duration retryDelay;

	private final String deadLetterReason;

	private FailureAction(Duration retryDelay, String deadLetterReason) {
		this.retryDelay = retryDelay;
		this.deadLetterReason = deadLetterReason;
	}

	/** Deliver the message again after {@code delay}. */
	public static FailureAction retry(Duration delay) {
		Objects.requireNonNull(delay, "Retry delay must not be null");
		return new FailureAction(delay, null);
	}

	/** Move the message to its dead-letter queue, recording {@code reason}. */
	public static FailureAction deadLetter(String reason) {
		return new FailureAction(null, Objects.requireNonNull(reason, "Dead-letter reason must not be null"));
	}

	/** Whether the message is retried. */
	public boolean isRetry() {
		return this.retryDelay != null;
	}

	/** The delay before the retry, or null when dead-lettered. */
	public Duration retryDelay() {
		return this.retryDelay;
	}

	/** The reason recorded when dead-lettered, or null when retried. */
	public String deadLetterReason() {
		return this.deadLetterReason;
	}

}
