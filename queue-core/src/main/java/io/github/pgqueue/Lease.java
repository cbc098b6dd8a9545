package io.github.pgqueue;

import java.time.Duration;
import java.util.List;

import io.github.pgqueue.internal.ClaimedMessage;
import io.github.pgqueue.internal.ConsumerSession;

/**
 * A message received by {@link QueueOperations#receive}, held by a database session of its own
 * until it is completed: {@link #ack()}, {@link #nack(Duration)} or {@link #reject(String)}.
 * {@link #close()} without completing releases the message for the next consumer. Use it in a
 * try-with-resources block; the attempt was counted when the message was received.
 * <p>
 * If the session dies before the message is completed, the message goes back to the queue and
 * completing the lease throws {@link LeaseLostException}. Not thread-safe.
 * @param <T> the payload type
 */
public final class Lease<T> implements Acknowledgment, AutoCloseable {

	private final ConsumerSession session;

	private final ClaimedMessage claimed;

	private final QueueMessage<T> message;

	private boolean done;

	Lease(ConsumerSession session, ClaimedMessage claimed, QueueMessage<T> message) {
		this.session = session;
		this.claimed = claimed;
		this.message = message;
	}

	/** The message this lease holds. */
	public QueueMessage<T> message() {
		return this.message;
	}

	/** The message's converted payload. */
	public T payload() {
		return this.message.payload();
	}

	/** Deletes the message: it is done. */
	@Override
	public void ack() {
		complete(() -> this.session.ack(List.of(this.claimed.id())));
	}

	/** Releases the message to be delivered again after {@code delay}. */
	@Override
	public void nack(Duration delay) {
		complete(() -> this.session.retry(List.of(new ConsumerSession.Retry(this.claimed.id(), delay, null))));
	}

	/** Moves the message to its dead-letter queue, with {@code reason} as its last error. */
	@Override
	public void reject(String reason) {
		complete(() -> this.session
			.deadLetter(List.of(ConsumerSession.DeadLetter.of(this.claimed, "Rejected: " + reason))));
	}

	/** Releases the message unchanged if it was not completed, and returns the session's connection. */
	@Override
	public void close() {
		if (!this.done) {
			this.done = true;
			this.session.close();
		}
	}

	private void complete(Runnable action) {
		if (this.done) {
			throw new IllegalStateException("Message " + this.claimed.id() + " was already completed or released");
		}
		this.done = true;
		try {
			action.run();
		}
		finally {
			this.session.close();
		}
	}

}
