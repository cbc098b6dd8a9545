package io.github.pgqueue.listener;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.function.Supplier;

import io.github.pgqueue.ConsumptionMode;
import io.github.pgqueue.QueueTemplate;
import io.github.pgqueue.internal.ConsumerSession;
import io.github.pgqueue.internal.ListenerMetrics;
import io.github.pgqueue.internal.PollLoop;
import io.github.pgqueue.observation.QueueProcessObservationConvention;
import io.micrometer.observation.ObservationRegistry;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import org.springframework.transaction.PlatformTransactionManager;

/**
 * Runs one listener endpoint: {@code concurrency} poller threads, each owning a database session
 * and holding what it claimed until it is completed. Created and driven by
 * {@link QueueListenerEndpointRegistry}; not a bean.
 */
public final class QueueListenerContainer {

	private static final Logger logger = LoggerFactory.getLogger(QueueListenerContainer.class);

	private final QueueListenerEndpoint endpoint;

	private final Supplier<ConsumerSession> sessions;

	private final QueueTemplate template;

	private final PlatformTransactionManager transactionManager;

	private final ListenerMetrics metrics;

	private final QueueProcessObservationConvention observationConvention;

	private final List<PollLoop> loops = new ArrayList<>();

	private final List<Thread> threads = new ArrayList<>();

	private volatile boolean running;

	/** How long pollers still running at the shutdown timeout may take to react to the interrupt. */
	static final Duration INTERRUPT_GRACE = Duration.ofSeconds(5);

	QueueListenerContainer(QueueListenerEndpoint endpoint, Supplier<ConsumerSession> sessions, QueueTemplate template,
			PlatformTransactionManager transactionManager, ListenerMetrics metrics,
			QueueProcessObservationConvention observationConvention) {
		this.endpoint = endpoint;
		this.observationConvention = observationConvention;
		this.sessions = sessions;
		this.template = template;
		this.transactionManager = transactionManager;
		this.metrics = metrics;
	}

	/** The endpoint this container runs. */
	public QueueListenerEndpoint endpoint() {
		return this.endpoint;
	}

	/** Whether the pollers run. */
	public boolean isRunning() {
		return this.running;
	}

	/** Whether every poller has a working database session. */
	public boolean isConnected() {
		synchronized (this.loops) {
			return this.running && this.loops.stream().allMatch(PollLoop::isConnected);
		}
	}

	/** Starts the pollers; does nothing if they run. */
	public void start() {
		synchronized (this.loops) {
			if (this.running) {
				return;
			}
			this.loops.clear();
			this.threads.clear();
			ObservationRegistry observations = this.endpoint.observationEnabled()
					? this.template.observationRegistry() : null;
			for (int i = 0; i < this.endpoint.concurrency(); i++) {
				PollLoop loop = (this.endpoint.mode() == ConsumptionMode.TRANSACTIONAL)
						? PollLoop.transactional(this.endpoint, this.template, this.transactionManager, this.sessions,
								this.metrics, observations, this.observationConvention, i == 0, this::wakeAll)
						: PollLoop.session(this.endpoint, this.sessions, this.template.payloadConverter(), this.metrics,
								observations, this.observationConvention, i == 0, this::wakeAll);
				Thread thread = new Thread(loop, "pgqueue-" + this.endpoint.id() + "-" + i);
				// A handler that ignores interrupts must not keep the JVM alive once the application is closed.
				thread.setDaemon(true);
				this.loops.add(loop);
				this.threads.add(thread);
			}
			this.running = true;
			this.threads.forEach(Thread::start);
			logger.info("Started listener '{}' on {} with {} poller(s)", this.endpoint.id(), this.endpoint.queues(),
					this.endpoint.concurrency());
		}
	}

	/**
	 * Stops the pollers: no claim and no handler starts after this call; handlers running finish
	 * within {@code timeout}, then are interrupted; what is left is released.
	 */
	public void stop(Duration timeout) {
		signalStop();
		awaitStop(System.nanoTime() + timeout.toNanos());
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

	/** Waits for the interrupted pollers until {@code graceDeadlineNanos}, and says the listener stopped. */
	void finishStop(long graceDeadlineNanos) {
		joinUntil(graceDeadlineNanos);
		logger.info("Stopped listener '{}'", this.endpoint.id());
	}

	/** Waits until {@code deadlineNanos} and interrupts the pollers still running then. */
	void interruptAfter(long deadlineNanos) {
		joinUntil(deadlineNanos);
		for (Thread thread : threads()) {
			if (thread.isAlive()) {
				logger.warn("Listener '{}': thread {} did not finish within the shutdown timeout; interrupting it",
						this.endpoint.id(), thread.getName());
				thread.interrupt();
			}
		}
	}

	/** Waits for the pollers until {@code deadlineNanos}; returns whether all have finished. */
	boolean joinUntil(long deadlineNanos) {
		for (Thread thread : threads()) {
			long left = deadlineNanos - System.nanoTime();
			if (left <= 0) {
				break;
			}
			try {
				thread.join(Math.max(1, left / 1_000_000));
			}
			catch (InterruptedException ex) {
				Thread.currentThread().interrupt();
				return false;
			}
		}
		boolean finished = threads().stream().noneMatch(Thread::isAlive);
		if (!finished && deadlineNanos - System.nanoTime() <= 0) {
			threads().stream().filter(Thread::isAlive).forEach((thread) -> logger.warn("Listener '{}': thread {} "
					+ "still runs its handler after the shutdown timeout and the interrupt; leaving it (a daemon "
					+ "thread, it does not keep the JVM alive)", this.endpoint.id(), thread.getName()));
		}
		return finished;
	}

	private List<Thread> threads() {
		synchronized (this.loops) {
			return new ArrayList<>(this.threads);
		}
	}

	/** Wakes the pollers if they consume {@code queue}. */
	void wake(String queue) {
		if (this.endpoint.queues().contains(queue)) {
			wakeAll();
		}
	}

	void wakeAll() {
		synchronized (this.loops) {
			this.loops.forEach(PollLoop::wakeUp);
		}
	}

}
