package io.github.pgqueue.benchmarks;

import java.time.Duration;
import java.util.List;
import java.util.Optional;

/**
 * One system under measurement, driven through its own public API: pgqueue, a plain-SQL baseline,
 * or a peer. Only one system runs at a time; each has its own table or its own queue.
 */
interface QueueSystem {

	/** The name the reports use. */
	String name();

	/** Whether only the drain scenario measures the system (a variant of another one). */
	default boolean drainOnly() {
		return false;
	}

	/** Whether the system claims several messages per statement, so that a batch size applies. */
	boolean claimsInBatches();

	/** Sends one message in a transaction of its own. */
	void send(long sequence);

	/** Sends {@code count} messages, numbered from {@code first}, in one transaction. */
	void sendBatch(long first, int count);

	/** Starts {@code concurrency} consumers that claim up to {@code batchSize} messages at a time. */
	Consumers startConsumers(int concurrency, int batchSize, MessageHandler handler);

	/** Starts {@code listeners} consumers of one thread each, on as many idle queues, if the system has such. */
	default Optional<Consumers> startIdleListeners(int listeners) {
		return Optional.empty();
	}

	/** Whether the system has a per-message delay ({@link #sendDelayed}). */
	default boolean sendsDelayed() {
		return false;
	}

	/** Sends one message, visible only after {@code delay}, in a transaction of its own. */
	default void sendDelayed(long sequence, Duration delay) {
		throw new UnsupportedOperationException(name() + " has no per-message delay");
	}

	/**
	 * Starts one consumer thread that, when it finds nothing to do, waits {@code pollInterval} or
	 * until the system's own means wake it: a notification of a send, or its knowledge of when the
	 * next delayed message falls due.
	 */
	default Consumers startDelayedConsumer(int batchSize, Duration pollInterval, MessageHandler handler) {
		throw new UnsupportedOperationException(name() + " has no per-message delay");
	}

	/** Whether the system can spread messages over several queues, each with a listener of its own. */
	default boolean hasQueues() {
		return false;
	}

	/** Sends one message to {@code queue}, one of those {@link #startQueueListeners} was given, in a transaction of its own. */
	default void send(String queue, long sequence) {
		throw new UnsupportedOperationException(name() + " has one queue");
	}

	/** Starts one consumer thread per queue, each claiming up to {@code batchSize} messages at a time. */
	default Consumers startQueueListeners(List<String> queues, int batchSize, MessageHandler handler) {
		throw new UnsupportedOperationException(name() + " has one queue");
	}

	/** Loads {@code count} untracked messages in bulk, visible after {@code delay}; not measured. */
	void preload(int count, Duration delay);

	/** Messages in the system's queue, visible or not. */
	long pending();

	/** Empties the system's queue. */
	void clear();

	/** The table the system keeps its messages in. */
	String table();

	/**
	 * The tables vacuumed before each measurement, so that no system pays for what the one before
	 * it left dead: its message table, and any other table its claims read whole.
	 */
	default List<String> tables() {
		return List.of(table());
	}

}
