package io.github.pgqueue;

import java.time.Duration;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ThreadLocalRandom;

import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import org.springframework.context.SmartLifecycle;

/**
 * Runs the schedules of a schema in this JVM (see {@link ScheduleDefinition}): one daemon thread,
 * {@code pgqueue-scheduler}, that sleeps until the earliest next tick of the active schedules (at
 * most {@link #MAX_SLEEP}, so that schedules created or resumed elsewhere are seen within it),
 * reads which are due in one statement, and fires each due tick in a transaction of its own.
 * Every JVM of an application may run one: each tick is sent once, by whichever JVM moves the
 * schedule past it first (the database decides, see {@code fire_schedule}).
 * <p>
 * A database that does not answer is logged once per outage and read again with back-off (1 s,
 * doubling to 30 s, with jitter); a schedule whose send fails (its queue refuses this JVM's role,
 * its exchange fails unroutable messages, its payload is too large) is logged once, naming it,
 * and tried again with back-off of its own (1 s doubling to 60 s) while the others go on. Nothing
 * ends the thread but {@link #stop()}.
 */
public final class ScheduleRunner implements SmartLifecycle {

	private static final Logger logger = LoggerFactory.getLogger(ScheduleRunner.class);

	/** The longest the runner sleeps between two reads of the schedules. */
	public static final Duration MAX_SLEEP = Duration.ofSeconds(1);

	/** The most due schedules read at once. */
	static final int BATCH = 100;

	/** The least a runner waits after losing a tick to another JVM, which may still be sending it. */
	private static final Duration AFTER_LOST = Duration.ofMillis(100);

	private static final Duration MAX_OUTAGE_BACKOFF = Duration.ofSeconds(30);

	private static final Duration MAX_SCHEDULE_BACKOFF = Duration.ofSeconds(60);

	private final ScheduleFiring firing;

	private final Object monitor = new Object();

	/** Schedules whose last send failed, by name: only the runner's thread reads and writes it. */
	private final Map<String, Failure> failures = new HashMap<>();

	private volatile boolean running;

	private Thread thread;

	private int outageFailures;

	/** Runs the schedules of {@code template}'s schema, sending through it. */
	public ScheduleRunner(QueueTemplate template) {
		this.firing = new ScheduleFiring(template);
	}

	@Override
	public void start() {
		synchronized (this.monitor) {
			if (this.running) {
				return;
			}
			this.running = true;
			this.thread = new Thread(this::run, "pgqueue-scheduler");
			this.thread.setDaemon(true);
			this.thread.start();
		}
	}

	/** Stops the thread, waiting for a fire in progress to end (its transaction is short). */
	@Override
	public void stop() {
		Thread current;
		synchronized (this.monitor) {
			this.running = false;
			this.monitor.notifyAll();
			current = this.thread;
			this.thread = null;
		}
		if (current != null && current != Thread.currentThread()) {
			try {
				current.join(Duration.ofSeconds(10).toMillis());
			}
			catch (InterruptedException ex) {
				Thread.currentThread().interrupt();
			}
		}
	}

	@Override
	public boolean isRunning() {
		return this.running;
	}

	private void run() {
		while (this.running) {
			Duration wait;
			try {
				wait = runDue();
				if (this.outageFailures > 0) {
					logger.info("Reading the schedules works again");
					this.outageFailures = 0;
				}
			}
			catch (Throwable ex) {
				wait = outageBackoff();
				if (this.outageFailures++ == 0) {
					if (isPermissionDenied(ex)) {
						logger.warn("The database role of this JVM may not read or update the schedules ({}); grant it "
								+ "SELECT and UPDATE on the schedule table, or set pgqueue.scheduler.enabled=false in this "
								+ "JVM (trying again with back-off up to {})", reason(ex), MAX_OUTAGE_BACKOFF);
					}
					else {
						logger.warn("Could not read the schedules; no tick is sent from this JVM until the database "
								+ "answers again (trying again with back-off up to {})", MAX_OUTAGE_BACKOFF, ex);
					}
				}
				else {
					logger.debug("Reading the schedules still fails: {}", ex.toString());
				}
				if (ex instanceof Error error && !(ex instanceof StackOverflowError)) {
					logger.error("Error in the scheduler thread; it goes on", error);
				}
			}
			sleep(wait);
		}
	}

	/**
	 * Fires every schedule due now (one transaction each) and returns how long to wait before the
	 * next read: until the earliest next tick, at most {@link #MAX_SLEEP}; zero while ticks are still
	 * due (a schedule catching up).
	 */
	Duration runDue() {
		List<ScheduleFiring.Due> due = this.firing.due(MAX_SLEEP, BATCH);
		Duration wait = MAX_SLEEP;
		for (ScheduleFiring.Due schedule : due) {
			Duration until = Duration.between(schedule.now(), schedule.nextFireAt());
			if (!until.isNegative() && !until.isZero()) {
				wait = min(wait, until);
				continue;
			}
			Failure failure = this.failures.get(schedule.name());
			if (failure != null && failure.retryAt() - System.nanoTime() > 0) {
				wait = min(wait, Duration.ofNanos(failure.retryAt() - System.nanoTime()));
				continue;
			}
			try {
				ScheduleFiring.Outcome outcome = this.firing.fire(schedule);
				if (failure != null) {
					logger.info("Schedule '{}' fires again after {} failure(s)", schedule.name(), failure.count());
					this.failures.remove(schedule.name());
				}
				Duration next = Duration.between(schedule.now(), outcome.plan().next());
				if (outcome.result() == ScheduleFiring.Result.LOST) {
					next = max(next, AFTER_LOST);
				}
				wait = min(wait, max(next, Duration.ZERO));
			}
			catch (RuntimeException ex) {
				Failure next = Failure.after(failure);
				this.failures.put(schedule.name(), next);
				if (failure == null) {
					logger.warn("Schedule '{}' could not send its tick {} from this JVM, as its database role; the tick "
							+ "stays due, and this JVM tries it again with back-off up to a minute: {}", schedule.name(),
							schedule.nextFireAt(), reason(ex), ex);
				}
				else {
					logger.debug("Schedule '{}' still fails ({} times): {}", schedule.name(), next.count(), ex.toString());
				}
				wait = min(wait, Duration.ofNanos(next.retryAt() - System.nanoTime()));
			}
		}
		return wait;
	}

	/** What went wrong, in the database's words when it was the database. */
	private static String reason(Throwable ex) {
		return (ex instanceof org.springframework.dao.DataAccessException dae)
				? String.valueOf(dae.getMostSpecificCause().getMessage()) : ex.getMessage();
	}

	/** Whether {@code ex} is PostgreSQL's insufficient_privilege (SQLSTATE 42501). */
	private static boolean isPermissionDenied(Throwable ex) {
		for (Throwable cause = ex; cause != null; cause = cause.getCause()) {
			if (cause instanceof java.sql.SQLException sql && "42501".equals(sql.getSQLState())) {
				return true;
			}
		}
		return false;
	}

	private Duration outageBackoff() {
		long millis = Math.min(MAX_OUTAGE_BACKOFF.toMillis(), 1000L << Math.min(this.outageFailures, 5));
		return Duration.ofMillis(millis / 2 + ThreadLocalRandom.current().nextLong(millis / 2 + 1));
	}

	private void sleep(Duration wait) {
		long millis = Math.max(1, wait.toMillis());
		synchronized (this.monitor) {
			if (!this.running) {
				return;
			}
			try {
				this.monitor.wait(millis);
			}
			catch (InterruptedException ex) {
				Thread.currentThread().interrupt();
				this.running = false;
			}
		}
	}

	private static Duration min(Duration a, Duration b) {
		return (a.compareTo(b) <= 0) ? a : b;
	}

	private static Duration max(Duration a, Duration b) {
		return (a.compareTo(b) >= 0) ? a : b;
	}

	/** The failures in a row of one schedule, and when it may be fired again ({@link System#nanoTime()}). */
	private record Failure(int count, long retryAt) {

		static Failure after(Failure previous) {
			int count = (previous != null) ? previous.count() + 1 : 1;
			long millis = Math.min(MAX_SCHEDULE_BACKOFF.toMillis(), 1000L << Math.min(count - 1, 6));
			return new Failure(count, System.nanoTime() + Duration.ofMillis(millis).toNanos());
		}

	}

}
