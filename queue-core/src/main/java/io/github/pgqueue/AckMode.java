package io.github.pgqueue;

/** Who completes a message a listener received. */
public enum AckMode {

	/** The container acks when the handler returns, and retries or dead-letters when it throws. */
	AUTO,

	/**
	 * The handler completes the message through its {@link Acknowledgment} parameter. A message the
	 * handler returns from without completing is released and delivered again.
	 */
	MANUAL

}
