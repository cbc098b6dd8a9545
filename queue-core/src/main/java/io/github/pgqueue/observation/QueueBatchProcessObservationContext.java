package io.github.pgqueue.observation;

import java.util.Map;

/**
 * The context of a {@code pgqueue.process} observation around one call of a batch listener. A
 * batch holds messages of several senders, so it continues none of their traces: its carrier is
 * empty and a tracing handler starts a new trace for it. Each message still carries its sender's
 * trace context in its headers. It has no message id nor attempt ({@code 0}); its
 * {@linkplain #getBatchSize() size} takes their place.
 */
public class QueueBatchProcessObservationContext extends QueueProcessObservationContext {

	private final int batchSize;

	/**
	 * @param listenerId the batch listener the messages are handed to
	 * @param queue the queue the messages were taken from
	 * @param batchSize how many messages the batch holds
	 */
	public QueueBatchProcessObservationContext(String listenerId, String queue, int batchSize) {
		super(listenerId, queue, 0, 0, Map.of());
		this.batchSize = batchSize;
	}

	/**
	 * How many messages the batch holds, those the listener got and those that could not be read
	 * (dead-lettered before the call).
	 */
	public int getBatchSize() {
		return this.batchSize;
	}

}
