package io.github.pgqueue;

/**
 * A publish matched no binding of an exchange declared with {@code unroutable: fail}; nothing was
 * sent.
 */
public class UnroutableMessageException extends QueueException {

	public UnroutableMessageException(String message) {
		super(message);
	}

}
