package io.github.pgqueue;

/** A payload could not be written to JSON, or a message's JSON could not be read as the expected type. */
public class PayloadConversionException extends QueueException {

	public PayloadConversionException(String message, Throwable cause) {
		super(message, cause);
	}

}
