package io.github.pgqueue.listener;

import java.util.Iterator;
import java.util.LinkedHashSet;
import java.util.Set;

/**
 * The permit to claim messages whose consumer died (suspects), held by one poller of the process
 * at a time: if such a message is what kills the process, no other one dies with it again and
 * again. The holder keeps it through its batch (see {@link PollLoop}). A poller that was refused
 * it asks to be handed it ({@link #ask}); the holder's release hands it to the poller that asked
 * first, and wakes that one, before anyone else may take it: a busy listener, which asks again
 * microseconds after it gave the permit back, kept it from the process's other listeners for good.
 */
final class SuspectPermit {

	private PollLoop holder;

	/** The pollers that asked to be handed the permit, in the order they asked. */
	private final Set<PollLoop> asking = new LinkedHashSet<>();

	/**
	 * Whether {@code loop} holds the permit: it was handed it, or takes it now if nobody holds it
	 * (when someone asked for it, a release has handed it on, so nobody asking is passed over).
	 */
	synchronized boolean tryAcquire(PollLoop loop) {
		if (this.holder == null) {
			this.holder = loop;
			this.asking.remove(loop);
		}
		return this.holder == loop;
	}

	/** Whether {@code loop} holds the permit, handed to it by a release. */
	synchronized boolean isHeldBy(PollLoop loop) {
		return this.holder == loop;
	}

	/**
	 * Asks for the permit for {@code loop}, which was refused it: it is handed the permit at the
	 * next release, after those that asked before it, and woken then.
	 */
	synchronized void ask(PollLoop loop) {
		if (this.holder == null) {
			this.holder = loop;
			loop.wakeUp();
		}
		else if (this.holder != loop) {
			this.asking.add(loop);
		}
	}

	/** Gives the permit back if {@code loop} holds it: to the poller that asked first, woken, if any. */
	synchronized void release(PollLoop loop) {
		if (this.holder != loop) {
			return;
		}
		this.holder = null;
		Iterator<PollLoop> next = this.asking.iterator();
		if (next.hasNext()) {
			this.holder = next.next();
			next.remove();
			this.holder.wakeUp();
		}
	}

	/**
	 * Takes {@code loop} off the pollers that asked for the permit, and gives the permit back if it
	 * holds it: it stops, its listener is paused, or its container leaves it stuck in a handler.
	 */
	synchronized void withdraw(PollLoop loop) {
		this.asking.remove(loop);
		release(loop);
	}

}
