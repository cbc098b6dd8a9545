package io.github.pgqueue.listener;

/**
 * A {@link VirtualMachineError} a handler threw, rethrown by a consumption once its batch is
 * completed: the poller restarts its session at once. It is no database outage, so it takes none
 * of the outage back-off, which grew with every such error and slowed a queue full of them to a
 * crawl.
 */
final class HandlerFatalError extends RuntimeException {

	HandlerFatalError(VirtualMachineError cause) {
		super("A handler threw " + cause, cause);
	}

}
