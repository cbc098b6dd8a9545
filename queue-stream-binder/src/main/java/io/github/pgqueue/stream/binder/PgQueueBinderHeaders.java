package io.github.pgqueue.stream.binder;

/**
 * The headers the binder reads on messages sent and sets on messages received. Every other header
 * travels with the message as text.
 */
public final class PgQueueBinderHeaders {

	/**
	 * The message's partition key when the producer has no {@code partitionKeyExpression}: it
	 * becomes the message's FIFO group, so messages with one key are handled one at a time and in
	 * order.
	 */
	public static final String PARTITION_KEY = "partitionKey";

	/** The priority of one message sent, overriding the producer's: lower is delivered first. */
	public static final String PRIORITY = "pgqueue_priority";

	/** The delay of one message sent, overriding the producer's: a {@code Duration} or milliseconds. */
	public static final String DELAY = "pgqueue_delay";

	/** On a message received: its id, unique across the schema's queues. */
	public static final String ID = "pgqueue_id";

	/** On a message received: the queue it came from (the group's queue). */
	public static final String QUEUE = "pgqueue_queue";

	/** On a message received: which delivery this is, from 1. */
	public static final String ATTEMPT = "pgqueue_attempt";

	/** On a message received in batch mode: the headers of each message, in payload order. */
	public static final String BATCH_HEADERS = "pgqueue_batchHeaders";

	private PgQueueBinderHeaders() {
	}

}
