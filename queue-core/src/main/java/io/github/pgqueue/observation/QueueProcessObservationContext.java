package io.github.pgqueue.observation;

import java.util.Map;

import io.micrometer.observation.transport.Kind;
import io.micrometer.observation.transport.ReceiverContext;

/**
 * The context of a {@code pgqueue.process} observation: one message handed to a listener. Its
 * carrier is the message's headers, so a propagating tracing handler continues the trace whose
 * context ({@code traceparent}) the sender, or a plain SQL insert, wrote there. A batch listener's
 * call has the subclass {@link QueueBatchProcessObservationContext}.
 */
public class QueueProcessObservationContext extends ReceiverContext<Map<String, String>> {

	/**
	 * How the delivery ended, as far as the listener's part of it goes. A batch ends as the worst
	 * of its messages: {@code DEAD} before {@code RETRY} before {@code RELEASED} before
	 * {@code SUCCESS}.
	 */
	public enum Outcome {

		/** Handled: the message is acked. */
		SUCCESS,

		/** Failed or nacked: the message comes back after a delay. */
		RETRY,

		/** Failed for good, rejected or unreadable: the message goes to the dead-letter queue. */
		DEAD,

		/** Interrupted by the stop: the message is given back with its attempt. */
		RELEASED

	}

	private final String listenerId;

	private final String queue;

	private final long messageId;

	private final int attempt;

	private Outcome outcome;

	/**
	 * @param listenerId the listener the message is handed to
	 * @param queue the queue the message was taken from
	 * @param messageId the message's id
	 * @param attempt the attempt this delivery is, from 1
	 * @param headers the message's headers
	 */
	public QueueProcessObservationContext(String listenerId, String queue, long messageId, int attempt,
			Map<String, String> headers) {
		super((carrier, key) -> carrier.get(key), Kind.CONSUMER);
		this.listenerId = listenerId;
		this.queue = queue;
		this.messageId = messageId;
		this.attempt = attempt;
		setCarrier(headers);
		setRemoteServiceName("pgqueue");
	}

	/** The listener the message is handed to. */
	public String getListenerId() {
		return this.listenerId;
	}

	/** The queue the message was taken from. */
	public String getQueue() {
		return this.queue;
	}

	/** The message's id; {@code 0} for a batch. */
	public long getMessageId() {
		return this.messageId;
	}

	/** The attempt this delivery is, from 1; {@code 0} for a batch. */
	public int getAttempt() {
		return this.attempt;
	}

	/** How the delivery ended; null until the handler returned or failed. */
	public Outcome getOutcome() {
		return this.outcome;
	}

	/** Sets how the delivery ended. */
	public void setOutcome(Outcome outcome) {
		this.outcome = outcome;
	}

}
