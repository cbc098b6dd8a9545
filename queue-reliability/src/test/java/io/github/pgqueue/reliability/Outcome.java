package io.github.pgqueue.reliability;

/** How a sent message must end once its queue is drained. */
enum Outcome {

	/** Delivered at least once, then acked: no row left. */
	ACKED,

	/** In its dead-letter queue; its handler may have seen it (retries, crashes). */
	DEAD,

	/** In its dead-letter queue and never handed to a handler (it cannot be converted). */
	DEAD_UNDELIVERED,

	/** Still in its queue, never claimed: the consumer that was meant to take it did not start. */
	UNTOUCHED,

	/** Taken out of its queue unhandled (cancelled or purged): never delivered, no row left. */
	REMOVED

}
