package io.github.pgqueue;

/** How a listener takes messages from its queues; chosen per queue or per listener. */
public enum ConsumptionMode {

	/**
	 * Each message is held by an advisory lock of the poller's database session while its handler
	 * runs outside any transaction; the attempt is written when it is claimed. For long handlers and
	 * handlers with effects outside the database: nothing keeps a transaction open.
	 */
	SESSION,

	/**
	 * Messages are claimed with {@code FOR UPDATE SKIP LOCKED} in a transaction of the application's
	 * transaction manager that also runs the handler, and deleted in it: the handler's database
	 * writes and the message's removal commit together, or not at all. For short handlers whose
	 * effects are database writes.
	 */
	TRANSACTIONAL

}
