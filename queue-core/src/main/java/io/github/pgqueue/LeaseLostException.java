package io.github.pgqueue;

/**
 * The database session that claimed a message has ended (connection lost, backend terminated,
 * database restarted), so its lock is gone and the message is, or soon will be, delivered to
 * another consumer. The ack did not happen; the handler's effects must tolerate that redelivery.
 */
public class LeaseLostException extends QueueException {

	public LeaseLostException(String message) {
		super(message);
	}

	public LeaseLostException(String message, Throwable cause) {
		super(message, cause);
	}

}
