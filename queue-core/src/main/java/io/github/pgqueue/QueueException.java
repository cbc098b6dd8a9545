package io.github.pgqueue;

/** Base of the exceptions pgqueue throws: the message says what went wrong and what to do. */
public class QueueException extends RuntimeException {

	public QueueException(String message) {
		super(message);
	}

	public QueueException(String message, Throwable cause) {
		super(message, cause);
	}

}
