package io.github.pgqueue.listener;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Objects;
import java.util.function.BooleanSupplier;
import java.util.function.Supplier;

import io.github.pgqueue.ConsumptionMode;
import io.github.pgqueue.QueueContext;
import io.github.pgqueue.internal.ConsumerSession;
import io.github.pgqueue.internal.ListenerMetrics;
import io.github.pgqueue.internal.QueueSql;
import io.github.pgqueue.observation.QueueProcessObservationConvention;
import io.micrometer.observation.ObservationRegistry;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import org.springframework.core.task.SimpleAsyncTaskExecutor;
import org.springframework.core.task.TaskExecutor;
import org.springframework.transaction.PlatformTransactionManager;
import org.springframework.util.Assert;

/**
 * Runs one listener endpoint: {@code concurrency} pollers, each on a thread of its own taken
 * from a {@link TaskExecutor}, owning a database session and holding what it claimed until it is
 * completed. Created by {@link QueueListenerEndpointRegistry}, which starts and stops it with the
 * application; it can also be started, stopped, paused and resumed at runtime, as
 * {@code registry.getListenerContainer("id").pause()}. Not a bean.
 */
public final class QueueListenerContainer {

	private static final Logger logger = LoggerFactory.getLogger(QueueListenerContainer.class);

	/** How long pollers still running at the shutdown timeout may take to react to the interrupt. */
	static final Duration INTERRUPT_GRACE = Duration.ofSeconds(5);

	private final QueueListenerEndpoint endpoint;

	private final Supplier<ConsumerSession> sessions;

	private final QueueContext context;

	private final QueueSql sql;

	private final PlatformTransactionManager transactionManager;

	private final ListenerMetrics metrics;

	private final QueueProcessObservationConvention observationConvention;

	private final Duration shutdownTimeout;

	/** Runs before the pollers start: the registry's check, and its LISTEN connection, which wakes them. */
	private final Runnable beforeStart;

	/** Whether the registry's notifications and sweep wake idle pollers for all they would find. */
	private final BooleanSupplier watched;

	private final List<PollLoop> loops = new ArrayList<>();

	/** Where {@link #wake} looks for a waiting poller first, so that wake-ups go round (guarded by loops). */
	private int nextWoken;

	private TaskExecutor taskExecutor;

	private volatile boolean running;

	private volatile boolean paused;

	QueueListenerContainer(QueueListenerEndpoint endpoint, Supplier<ConsumerSession> sessions, QueueContext context,
			QueueSql sql, PlatformTransactionManager transactionManager, ListenerMetrics metrics,
			QueueProcessObservationConvention observationConvention, Duration shutdownTimeout, boolean virtualThreads,
			Runnable beforeStart, BooleanSupplier watched) {
		this.endpoint = endpoint;
		this.watched = watched;
		this.observationConvention = observationConvention;
		this.sessions = sessions;
		this.context = context;
		this.sql = sql;
		this.transactionManager = transactionManager;
		this.metrics = metrics;
		this.shutdownTimeout = shutdownTimeout;
		this.beforeStart = beforeStart;
		this.taskExecutor = defaultTaskExecutor(endpoint, virtualThreads);
	}

	/**
	 * Threads named {@code pgqueue-<id>-<n>}: daemon threads, so that a handler that ignores
	 * interrupts does not keep the JVM alive once the application is closed; virtual threads if
	 * asked (Java 21 or later).
	 */
	private static TaskExecutor defaultTaskExecutor(QueueListenerEndpoint endpoint, boolean virtualThreads) {
		SimpleAsyncTaskExecutor executor = new SimpleAsyncTaskExecutor("pgqueue-" + endpoint.id() + "-");
		executor.setDaemon(true);
		executor.setVirtualThreads(virtualThreads);
		return executor;
	}

	/** The endpoint this container runs. */
	public QueueListenerEndpoint endpoint() {
		return this.endpoint;
	}

	/**
	 * Sets where the pollers run: the executor must run each of the {@code concurrency} pollers
	 * on a thread of its own at once, for as long as the container runs (a pool smaller than that
	 * leaves pollers waiting, and their queues unconsumed). Only while the container is stopped.
	 */
	public void setTaskExecutor(TaskExecutor taskExecutor) {
		Assert.notNull(taskExecutor, "taskExecutor must not be null");
		synchronized (this.loops) {
			Assert.state(!this.running, () -> "Listener '" + this.endpoint.id()
					+ "' is running; set its task executor before it starts");
			this.taskExecutor = taskExecutor;
		}
	}

	/** Where the pollers run. */
	public TaskExecutor getTaskExecutor() {
		synchronized (this.loops) {
			return this.taskExecutor;
		}
	}

	/** Whether the pollers run (paused or not). */
	public boolean isRunning() {
		return this.running;
	}

	/** Whether every poller has a working database session. */
	public boolean isConnected() {
		synchronized (this.loops) {
			return this.running && this.loops.stream().allMatch(PollLoop::isConnected);
		}
	}

	/**
	 * Starts the pollers; does nothing if they run. A paused container starts paused. Fails, and
	 * the container stays stopped, if the registry refuses the start (a queue that does not exist).
	 */
	public void start() {
		if (this.running) {
			return;
		}
		this.beforeStart.run(); // outside the lock: the registry takes its own, then this one
		synchronized (this.loops) {
			if (this.running) {
				return;
			}
			this.loops.clear();
			ObservationRegistry observations = this.endpoint.containerProperties().observationEnabled()
					? this.context.observationRegistry() : null;
			for (int i = 0; i < this.endpoint.containerProperties().concurrency(); i++) {
				this.loops.add((this.endpoint.containerProperties().mode() == ConsumptionMode.TRANSACTIONAL)
						? PollLoop.transactional(this.endpoint, this.context, this.sql, this.transactionManager,
								this.sessions, this.metrics, observations, this.observationConvention, i == 0, this::wakeAll,
								this::isPaused, this.watched)
						: PollLoop.session(this.endpoint, this.sessions, this.context.payloadConverter(), this.metrics,
								observations, this.observationConvention, i == 0, this::wakeAll, this::isPaused,
								this.watched));
			}
			this.running = true;
			try {
				this.loops.forEach(this.taskExecutor::execute);
			}
			catch (RuntimeException ex) {
				this.running = false;
				this.loops.forEach(PollLoop::stop);
				throw new IllegalStateException("Listener '" + this.endpoint.id() + "' could not start its "
						+ this.endpoint.containerProperties().concurrency() + " poller(s) on its task executor: "
						+ ex.getMessage(), ex);
			}
			logger.info("Started listener '{}' on {} with {} poller(s){}", this.endpoint.id(),
					this.endpoint.containerProperties().queues(), this.endpoint.containerProperties().concurrency(),
					this.paused ? ", paused" : "");
		}
	}

	/**
	 * Stops the pollers as the application's shutdown does: no claim and no handler starts after
	 * this call; handlers running finish within the registry's shutdown timeout, then are
	 * interrupted; what is left is released. Returns when the pollers have ended.
	 */
	public void stop() {
		stop(this.shutdownTimeout);
	}

	/**
	 * Stops the pollers: no claim and no handler starts after this call; handlers running finish
	 * within {@code timeout}, then are interrupted; what is left is released.
	 */
	public void stop(Duration timeout) {
		signalStop();
		awaitStop(System.nanoTime() + timeout.toNanos());
	}

	/**
	 * Pauses consumption: each poller finishes the batch it is handling, then claims nothing
	 * until {@link #resume()} (its database session stays open). Takes effect at once, running or
	 * not: a container paused before it starts starts paused. In this JVM only.
	 */
	public void pause() {
		if (!this.paused) {
			this.paused = true;
			logger.info("Paused listener '{}'", this.endpoint.id());
		}
	}

	/** Resumes consumption after {@link #pause()}: the pollers claim again at once. */
	public void resume() {
		if (this.paused) {
			this.paused = false;
			logger.info("Resumed listener '{}'", this.endpoint.id());
			wakeAll();
		}
	}

	/** Whether the container is paused (a paused container may still finish its last batch). */
	public boolean isPaused() {
		return this.paused;
	}

	/** Whether it is paused and every poller has finished its last batch and claims nothing. */
	boolean isPauseComplete() {
		synchronized (this.loops) {
			return this.paused && this.loops.stream().allMatch(PollLoop::isIdlePaused);
		}
	}

	void signalStop() {
		synchronized (this.loops) {
			this.running = false;
			this.loops.forEach(PollLoop::stop);
		}
	}

	/**
	 * Waits until {@code deadlineNanos} for the pollers to finish their handlers, then interrupts
	 * those still running (their messages are given back) and waits for them at most
	 * {@link #INTERRUPT_GRACE} more, all of them at once.
	 */
	void awaitStop(long deadlineNanos) {
		interruptAfter(deadlineNanos);
		finishStop(deadlineNanos + INTERRUPT_GRACE.toNanos());
	}

	/**
	 * Waits for the interrupted pollers until {@code graceDeadlineNanos}, and says the listener
	 * stopped; the pollers still running then give up their permit to take messages whose consumer
	 * died, which a handler stuck for good would otherwise keep from every other listener.
	 */
	void finishStop(long graceDeadlineNanos) {
		if (!joinUntil(graceDeadlineNanos)) {
			loops().forEach(PollLoop::abandon);
		}
		logger.info("Stopped listener '{}'", this.endpoint.id());
	}

	/** Waits until {@code deadlineNanos} and interrupts the pollers still running then. */
	void interruptAfter(long deadlineNanos) {
		joinUntil(deadlineNanos);
		for (PollLoop loop : loops()) {
			String thread = loop.interrupt();
			if (thread != null) {
				logger.warn("Listener '{}': thread {} did not finish within the shutdown timeout; interrupting it",
						this.endpoint.id(), thread);
			}
		}
	}

	/** Waits for the pollers until {@code deadlineNanos}; returns whether all have finished. */
	boolean joinUntil(long deadlineNanos) {
		boolean finished = true;
		for (PollLoop loop : loops()) {
			long left = Math.max(0, deadlineNanos - System.nanoTime());
			try {
				finished &= loop.awaitFinished(left / 1_000_000);
			}
			catch (InterruptedException ex) {
				Thread.currentThread().interrupt();
				return false;
			}
		}
		if (!finished && deadlineNanos - System.nanoTime() <= 0) {
			loops().stream().map(PollLoop::threadName).filter(Objects::nonNull).forEach((thread) -> logger.warn(
					"Listener '{}': thread {} still runs its handler after the shutdown timeout and the interrupt; "
							+ "leaving it (a daemon thread, it does not keep the JVM alive)",
					this.endpoint.id(), thread));
		}
		return finished;
	}

	private List<PollLoop> loops() {
		synchronized (this.loops) {
			return new ArrayList<>(this.loops);
		}
	}

	/**
	 * A notification for {@code queue}: wakes one poller that waits for work, if they consume it.
	 * One claim takes what the notification announced (a send's rows, or a retry's due time); a
	 * poller whose claim comes back full wakes its siblings, and one whose claim found anything but
	 * was not settled ({@link ConsumptionStrategy.Polled#settled()}) claims again before it waits.
	 * Waking them all made each send cost a claim per poller, all but one empty. When none waits,
	 * every poller gets the wake-up: one that is claiming may have taken its snapshot before the
	 * notified commit, and must not then wait.
	 */
	void wake(String queue) {
		if (!this.endpoint.containerProperties().queues().contains(queue)) {
			return;
		}
		synchronized (this.loops) {
			if (!wakeOneWaiting()) {
				this.loops.forEach(PollLoop::wakeUp);
			}
		}
	}

	/**
	 * The sweep found a message visible in {@code queue}: wakes one poller that waits for work, if
	 * any does and the container consumes that queue and is not paused. Busy pollers claim anyway.
	 */
	void wakeIdle(String queue) {
		if (this.paused || !this.endpoint.containerProperties().queues().contains(queue)) {
			return;
		}
		synchronized (this.loops) {
			wakeOneWaiting();
		}
	}

	/** Wakes the next poller in turn that waits for work; false if none waits (guarded by loops). */
	private boolean wakeOneWaiting() {
		int size = this.loops.size();
		for (int i = 0; i < size; i++) {
			int index = (this.nextWoken + i) % size;
			if (this.loops.get(index).wakeUpIfWaiting()) {
				this.nextWoken = index + 1;
				return true;
			}
		}
		return false;
	}

	void wakeAll() {
		synchronized (this.loops) {
			this.loops.forEach(PollLoop::wakeUp);
		}
	}

}
