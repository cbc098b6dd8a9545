package io.github.pgqueue.listener;

import java.time.Duration;

/**
 * How a poller takes messages from a queue and completes them: one of the two consumption modes.
 * Owned by one poller thread; holds its database resources between polls.
 */
interface ConsumptionStrategy extends AutoCloseable {

	/**
	 * Claims a batch from {@code queue}, hands each message to the listener and completes the
	 * batch. With {@code mayTakeSuspects}, messages whose consumer died may be claimed, without the
	 * others, and are handed to the listener one at a time, each completed before the next.
	 * Rethrows a {@link VirtualMachineError} of a handler, as {@link HandlerFatalError}, once the batch
	 * is completed.
	 */
	Polled poll(String queue, boolean mayTakeSuspects);

	/** Releases what is held and the connections. */
	@Override
	void close();

	/**
	 * What one poll found.
	 * @param handled messages handed to the listener
	 * @param claimAgain whether the poller is to claim from the queue again at once rather than wait:
	 * its batch was full (so siblings should poll too), or, in transactional mode, the claim has
	 * more of the queue to walk
	 * @param settled whether the claim found all a claim right after it could find (none of its
	 * messages was of a FIFO group, none was taken from under it, it went on from no cursor): what
	 * comes later is announced by a notification, so a poller that handled a short batch may wait
	 * @param nextVisibleIn how long until the next delayed message is due, when the claim found
	 * nothing or was settled; null when none is or it is not known
	 */
	record Polled(int handled, boolean claimAgain, boolean settled, Duration nextVisibleIn) {

	}

}
