package io.github.pgqueue.listener;

import java.time.Duration;
import java.util.List;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.Semaphore;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.function.BooleanSupplier;
import java.util.function.Function;
import java.util.function.Supplier;

import io.github.pgqueue.PayloadConverter;
import io.github.pgqueue.QueueContext;
import io.github.pgqueue.internal.ConsumerSession;
import io.github.pgqueue.internal.Linger;
import io.github.pgqueue.internal.ListenerMetrics;
import io.github.pgqueue.internal.QueueSql;
import io.github.pgqueue.observation.QueueProcessObservationConvention;
import io.micrometer.observation.ObservationRegistry;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import org.springframework.transaction.PlatformTransactionManager;

/**
 * One poller thread of a listener container: polls its queues in turn through its
 * {@link ConsumptionStrategy} (session or transactional mode) and sleeps when they are empty, until a
 * notification, a sibling or the next delayed message wakes it; right after work it only naps
 * ({@link Linger}), since notifications can come late. Survives everything: a failure is
 * logged once per outage, backed off with jitter, and the consumption's connections reopened.
 */
final class PollLoop implements Runnable {

	private static final Logger logger = LoggerFactory.getLogger(PollLoop.class);

	private final QueueListenerEndpoint endpoint;

	private final ConsumptionStrategy consumption;

	/** How often an outage that lasts is logged again, with what it hits now. */
	private static final Duration OUTAGE_WARNING_INTERVAL = Duration.ofMinutes(1);

	/** How much longer than the poll interval an idle follower sleeps when nothing wakes it. */
	private static final int FOLLOWER_IDLE_FACTOR = 10;

	/**
	 * How much longer than the poll interval any idle poller sleeps while its registry watches the
	 * queues (the LISTEN connection is up and the sweep of visible messages works): those wake it
	 * for whatever it would find, so its own poll is only a safeguard.
	 */
	static final int WATCHED_IDLE_FACTOR = 60;

	/**
	 * How far a watched poller's safeguard wait strays from {@link #WATCHED_IDLE_FACTOR} poll
	 * intervals, as a fraction of it either way: listeners that go idle together would otherwise
	 * poll together for as long as they stay idle, hundreds of claims within a second every period.
	 */
	static final double WATCHED_IDLE_JITTER = 0.2;

	private final boolean leader;

	private final Runnable wakeSiblings;

	private final Semaphore wakeUp = new Semaphore(0);

	/** Whether the poller waits for work in {@link #awaitWork}: a notification wakes one such poller. */
	private final AtomicBoolean waiting = new AtomicBoolean();

	private final RetryBackoff backoff = new RetryBackoff();

	private final Linger linger = new Linger();

	/**
	 * One poller per process at a time may claim a message whose consumer died: if that message
	 * is what kills the process, no other such message dies with it again and again. Handed over
	 * in turn to the pollers that ask for it.
	 */
	private static final SuspectPermit SUSPECTS = new SuspectPermit();

	/** The least time between two asks of one poller for the permit to take suspects. */
	private static final long ASK_INTERVAL_NANOS = java.util.concurrent.TimeUnit.SECONDS.toNanos(1);

	/** Whether a claim of the last poll was refused the permit to take messages whose consumer died. */
	private boolean refusedSuspects;

	/**
	 * Whether the poller was handed that permit since it last found work or slept: it does not ask
	 * for it again until then. A poller woken by the handover whose claims then find nothing has
	 * no use for it; asking again there made two idle pollers hand it to each other, and wake each
	 * other, without end.
	 */
	private boolean handedSuspects;

	/** When this poller last asked for the permit to take suspects (System.nanoTime). */
	private long lastAsked = System.nanoTime() - ASK_INTERVAL_NANOS;

	private final BooleanSupplier paused;

	/** Whether notifications and the registry's sweep wake this poller for all it would find. */
	private final BooleanSupplier watched;

	private volatile boolean idlePaused;

	private volatile boolean running = true;

	private volatile boolean connected;

	/** The thread that runs this loop, while it runs. */
	private volatile Thread runner;

	private final CountDownLatch finished = new CountDownLatch(1);

	private int nextQueue;

	/** When the next delayed message of this poller's queues becomes visible, as the last poll saw it. */
	private Duration nextDue;

	/** Whether a claim of the last poll is to be made again at once, even one that handed out nothing. */
	private boolean claimAgain;

	/** Whether every claim of the last poll was settled ({@link ConsumptionStrategy.Polled#settled()}). */
	private boolean settled;

	private PollLoop(QueueListenerEndpoint endpoint, Function<BooleanSupplier, ConsumptionStrategy> consumption,
			boolean leader, Runnable wakeSiblings, BooleanSupplier paused, BooleanSupplier watched) {
		this.endpoint = endpoint;
		this.consumption = consumption.apply(() -> this.running);
		this.leader = leader;
		this.wakeSiblings = wakeSiblings;
		this.paused = paused;
		this.watched = watched;
	}

	/**
	 * A poller in session mode.
	 * @param observationRegistry where each handler call is observed as {@code pgqueue.process}; null
	 * when the listener's observation is off
	 * @param observationConvention the convention of that observation; null for the default
	 * @param leader whether this poller polls every poll interval when idle; the others (followers)
	 * wait for a notification, or for a sibling that found a full batch, so that an idle listener
	 * costs about one statement per poll interval whatever its concurrency
	 * @param wakeSiblings wakes every poller of the same listener
	 * @param paused whether the listener is paused: the poller then claims nothing until it is
	 * woken and no longer paused
	 * @param watched whether notifications and the registry's sweep of visible messages wake the
	 * poller for all it would find: an idle poller, leader or not, then polls only every
	 * {@link #WATCHED_IDLE_FACTOR} poll intervals
	 */
	public static PollLoop session(QueueListenerEndpoint endpoint, Supplier<ConsumerSession> sessions,
			PayloadConverter converter, ListenerMetrics metrics, ObservationRegistry observationRegistry,
			QueueProcessObservationConvention observationConvention, boolean leader, Runnable wakeSiblings,
			BooleanSupplier paused, BooleanSupplier watched) {
		ProcessObservation observation = ProcessObservation.of(observationRegistry, observationConvention, endpoint.id());
		return new PollLoop(endpoint, (running) -> new SessionStrategy(
				new Dispatcher(endpoint, converter, running, observation), sessions, metrics,
				endpoint.containerProperties().batchSize(),
				running, endpoint.headerFilter(), endpoint.containerProperties().queues()), leader, wakeSiblings, paused,
				watched);
	}

	/**
	 * A poller in transactional mode: batches are claimed and handled in transactions of
	 * {@code transactionManager} on the context's DataSource, running {@code sql}; messages whose consumer died are
	 * counted and run through sessions from {@code sessions}. Observation as in
	 * {@link #session session}.
	 */
	public static PollLoop transactional(QueueListenerEndpoint endpoint, QueueContext context, QueueSql sql,
			PlatformTransactionManager transactionManager, Supplier<ConsumerSession> sessions, ListenerMetrics metrics,
			ObservationRegistry observationRegistry, QueueProcessObservationConvention observationConvention,
			boolean leader, Runnable wakeSiblings, BooleanSupplier paused, BooleanSupplier watched) {
		ProcessObservation observation = ProcessObservation.of(observationRegistry, observationConvention, endpoint.id());
		return new PollLoop(endpoint, (running) -> new TransactionalStrategy(
				new Dispatcher(endpoint, context.payloadConverter(), running, observation), context, sql,
				transactionManager, sessions, metrics, endpoint, running), leader, wakeSiblings, paused, watched);
	}

	/**
	 * Whether the poller has seen its listener paused and waits, claiming nothing: a poller that
	 * was between its pause check and its claim when the pause came still claims (and handles
	 * that batch) before it gets here.
	 */
	boolean isIdlePaused() {
		return this.idlePaused;
	}

	/** Wakes the poller if it waits for work. */
	public void wakeUp() {
		if (this.wakeUp.availablePermits() == 0) {
			this.wakeUp.release();
		}
	}

	/**
	 * Wakes the poller if it is waiting for work, and takes it off the waiting ones; false if it
	 * was not waiting (it is claiming or handling, or another wake-up has just taken it).
	 */
	boolean wakeUpIfWaiting() {
		if (this.waiting.compareAndSet(true, false)) {
			wakeUp();
			return true;
		}
		return false;
	}

	/** Asks the poller to stop: it claims nothing more and starts no further handler. */
	public void stop() {
		this.running = false;
		wakeUp();
	}

	/**
	 * Gives up, for a loop whose thread the container leaves running after its stop (a handler
	 * that ignores the interrupt), the permit to take messages whose consumer died, so that the
	 * process's other pollers may take them: that handler is not killing the process.
	 */
	void abandon() {
		SUSPECTS.withdraw(this);
	}

	/** Whether the poller has a working database session. */
	public boolean isConnected() {
		return this.connected;
	}

	/**
	 * Waits at most {@code millis} for the loop to end; whether it has ended (a loop that never
	 * started has not).
	 */
	public boolean awaitFinished(long millis) throws InterruptedException {
		return this.finished.await(millis, TimeUnit.MILLISECONDS);
	}

	/**
	 * Interrupts the handler this loop runs, if it still runs; the name of its thread, or null if
	 * the loop is not running on one.
	 */
	public String interrupt() {
		Thread thread = this.runner;
		if (thread == null) {
			return null;
		}
		thread.interrupt();
		return thread.getName();
	}

	/** The name of the thread that runs the loop, or null if none does. */
	public String threadName() {
		Thread thread = this.runner;
		return (thread != null) ? thread.getName() : null;
	}

	@Override
	public void run() {
		this.runner = Thread.currentThread();
		try {
			loop();
		}
		finally {
			this.runner = null;
			this.finished.countDown();
		}
	}

	private void loop() {
		boolean inOutage = false;
		long lastOutageWarning = 0;
		try {
			while (this.running) {
				try {
					if (this.paused.getAsBoolean()) {
						// Claims nothing and runs no statement; resume() or stop() wakes it. Nor does it
						// wait for the permit to take suspects, which must go to pollers that claim.
						SUSPECTS.withdraw(this);
						this.idlePaused = true;
						await(this.endpoint.containerProperties().pollInterval());
						continue;
					}
					this.idlePaused = false;
					int found = pollOnce();
					if (this.refusedSuspects && !this.handedSuspects
							&& System.nanoTime() - this.lastAsked >= ASK_INTERVAL_NANOS) {
						// At most once a second: each hand-over costs the poller a claim, and with
						// dozens of listeners sharing a steady load every poll met the permit held and
						// asked, so the hand-overs chained from poller to poller, a claim each.
						this.lastAsked = System.nanoTime();
						SUSPECTS.ask(this);
					}
					this.connected = true;
					if (inOutage) {
						logger.info("Listener '{}' is polling again", this.endpoint.id());
						inOutage = false;
					}
					this.backoff.reset();
					if (found > 0) {
						this.linger.workFound(found);
						this.handedSuspects = false;
					}
					// A quiet poller whose claims were settled waits after a short batch: a claim at once
					// would find nothing that no notification announces. A busy one claims again, as one
					// that found a full batch does.
					if (!this.claimAgain && (found == 0 || this.settled && !this.linger.lingers())) {
						this.handedSuspects = false;
						Duration interval = this.endpoint.containerProperties().pollInterval();
						Duration idle = this.watched.getAsBoolean() ? safeguardWait(interval)
								: this.leader ? interval : interval.multipliedBy(FOLLOWER_IDLE_FACTOR);
						Duration wait = (this.nextDue != null && this.nextDue.compareTo(idle) < 0) ? this.nextDue : idle;
						Duration lingering = this.linger.next();
						awaitWork((lingering != null && lingering.compareTo(wait) < 0) ? lingering : wait);
					}
				}
				catch (InterruptedException ex) {
					Thread.currentThread().interrupt();
					break;
				}
				catch (HandlerFatalError ex) {
					// The batch is completed and the failing message's attempt written: a new session,
					// at once (the dispatcher has logged the error with the message).
					this.consumption.close();
				}
				catch (Throwable ex) {
					this.connected = false;
					this.consumption.close();
					if (!this.running) {
						break;
					}
					Duration pause = this.backoff.next();
					if (!inOutage) {
						logger.warn("Listener '{}' failed to poll {}; retrying with back-off (first pause {} ms)",
								this.endpoint.id(), this.endpoint.containerProperties().queues(), pause.toMillis(), ex);
						inOutage = true;
						lastOutageWarning = System.nanoTime();
					}
					else if (System.nanoTime() - lastOutageWarning > OUTAGE_WARNING_INTERVAL.toNanos()) {
						// Once a minute, so that an outage that lasts says what it keeps hitting.
						logger.warn("Listener '{}' still fails to poll {}: {}", this.endpoint.id(),
								this.endpoint.containerProperties().queues(), ex.toString());
						lastOutageWarning = System.nanoTime();
					}
					else {
						logger.debug("Listener '{}' still failing: {}", this.endpoint.id(), ex.toString());
					}
					await(pause);
				}
			}
		}
		catch (InterruptedException ex) {
			Thread.currentThread().interrupt();
		}
		finally {
			this.connected = false;
			SUSPECTS.withdraw(this);
			this.consumption.close();
		}
	}

	/**
	 * Claims once from each queue in turn; how many messages were handled. When none was, also learns when
	 * the next delayed message of these queues is due ({@link #nextDue}).
	 */
	private int pollOnce() {
		int found = 0;
		this.nextDue = null;
		this.claimAgain = false;
		this.settled = true;
		this.refusedSuspects = false;
		if (SUSPECTS.isHeldBy(this)) {
			this.handedSuspects = true;
		}
		List<String> queues = this.endpoint.containerProperties().queues();
		for (int i = 0; i < queues.size() && this.running && !this.paused.getAsBoolean(); i++) {
			String queue = queues.get((this.nextQueue + i) % queues.size());
			// One poller per process at a time may take a message whose consumer died. The permit is
			// held through the batch even when the claim took none: a poller allowed to take suspects
			// also sees rows another poller has just acked as suspects (its snapshot still shows
			// them with their claim open) and then claims that phantom alone, so letting every poller
			// hold the permit briefly would make concurrent pollers claim far less.
			// A poller refused it asks for it, and is handed it at the next release (see
			// SuspectPermit): a busy listener that took it back at once kept a quiet queue's
			// orphans waiting for good.
			boolean mayTakeOpen = SUSPECTS.tryAcquire(this);
			this.refusedSuspects |= !mayTakeOpen;
			try {
				ConsumptionStrategy.Polled polled = this.consumption.poll(queue, mayTakeOpen);
				Duration due = polled.nextVisibleIn();
				if (due != null && (this.nextDue == null || due.compareTo(this.nextDue) < 0)) {
					this.nextDue = due;
				}
				if (polled.claimAgain()) {
					this.claimAgain = true;
				}
				this.settled &= polled.settled();
				if (polled.handled() > 0) {
					found += polled.handled();
					if (polled.claimAgain()) {
						this.wakeSiblings.run();
					}
				}
			}
			finally {
				if (mayTakeOpen) {
					SUSPECTS.release(this);
				}
			}
		}
		this.nextQueue++;
		return found;
	}

	/**
	 * How long an idle poller whose queues are watched waits for work before it polls on its own:
	 * {@link #WATCHED_IDLE_FACTOR} poll intervals, give or take {@link #WATCHED_IDLE_JITTER} of it,
	 * drawn anew each time.
	 */
	static Duration safeguardWait(Duration pollInterval) {
		double factor = WATCHED_IDLE_FACTOR
				* (1 + WATCHED_IDLE_JITTER * (2 * ThreadLocalRandom.current().nextDouble() - 1));
		return Duration.ofNanos((long) (pollInterval.toNanos() * factor));
	}

	/** Waits, idle, for a notification, a sibling or the timeout; only then one notification may pick it. */
	private void awaitWork(Duration timeout) throws InterruptedException {
		this.waiting.set(true);
		try {
			await(timeout);
		}
		finally {
			this.waiting.set(false);
		}
	}

	private void await(Duration timeout) throws InterruptedException {
		if (this.running && this.wakeUp.tryAcquire(timeout.toMillis(), TimeUnit.MILLISECONDS)) {
			this.wakeUp.drainPermits();
		}
	}

}
