package io.github.pgqueue.listener;

/**
 * Thrown by a batch listener to say which message of its batch failed, by its index in the list
 * it was given: the messages before it count as handled (see {@link QueueBatchListener}).
 */
public class BatchListenerFailedException extends RuntimeException {

	private final int index;

	/**
	 * @param message what went wrong, recorded as the failed message's last error
	 * @param cause the failure of that message, if any
	 * @param index the failed message's position in the list given to the listener
	 */
	public BatchListenerFailedException(String message, Throwable cause, int index) {
		super(message, cause);
		if (index < 0) {
			throw new IllegalArgumentException("The index of the failed message must not be negative, was " + index);
		}
		this.index = index;
	}

	/** @see #BatchListenerFailedException(String, Throwable, int) */
	public BatchListenerFailedException(String message, int index) {
		this(message, null, index);
	}

	/** The position of the failed message in the list given to the listener. */
	public int getIndex() {
		return this.index;
	}

}
