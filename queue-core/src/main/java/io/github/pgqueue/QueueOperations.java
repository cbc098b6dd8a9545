package io.github.pgqueue;

import java.lang.reflect.Type;
import java.util.List;
import java.util.Optional;

/**
 * Sends, receives, cancels and inspects messages. Sends join the caller's Spring-managed
 * transaction: a send whose transaction rolls back is never delivered. Queue names are 1 to 63
 * letters, digits, {@code _}, {@code .} or {@code -}; anything else is rejected with an
 * {@link IllegalArgumentException} before anything is written.
 */
public interface QueueOperations {

	/** Sends {@code payload} to {@code queue} and returns the message id. */
	default long send(String queue, Object payload) {
		return send(queue, payload, SendOptions.DEFAULTS);
	}

	/** Sends {@code payload} to {@code queue} with {@code options} and returns the message id. */
	long send(String queue, Object payload, SendOptions options);

	/** Sends all {@code payloads} in one statement and returns their ids in the same order. */
	default List<Long> sendBatch(String queue, List<?> payloads) {
		return sendBatch(queue, payloads, SendOptions.DEFAULTS);
	}

	/** Sends all {@code payloads} with the same {@code options} in one statement; ids in order. */
	List<Long> sendBatch(String queue, List<?> payloads, SendOptions options);

	/**
	 * Sends {@code payload} to every queue bound to {@code exchange} whose binding matches
	 * {@code routingKey}, in one statement, and returns how many queues got it (0: no binding
	 * matched). The messages carry the headers {@code pgqueue-exchange} and {@code pgqueue-routing-key}.
	 * @throws IllegalArgumentException if the exchange is not declared
	 */
	default int publish(String exchange, String routingKey, Object payload) {
		return publish(exchange, routingKey, payload, SendOptions.DEFAULTS);
	}

	/** As {@link #publish(String, String, Object)}, with {@code options}. */
	int publish(String exchange, String routingKey, Object payload, SendOptions options);

	/**
	 * Claims the next visible message of {@code queue}, if any, holding it on a database session
	 * of its own until the returned lease is completed or closed.
	 */
	<T> Optional<Lease<T>> receive(String queue, Class<T> payloadType);

	/** As {@link #receive(String, Class)}, for a generic payload type. */
	<T> Optional<Lease<T>> receive(String queue, Type payloadType);

	/**
	 * Claims the next visible message of {@code queue} whose headers match {@code filter}, holding
	 * it as {@link #receive(String, Class)} does; messages the filter rejects are left untouched (not
	 * locked, no attempt counted). The filter language: {@code name = 'value'},
	 * {@code name in ('a', 'b')}, and {@code and} of those; see docs/concepts.md.
	 * @throws IllegalArgumentException if the filter is not valid, saying where
	 */
	<T> Optional<Lease<T>> receive(String queue, String filter, Class<T> payloadType);

	/**
	 * Claims message {@code id} of {@code queue}, holding it as {@link #receive(String, Class)}
	 * does, if it is visible and free; empty if it is held by a consumer, delayed, not its FIFO
	 * group's head, in a paused queue, or gone (or was dead-lettered now, having used up its
	 * attempts).
	 * @throws PayloadConversionException if its payload cannot be read as {@code payloadType}; the
	 * message is left as it was, for consumers that can read it
	 */
	<T> Optional<Lease<T>> receive(String queue, long id, Class<T> payloadType);

	/** Deletes message {@code id} of {@code queue} unless a consumer holds it. */
	CancelResult cancel(String queue, long id);

	/** Counts the messages of {@code queue} by state. */
	QueueStats stats(String queue);

}
