package io.github.pgqueue.internal;

import java.lang.reflect.Type;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.Semaphore;
import java.util.concurrent.TimeUnit;
import java.util.function.Supplier;

import io.github.pgqueue.AckMode;
import io.github.pgqueue.Acknowledgment;
import io.github.pgqueue.LeaseLostException;
import io.github.pgqueue.PayloadConversionException;
import io.github.pgqueue.PayloadConverter;
import io.github.pgqueue.QueueMessage;
import io.github.pgqueue.internal.ListenerMetrics.Outcome;
import io.github.pgqueue.listener.DefaultQueueErrorHandler;
import io.github.pgqueue.listener.FailureAction;
import io.github.pgqueue.listener.QueueListenerEndpoint;
import io.micrometer.core.instrument.Timer;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * One poller thread of a listener container: owns a consumer session, claims a batch, hands
 * each message to the listener, then completes the whole batch in at most four statements
 * (ack, retry, dead-letter, release). Survives everything: a failure is logged once per outage,
 * backed off with jitter, and the session reopened.
 */
public final class PollLoop implements Runnable {

	private static final Logger logger = LoggerFactory.getLogger(PollLoop.class);

	private final QueueListenerEndpoint endpoint;

	private final Supplier<ConsumerSession> sessions;

	private final PayloadConverter converter;

	private final ListenerMetrics metrics;

	/** How much longer than the poll interval an idle follower sleeps when nothing wakes it. */
	private static final int FOLLOWER_IDLE_FACTOR = 10;

	private final boolean leader;

	private final Runnable wakeSiblings;

	private final Semaphore wakeUp = new Semaphore(0);

	private static final DefaultQueueErrorHandler DEFAULT_ERROR_HANDLER = new DefaultQueueErrorHandler();

	private final RetryBackoff backoff = new RetryBackoff();

	/**
	 * One poller per process at a time may claim a message whose consumer died: if that message
	 * is what kills the process, no other such message dies with it again and again.
	 */
	private static final Semaphore SUSPECTS = new Semaphore(1);

	private volatile boolean running = true;

	private volatile boolean connected;

	private ConsumerSession session;

	private int nextQueue;

	/** When the next delayed message of this poller's queues becomes visible, as the last poll saw it. */
	private Duration nextDue;

	/**
	 * @param leader whether this poller polls every poll interval when idle; the others (followers)
	 * wait for a notification, or for a sibling that found a full batch, so that an idle listener
	 * costs about one statement per poll interval whatever its concurrency
	 * @param wakeSiblings wakes every poller of the same listener
	 */
	public PollLoop(QueueListenerEndpoint endpoint, Supplier<ConsumerSession> sessions, PayloadConverter converter,
			ListenerMetrics metrics, boolean leader, Runnable wakeSiblings) {
		this.leader = leader;
		this.wakeSiblings = wakeSiblings;
		this.endpoint = endpoint;
		this.sessions = sessions;
		this.converter = converter;
		this.metrics = metrics;
	}

	/** Wakes the poller if it waits for work. */
	public void wakeUp() {
		if (this.wakeUp.availablePermits() == 0) {
			this.wakeUp.release();
		}
	}

	/** Asks the poller to stop: it claims nothing more and starts no further handler. */
	public void stop() {
		this.running = false;
		wakeUp();
	}

	/** Whether the poller has a working database session. */
	public boolean isConnected() {
		return this.connected;
	}

	@Override
	public void run() {
		boolean inOutage = false;
		try {
			while (this.running) {
				try {
					if (this.session == null) {
						this.session = this.sessions.get();
						this.connected = true;
					}
					boolean found = pollOnce();
					if (inOutage) {
						logger.info("Listener '{}' is polling again", this.endpoint.id());
						inOutage = false;
					}
					this.backoff.reset();
					if (!found) {
						Duration idle = this.leader ? this.endpoint.pollInterval()
								: this.endpoint.pollInterval().multipliedBy(FOLLOWER_IDLE_FACTOR);
						await((this.nextDue != null && this.nextDue.compareTo(idle) < 0) ? this.nextDue : idle);
					}
				}
				catch (InterruptedException ex) {
					Thread.currentThread().interrupt();
					break;
				}
				catch (Throwable ex) {
					this.connected = false;
					closeSession();
					if (!this.running) {
						break;
					}
					Duration pause = this.backoff.next();
					if (!inOutage) {
						logger.warn("Listener '{}' failed to poll {}; retrying with back-off (first pause {} ms)",
								this.endpoint.id(), this.endpoint.queues(), pause.toMillis(), ex);
						inOutage = true;
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
			closeSession();
		}
	}

	/**
	 * Claims once from each queue in turn; whether any message was found. When none was, also
	 * learns when the next delayed message of these queues is due ({@link #nextDue}).
	 */
	private boolean pollOnce() {
		boolean found = false;
		this.nextDue = null;
		List<String> queues = this.endpoint.queues();
		for (int i = 0; i < queues.size() && this.running; i++) {
			String queue = queues.get((this.nextQueue + i) % queues.size());
			// One poller per process at a time may take a message whose consumer died. The permit is
			// held through the batch even when the claim took none: a poller allowed to take suspects
			// also sees rows another poller has just acked as suspects (its snapshot still shows
			// them with their claim open) and then claims that phantom alone, so letting every poller
			// hold the permit briefly made concurrent pollers claim far less (steady fell behind).
			boolean mayTakeOpen = SUSPECTS.tryAcquire();
			try {
				ConsumerSession.Claim claim = this.session.claim(queue, this.endpoint.batchSize(), mayTakeOpen);
				this.metrics.processed(queue, Outcome.DEAD, claim.deadLettered());
				Duration due = claim.nextVisibleIn();
				if (due != null && (this.nextDue == null || due.compareTo(this.nextDue) < 0)) {
					this.nextDue = due;
				}
				if (!claim.messages().isEmpty()) {
					found = true;
					if (claim.messages().size() == this.endpoint.batchSize()) {
						this.wakeSiblings.run();
					}
					dispatch(queue, claim.messages());
				}
			}
			finally {
				if (mayTakeOpen) {
					SUSPECTS.release();
				}
			}
		}
		this.nextQueue++;
		return found;
	}

	/**
	 * Hands each message to the listener and completes the batch. Whatever one message does (throw
	 * an {@code Error}, break its converter or the error handler) is that message's failure alone:
	 * the messages handled before it are acked, the ones after it are handed on or, when the poller
	 * must stop, given back with their attempt. A {@link VirtualMachineError} is rethrown once the
	 * batch is completed.
	 */
	private void dispatch(String queue, List<ClaimedMessage> messages) {
		Batch batch = new Batch();
		Timer timer = this.metrics.timer(queue);
		VirtualMachineError fatal = null;
		for (ClaimedMessage message : messages) {
			if (fatal != null || !this.running || Thread.currentThread().isInterrupted()) {
				batch.unseen.add(message.id());
				continue;
			}
			if (batch.size() > 0 && !this.session.checkAlive()) {
				// The locks went with the session: another consumer may hold these messages now.
				logger.warn("Listener '{}' lost its database session during a batch of queue '{}'; the {} messages "
						+ "not yet handled are left to other consumers and {} handled ones will be delivered again",
						this.endpoint.id(), queue, messages.size() - batch.size(), batch.size());
				throw new LeaseLostException("Session of listener '" + this.endpoint.id() + "' ended during a batch");
			}
			MessageAcknowledgment ack = new MessageAcknowledgment(message);
			QueueMessage<Object> converted;
			try {
				converted = convert(message, this.endpoint.payloadType());
			}
			catch (PayloadConversionException ex) {
				logger.warn("Listener '{}': message {} of queue '{}' cannot be converted; dead-lettering it: {}",
						this.endpoint.id(), message.id(), queue, ex.getMessage());
				batch.deadLetters.add(ConsumerSession.DeadLetter.of(message, ex.getMessage()));
				continue;
			}
			catch (Throwable ex) {
				// Not the payload's fault as far as anyone can tell: a failed attempt, retried.
				fail(unread(message), message, ex, ack);
				batch.add(message, ack);
				fatal = (ex instanceof VirtualMachineError error) ? error : null;
				continue;
			}
			long started = System.nanoTime();
			try {
				this.endpoint.listener().onMessage(converted, ack);
				if (ack.completion == null) {
					if (this.endpoint.ackMode() == AckMode.AUTO) {
						ack.completion = Completion.ACK;
					}
					else {
						fail(converted, message, new IllegalStateException("Listener returned without calling ack(), "
								+ "nack() or reject() (ackMode = MANUAL)"), ack);
					}
				}
			}
			catch (Throwable ex) {
				if (ack.completion == null) {
					if (interruptedByStop(ex)) {
						// The stop's doing, not the message's: it goes back with its attempt.
						logger.info("Listener '{}': handler of message {} was interrupted by the stop; giving the "
								+ "message back", this.endpoint.id(), message.id());
						ack.completion = Completion.GIVE_BACK;
					}
					else {
						fail(converted, message, ex, ack);
					}
				}
				if (ex instanceof VirtualMachineError error) {
					fatal = error;
				}
			}
			finally {
				timer.record(System.nanoTime() - started, TimeUnit.NANOSECONDS);
			}
			batch.add(message, ack);
		}
		boolean interrupted = Thread.interrupted();
		try {
			complete(queue, batch);
		}
		finally {
			if (interrupted) {
				Thread.currentThread().interrupt();
			}
		}
		if (fatal != null) {
			throw fatal;
		}
	}

	/**
	 * Whether a handler failed because the container interrupted it to stop: the poller was asked
	 * to stop and the thread is interrupted, or an interruption is among the causes.
	 */
	private boolean interruptedByStop(Throwable ex) {
		if (this.running) {
			return false;
		}
		if (Thread.currentThread().isInterrupted()) {
			return true;
		}
		for (Throwable cause = ex; cause != null; cause = cause.getCause()) {
			if (cause instanceof InterruptedException || cause instanceof java.io.InterruptedIOException
					|| cause instanceof java.nio.channels.ClosedByInterruptException) {
				return true;
			}
		}
		return false;
	}

	/** The message as the error handler sees it when its payload could not be read. */
	private static QueueMessage<Object> unread(ClaimedMessage message) {
		return new QueueMessage<>(message.id(), message.queue(), null, Headers.read(message.headersJson()),
				message.priority(), message.attempt(), message.maxAttempts(), message.createdAt());
	}

	private void fail(QueueMessage<Object> converted, ClaimedMessage message, Throwable error,
			MessageAcknowledgment ack) {
		FailureAction action;
		try {
			action = this.endpoint.errorHandler().handle(converted, error, message.backoff());
			if (action == null) {
				logger.error("Error handler of listener '{}' returned no action for message {}; applying the default "
						+ "(retry with the queue's back-off, dead-letter on the last attempt)", this.endpoint.id(),
						message.id());
				action = DEFAULT_ERROR_HANDLER.handle(converted, error, message.backoff());
			}
		}
		catch (Throwable handlerFailure) {
			logger.error("Error handler of listener '{}' failed on message {}; applying the default (retry with the "
					+ "queue's back-off, dead-letter on the last attempt)", this.endpoint.id(), message.id(),
					handlerFailure);
			action = DEFAULT_ERROR_HANDLER.handle(converted, error, message.backoff());
		}
		if (action.isRetry()) {
			logger.warn("Listener '{}' failed on message {} of queue '{}' (attempt {} of {}); retrying in {} ms: {}",
					this.endpoint.id(), message.id(), message.queue(), message.attempt(), message.maxAttempts(),
					action.retryDelay().toMillis(), DefaultQueueErrorHandler.describe(error));
			logger.debug("Failure of message {} in listener '{}'", message.id(), this.endpoint.id(), error);
			ack.retry(action.retryDelay(), DefaultQueueErrorHandler.describe(error));
		}
		else {
			logger.warn("Listener '{}' failed on message {} of queue '{}' (attempt {} of {}); dead-lettering it: {}",
					this.endpoint.id(), message.id(), message.queue(), message.attempt(), message.maxAttempts(),
					action.deadLetterReason(), error);
			ack.deadLetter(action.deadLetterReason());
		}
	}

	private void complete(String queue, Batch batch) {
		try {
			this.session.ack(batch.acks);
			this.session.retry(batch.retries);
			this.session.deadLetter(batch.deadLetters);
			this.session.release(batch.unseen, true);
			this.metrics.processed(queue, Outcome.SUCCESS, batch.acks.size());
			this.metrics.processed(queue, Outcome.RETRY, batch.retries.size());
			this.metrics.processed(queue, Outcome.DEAD, batch.deadLetters.size());
		}
		catch (LeaseLostException ex) {
			logger.warn("Listener '{}' lost its database session before completing {} messages of queue '{}'; "
					+ "they will be delivered again", this.endpoint.id(), batch.size(), queue);
			throw ex;
		}
	}

	private QueueMessage<Object> convert(ClaimedMessage message, Type type) {
		Object payload = this.converter.read(message.payloadJson(), type);
		return new QueueMessage<>(message.id(), message.queue(), payload, Headers.read(message.headersJson()),
				message.priority(), message.attempt(), message.maxAttempts(), message.createdAt());
	}

	private void await(Duration timeout) throws InterruptedException {
		if (this.running && this.wakeUp.tryAcquire(timeout.toMillis(), TimeUnit.MILLISECONDS)) {
			this.wakeUp.drainPermits();
		}
	}

	private void closeSession() {
		if (this.session != null) {
			try {
				this.session.close();
			}
			finally {
				this.session = null;
			}
		}
	}

	private enum Completion {

		ACK, RETRY, DEAD_LETTER,

		/** Released with its attempt given back: the handler was interrupted by the stop. */
		GIVE_BACK

	}

	/** The one completion a handler may choose for its message. */
	private static final class MessageAcknowledgment implements Acknowledgment {

		private final ClaimedMessage message;

		private Completion completion;

		private Duration delay;

		private String error;

		MessageAcknowledgment(ClaimedMessage message) {
			this.message = message;
		}

		@Override
		public void ack() {
			choose(Completion.ACK);
		}

		@Override
		public void nack(Duration delay) {
			retry(delay, null);
		}

		@Override
		public void reject(String reason) {
			deadLetter("Rejected: " + reason);
		}

		void retry(Duration delay, String error) {
			choose(Completion.RETRY);
			this.delay = delay;
			this.error = error;
		}

		void deadLetter(String reason) {
			choose(Completion.DEAD_LETTER);
			this.error = reason;
		}

		private void choose(Completion completion) {
			if (this.completion != null) {
				throw new IllegalStateException("Message " + this.message.id() + " was already completed ("
						+ this.completion.name().toLowerCase(java.util.Locale.ROOT) + ")");
			}
			this.completion = completion;
		}

	}

	private static final class Batch {

		final List<Long> acks = new ArrayList<>();

		final List<ConsumerSession.Retry> retries = new ArrayList<>();

		final List<ConsumerSession.DeadLetter> deadLetters = new ArrayList<>();

		/** Not handled (never handed over, or interrupted by the stop): released, attempt given back. */
		final List<Long> unseen = new ArrayList<>();

		void add(ClaimedMessage message, MessageAcknowledgment ack) {
			switch (ack.completion) {
				case ACK -> this.acks.add(message.id());
				case RETRY -> this.retries.add(new ConsumerSession.Retry(message.id(), ack.delay, ack.error));
				case DEAD_LETTER -> this.deadLetters.add(ConsumerSession.DeadLetter.of(message, ack.error));
				case GIVE_BACK -> this.unseen.add(message.id());
			}
		}

		int size() {
			return this.acks.size() + this.retries.size() + this.deadLetters.size() + this.unseen.size();
		}

	}

}
