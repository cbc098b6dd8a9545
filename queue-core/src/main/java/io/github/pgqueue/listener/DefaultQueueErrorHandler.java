package io.github.pgqueue.listener;

import java.time.Duration;

import io.github.pgqueue.QueueMessage;

/**
 * Retries with the queue's back-off until the message's last attempt, then dead-letters it with
 * the error as its last error.
 */
public class DefaultQueueErrorHandler implements QueueErrorHandler {

	@Override
	public FailureAction handle(QueueMessage<?> message, Throwable error, Duration backoff) {
		if (message.attempt() >= message.maxAttempts()) {
			return FailureAction.deadLetter("Failed " + message.attempt() + " of " + message.maxAttempts()
					+ " attempts; last error: " + describe(error));
		}
		return FailureAction.retry(backoff);
	}

	/** The error as recorded in {@code last_error}: its class and message. */
	public static String describe(Throwable error) {
		Throwable cause = (error.getCause() != null && error instanceof java.lang.reflect.InvocationTargetException)
				? error.getCause() : error;
		String text = cause.getClass().getName() + ((cause.getMessage() != null) ? ": " + cause.getMessage() : "");
		return (text.length() > 2000) ? text.substring(0, 2000) : text;
	}

}
