package io.github.pgqueue.test;

import java.time.Instant;
import java.util.Map;

/**
 * A message as it is stored in its queue right now, read by {@link QueueTestSupport}.
 * @param id the message id
 * @param queue the queue it is in
 * @param payload the payload, read as the type the caller asked for
 * @param headers the headers it was sent with (dead letters also carry
 * {@code pgqueue-dead-lettered-from} and {@code pgqueue-dead-lettered-attempts})
 * @param priority its priority, lower first
 * @param attempts how many deliveries have been counted (0: never claimed)
 * @param visibleAt when it can be delivered (later than now: delayed, or backing off after a failure;
 * {@link Instant#MAX}: a dead letter parked until a redrive)
 * @param createdAt when it was sent
 * @param lastError the error of its last failed attempt, or null
 * @param group its FIFO group, or null
 * @param deduplicationKey its deduplication key, or null
 * @param <T> the payload type
 */
public record StoredMessage<T>(long id, String queue, T payload, Map<String, String> headers, int priority,
		int attempts, Instant visibleAt, Instant createdAt, String lastError, String group,
		String deduplicationKey) {

	/** The header {@code name}, or null. */
	public String header(String name) {
		return this.headers.get(name);
	}

}
