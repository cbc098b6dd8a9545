package io.github.pgqueue.listener;

import java.util.ArrayList;
import java.util.List;
import java.util.function.BooleanSupplier;
import java.util.function.Supplier;

import io.github.pgqueue.LeaseLostException;
import io.github.pgqueue.internal.ClaimedMessage;
import io.github.pgqueue.internal.ConsumerSession;
import io.github.pgqueue.internal.HeaderFilter;
import io.github.pgqueue.internal.ListenerMetrics.Outcome;
import io.github.pgqueue.internal.ListenerMetrics;
import io.github.pgqueue.internal.TokenBucket;
import io.github.pgqueue.listener.Dispatcher.Delivery;
import io.micrometer.core.instrument.Timer;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Session mode: a consumer session claims a batch with advisory locks (the attempt written at
 * claim), the listener handles each message outside any transaction, then the batch is completed
 * in at most four statements (ack, retry, dead-letter, release).
 */
final class SessionStrategy implements ConsumptionStrategy {

	private static final Logger logger = LoggerFactory.getLogger(SessionStrategy.class);

	private final Dispatcher dispatcher;

	private final Supplier<ConsumerSession> sessions;

	private final ListenerMetrics metrics;

	private final int batchSize;

	private final BooleanSupplier running;

	private ConsumerSession session;

	/** The listener's header filter; null when it takes every message. */
	private final HeaderFilter filter;

	private final RateLimiter limiter;

	/** Tokens of rate-limited queues, taken on the session's connection. */
	private final RateLimiter.Tokens tokens = new RateLimiter.Tokens() {

		@Override
		public TokenBucket.Grant take(String queue, int wanted) {
			return SessionStrategy.this.session.takeTokens(queue, wanted);
		}

		@Override
		public void giveBack(String queue, int unused) {
			SessionStrategy.this.session.giveBackTokens(queue, unused);
		}

		@Override
		public TokenBucket.KeyGrants takeForKeys(String queue, int wanted) {
			return SessionStrategy.this.session.takeKeyTokens(queue, wanted);
		}

	};

	SessionStrategy(Dispatcher dispatcher, Supplier<ConsumerSession> sessions, ListenerMetrics metrics,
			int batchSize, BooleanSupplier running, HeaderFilter filter, List<String> queues) {
		// Read on the session's connection at the first poll, as the claims are.
		this.limiter = new RateLimiter(() -> this.session.rateLimitedQueues(queues), metrics);
		this.filter = filter;
		this.dispatcher = dispatcher;
		this.sessions = sessions;
		this.metrics = metrics;
		this.batchSize = batchSize;
		this.running = running;
	}

	@Override
	public Polled poll(String queue, boolean mayTakeSuspects) {
		if (this.session == null) {
			this.session = this.sessions.get();
		}
		RateLimiter.Permit permit = this.limiter.take(queue, this.batchSize, this.tokens);
		if (permit.max() == 0) {
			return new Polled(0, false, true, permit.waitFor());
		}
		ConsumerSession.Claim claim = this.session.claim(queue, permit.max(), mayTakeSuspects, this.filter,
				permit.keyGrants());
		this.metrics.processed(queue, Outcome.DEAD, claim.deadLettered());
		if (!claim.messages().isEmpty()) {
			if (claim.inTurn()) {
				dispatchInTurn(queue, claim.messages());
			}
			else {
				dispatch(queue, claim.messages());
			}
		}
		// Once the batch is completed: the session holds nothing, whatever becomes of this statement.
		this.limiter.used(queue, permit, claim.messages().size() + claim.deadLettered(), this.tokens);
		if (claim.messages().isEmpty()) {
			return new Polled(0, false, claim.settled(), claim.nextVisibleIn());
		}
		return new Polled(claim.messages().size(), claim.messages().size() == permit.max(), claim.settled(),
				claim.nextVisibleIn());
	}

	/**
	 * Hands each message to the listener and completes the batch: the messages handled before a
	 * failure are acked, the ones after it are handed on or, when the poller must stop, given back
	 * with their attempt. A {@link VirtualMachineError} is rethrown (as {@link HandlerFatalError}) once
	 * the batch is completed.
	 */
	private void dispatch(String queue, List<ClaimedMessage> messages) {
		Batch batch = new Batch();
		Timer timer = this.metrics.timer(queue);
		VirtualMachineError fatal = null;
		if (this.dispatcher.isBatch()) {
			fatal = dispatchBatch(messages, batch, timer);
		}
		else {
			for (ClaimedMessage message : messages) {
				if (fatal != null || !this.running.getAsBoolean() || Thread.currentThread().isInterrupted()) {
					batch.unseen.add(message.id());
					continue;
				}
				if (batch.size() > 0 && !this.session.checkAlive()) {
					// The locks went with the session: another consumer may hold these messages now.
					logger.warn("Listener '{}' lost its database session during a batch of queue '{}'; the {} "
							+ "messages not yet handled are left to other consumers and {} handled ones will be "
							+ "delivered again", this.dispatcher.listenerId(), queue, messages.size() - batch.size(),
							batch.size());
					throw new LeaseLostException("Session of listener '" + this.dispatcher.listenerId()
							+ "' ended during a batch");
				}
				Delivery delivery = this.dispatcher.deliver(message, timer);
				batch.add(delivery);
				fatal = delivery.fatal;
			}
		}
		completeKeepingInterrupt(queue, batch);
		if (fatal != null) {
			throw new HandlerFatalError(fatal);
		}
	}

	/**
	 * Hands messages whose consumer died to the listener one at a time (a batch listener gets each
	 * alone), completing each before the next is handed over, as {@link ConsumerSession.Claim#inTurn()}
	 * requires: if this consumer dies, only the message its handler had is counted again. The rest,
	 * after a fatal error or once the poller must stop, is given back as in {@link #dispatch}.
	 */
	private void dispatchInTurn(String queue, List<ClaimedMessage> messages) {
		Timer timer = this.metrics.timer(queue);
		VirtualMachineError fatal = null;
		Batch rest = new Batch();
		for (int i = 0; i < messages.size(); i++) {
			ClaimedMessage message = messages.get(i);
			if (fatal != null || !this.running.getAsBoolean() || Thread.currentThread().isInterrupted()) {
				rest.unseen.add(message.id());
				continue;
			}
			if (i > 0 && !this.session.checkAlive()) {
				logger.warn("Listener '{}' lost its database session while handing out messages of queue '{}' whose "
						+ "consumer died; the {} not yet handed out are left to other consumers",
						this.dispatcher.listenerId(), queue, messages.size() - i);
				throw new LeaseLostException("Session of listener '" + this.dispatcher.listenerId()
						+ "' ended while it handed out messages in turn");
			}
			Delivery delivery = this.dispatcher.isBatch()
					? this.dispatcher.deliverBatch(List.of(message), timer, true).get(0)
					: this.dispatcher.deliver(message, timer);
			Batch one = new Batch();
			one.add(delivery);
			completeKeepingInterrupt(queue, one);
			fatal = delivery.fatal;
		}
		completeKeepingInterrupt(queue, rest);
		if (fatal != null) {
			throw new HandlerFatalError(fatal);
		}
	}

	/** Completes {@code batch}, its statements not cut short by an interrupt of the stop. */
	private void completeKeepingInterrupt(String queue, Batch batch) {
		boolean interrupted = Thread.interrupted();
		try {
			complete(queue, batch);
		}
		finally {
			if (interrupted) {
				Thread.currentThread().interrupt();
			}
		}
	}

	/** Hands the whole batch to a batch listener, unless the poller must stop; the fatal error, if any. */
	private VirtualMachineError dispatchBatch(List<ClaimedMessage> messages, Batch batch, Timer timer) {
		if (!this.running.getAsBoolean() || Thread.currentThread().isInterrupted()) {
			messages.forEach((message) -> batch.unseen.add(message.id()));
			return null;
		}
		VirtualMachineError fatal = null;
		for (Delivery delivery : this.dispatcher.deliverBatch(messages, timer, true)) {
			batch.add(delivery);
			fatal = (fatal != null) ? fatal : delivery.fatal;
		}
		return fatal;
	}

	private void complete(String queue, Batch batch) {
		try {
			this.session.ack(batch.acks);
			this.session.retry(batch.retries);
			this.session.deadLetter(batch.deadLetters);
			this.session.release(batch.unseen, false);
			this.metrics.processed(queue, Outcome.SUCCESS, batch.acks.size());
			this.metrics.processed(queue, Outcome.RETRY, batch.retries.size());
			this.metrics.processed(queue, Outcome.DEAD, batch.deadLetters.size());
		}
		catch (LeaseLostException ex) {
			logger.warn("Listener '{}' lost its database session before completing {} messages of queue '{}'; "
					+ "they will be delivered again", this.dispatcher.listenerId(), batch.size(), queue);
			throw ex;
		}
	}

	@Override
	public void close() {
		if (this.session != null) {
			try {
				this.session.close();
			}
			finally {
				this.session = null;
			}
		}
	}

	private static final class Batch {

		final List<Long> acks = new ArrayList<>();

		final List<ConsumerSession.Retry> retries = new ArrayList<>();

		final List<ConsumerSession.DeadLetter> deadLetters = new ArrayList<>();

		/** Not handled (never handed over, or interrupted by the stop): released, attempt given back. */
		final List<Long> unseen = new ArrayList<>();

		void add(Delivery delivery) {
			long id = delivery.message.id();
			switch (delivery.completion) {
				case ACK -> this.acks.add(id);
				case RETRY -> this.retries.add(new ConsumerSession.Retry(id, delivery.delay, delivery.error));
				case DEAD_LETTER -> this.deadLetters.add(ConsumerSession.DeadLetter.of(delivery.message, delivery.error));
				case GIVE_BACK -> this.unseen.add(id);
			}
		}

		int size() {
			return this.acks.size() + this.retries.size() + this.deadLetters.size() + this.unseen.size();
		}

	}

}
