package io.github.pgqueue;

import java.time.Instant;
import java.util.Map;

/**
 * A received message.
 * @param id the message id, unique across all queues of the schema
 * @param queue the queue it was received from
 * @param payload the converted payload
 * @param headers the headers it was sent with
 * @param priority its priority, lower first
 * @param attempt which delivery this is, starting at 1
 * @param maxAttempts deliveries allowed before it is dead-lettered
 * @param createdAt when it was sent
 * @param <T> the payload type
 */
public record QueueMessage<T>(long id, String queue, T payload, Map<String, String> headers, int priority,
		int attempt, int maxAttempts, Instant createdAt) {

	/** The header {@code name}, or null. */
	public String header(String name) {
		return this.headers.get(name);
	}

}
