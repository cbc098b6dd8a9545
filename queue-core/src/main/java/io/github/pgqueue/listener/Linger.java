package io.github.pgqueue.listener;

import java.time.Duration;

/**
 * The short waits of a poller after a claim that found work, before it relies on notifications
 * alone: 1 ms, doubling to 256 ms, then none until work is found again. Under load PostgreSQL
 * handed the notifications of a steady 2 000 sends a second to the LISTEN connection in bursts of
 * up to 2 000, up to a second apart (and as fast as they came at 1 000 a second); pollers that
 * waited for them let the messages sent in between wait for the burst or the poll interval, the
 * same for a bare JDBC consumer. A queue that goes quiet costs each poller nine more claims; an
 * idle one costs nothing more.
 */
final class Linger {

	static final long FIRST_MILLIS = 1;

	static final long LAST_MILLIS = 256;

	/** The next wait in milliseconds; 0 when not lingering. */
	private long nextMillis;

	/** A claim found work: linger again after the next one that finds none. */
	void workFound() {
		this.nextMillis = FIRST_MILLIS;
	}

	/** How long to wait before claiming again while lingering; null when not (or no longer) lingering. */
	Duration next() {
		if (this.nextMillis == 0) {
			return null;
		}
		Duration wait = Duration.ofMillis(this.nextMillis);
		this.nextMillis = (this.nextMillis < LAST_MILLIS) ? this.nextMillis * 2 : 0;
		return wait;
	}

}
