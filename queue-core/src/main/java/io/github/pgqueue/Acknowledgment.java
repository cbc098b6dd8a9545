package io.github.pgqueue;

import java.time.Duration;

/** Completes one received message; exactly one of its methods may be called, once. */
public interface Acknowledgment {

	/** The message is done: it is deleted. */
	void ack();

	/** The message failed this time: it is delivered again after {@code delay}. */
	void nack(Duration delay);

	/** The message can never succeed: it moves to its dead-letter queue with {@code reason}. */
	void reject(String reason);

}
