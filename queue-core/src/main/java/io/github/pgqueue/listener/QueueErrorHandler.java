package io.github.pgqueue.listener;

import java.time.Duration;

import io.github.pgqueue.QueueMessage;

/**
 * Decides what happens to a message whose listener threw. The default,
 * {@link DefaultQueueErrorHandler}, retries with the queue's exponential back-off and
 * dead-letters on the last attempt. Declare a bean of this type and name it in
 * {@code @QueueListener(errorHandler = ...)} to change that for one listener.
 */
@FunctionalInterface
public interface QueueErrorHandler {

	/**
	 * @param message the message, with its attempt number and max attempts
	 * @param error what the listener threw
	 * @param backoff the queue's back-off for this attempt
	 * @return retry or dead-letter
	 */
	FailureAction handle(QueueMessage<?> message, Throwable error, Duration backoff);

}
