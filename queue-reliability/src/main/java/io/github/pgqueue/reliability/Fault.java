package io.github.pgqueue.reliability;

/** A fault a {@link Job} asks its handler to inject after the delivery is recorded. */
public enum Fault {

	/** Return normally: the container acks the message. */
	NONE,

	/** Throw on every attempt: retried with back-off, then dead-lettered. */
	THROW,

	/**
	 * Throw on the first attempt only, after the handler's work (and, in a transactional listener,
	 * its effect row): retried with back-off, then acked.
	 */
	THROW_ONCE,

	/**
	 * Throw a {@link java.lang.Error} on every attempt: a real {@code StackOverflowError} for even
	 * keys, an {@code OutOfMemoryError} for odd ones. Retried, then dead-lettered, like {@link #THROW}.
	 */
	ERROR,

	/** Halt the consumer JVM on every attempt, as a crash or an OOM kill would. */
	HALT,

	/**
	 * On the first attempt, terminate the session holding the message at the very end of the
	 * handler and return normally: the handler is done, the ack can no longer happen.
	 */
	TERMINATE_BEFORE_ACK

}
