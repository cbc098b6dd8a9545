package io.github.pgqueue.internal;

import java.time.Duration;

/**
 * The short waits of a busy poller after a claim that found work, before it relies on
 * notifications alone: 1 ms, doubling to 256 ms, then none until work is found again. Busy: it
 * handled at least {@value #BUSY_PER_SECOND} messages in the last whole second or so far in this
 * one. Not thread-safe: one per poller.
 * <p>
 * A busy poller that lingers finds the messages sent meanwhile itself, without waiting for their
 * notification and the wake-up; a queue that goes quiet costs it nine more claims. A quiet poller
 * does not linger: many listeners doing so after every message of quiet queues would take the
 * cores from the application.
 */
public final class Linger {

	/** The first wait after work. */
	public static final long FIRST_MILLIS = 1;

	/** The last wait: lingering ends after it. */
	public static final long LAST_MILLIS = 256;

	/** Messages a second a poller handles at least to linger. */
	public static final int BUSY_PER_SECOND = 200;

	private static final long SECOND_NANOS = 1_000_000_000L;

	/** The next wait in milliseconds; 0 when not lingering. */
	private long nextMillis;

	private long secondStartedAt = System.nanoTime();

	private int handledThisSecond;

	/** What the last whole second handled; 0 if work paused for longer than a second since. */
	private int handledLastSecond;

	/** A claim found {@code messages}: linger after the next one that finds none, if busy. */
	public void workFound(int messages) {
		long now = System.nanoTime();
		long elapsed = now - this.secondStartedAt;
		if (elapsed >= SECOND_NANOS) {
			this.handledLastSecond = (elapsed < 2 * SECOND_NANOS) ? this.handledThisSecond : 0;
			this.handledThisSecond = 0;
			this.secondStartedAt = now;
		}
		this.handledThisSecond += messages;
		boolean busy = this.handledLastSecond >= BUSY_PER_SECOND || this.handledThisSecond >= BUSY_PER_SECOND;
		this.nextMillis = busy ? FIRST_MILLIS : 0;
	}

	/** Whether the poller, busy when it last found work, lingers after its next claim that finds none. */
	public boolean lingers() {
		return this.nextMillis != 0;
	}

	/** How long to wait before claiming again while lingering; null when not (or no longer) lingering. */
	public Duration next() {
		if (this.nextMillis == 0) {
			return null;
		}
		Duration wait = Duration.ofMillis(this.nextMillis);
		this.nextMillis = (this.nextMillis < LAST_MILLIS) ? this.nextMillis * 2 : 0;
		return wait;
	}

}
