package io.github.pgqueue.observation;

import java.util.Map;

import io.micrometer.observation.transport.Kind;
import io.micrometer.observation.transport.SenderContext;

/**
 * The context of a {@code pgqueue.send} observation: one {@code send}, {@code sendBatch} or
 * {@code publish}. Its carrier is the headers the message is written with, so a propagating
 * tracing handler adds the trace context ({@code traceparent}) to them before the insert.
 */
public class QueueSendObservationContext extends SenderContext<Map<String, String>> {

	/** What a send observation observes. */
	public enum Operation {

		/** One message sent to a queue. */
		SEND,

		/** Several messages sent to one queue in one statement. */
		SEND_BATCH,

		/** One message published to an exchange, copied into every bound queue that matches. */
		PUBLISH

	}

	private final Operation operation;

	private final String queue;

	private final String exchange;

	private final String routingKey;

	private final int messageCount;

	/**
	 * @param operation what is observed
	 * @param queue the queue sent to, or null for a publish
	 * @param exchange the exchange published to, or null for a send
	 * @param routingKey the routing key of a publish, or null
	 * @param messageCount how many payloads the operation sends
	 * @param headers the mutable headers the message will be written with
	 */
	public QueueSendObservationContext(Operation operation, String queue, String exchange, String routingKey,
			int messageCount, Map<String, String> headers) {
		super((carrier, key, value) -> carrier.put(key, value), Kind.PRODUCER);
		this.operation = operation;
		this.queue = queue;
		this.exchange = exchange;
		this.routingKey = routingKey;
		this.messageCount = messageCount;
		setCarrier(headers);
		setRemoteServiceName("pgqueue");
	}

	/** What is observed. */
	public Operation getOperation() {
		return this.operation;
	}

	/** The queue sent to, or null for a publish. */
	public String getQueue() {
		return this.queue;
	}

	/** The exchange published to, or null for a send. */
	public String getExchange() {
		return this.exchange;
	}

	/** The queue or, for a publish, the exchange. */
	public String getDestination() {
		return (this.queue != null) ? this.queue : this.exchange;
	}

	/** The routing key of a publish, or null. */
	public String getRoutingKey() {
		return this.routingKey;
	}

	/** How many payloads the operation sends. */
	public int getMessageCount() {
		return this.messageCount;
	}

}
