package io.github.pgqueue.listener;

import java.time.Duration;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import java.util.function.BooleanSupplier;

import io.github.pgqueue.AckMode;
import io.github.pgqueue.Acknowledgment;
import io.github.pgqueue.ConsumptionMode;
import io.github.pgqueue.MessageHeaders;
import io.github.pgqueue.PayloadConversionException;
import io.github.pgqueue.PayloadConverter;
import io.github.pgqueue.QueueMessage;
import io.github.pgqueue.internal.ClaimedMessage;
import io.micrometer.core.instrument.Timer;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Hands one claimed message to a listener and decides how it ends, the same in both modes:
 * whatever the message does (throw an {@code Error}, break its converter or the error handler) is
 * that message's failure alone, decided by the error handler (or the default policy if that one
 * fails); a payload that cannot be read is dead-lettered; a handler interrupted by the stop gives
 * its message back with its attempt.
 */
final class Dispatcher {

	private static final Logger logger = LoggerFactory.getLogger(Dispatcher.class);

	private static final DefaultQueueErrorHandler DEFAULT_ERROR_HANDLER = new DefaultQueueErrorHandler();

	private final QueueListenerEndpoint endpoint;

	private final PayloadConverter converter;

	private final BooleanSupplier running;

	/** The listener's {@code pgqueue.process} observation, or null when it is off. */
	private final ProcessObservation observation;

	Dispatcher(QueueListenerEndpoint endpoint, PayloadConverter converter, BooleanSupplier running,
			ProcessObservation observation) {
		this.endpoint = endpoint;
		this.converter = (endpoint.payloadConverter() != null) ? endpoint.payloadConverter() : converter;
		this.running = running;
		this.observation = observation;
	}

	String listenerId() {
		return this.endpoint.id();
	}

	/** Whether the listener takes each batch at once ({@link #deliverBatch}). */
	boolean isBatch() {
		return this.endpoint.isBatch();
	}

	/**
	 * Delivers {@code messages} to the batch listener at once and returns how each ends, in
	 * order; never throws. A message whose payload cannot be read is dead-lettered and left out of
	 * the list the listener gets. A {@link BatchListenerFailedException} fails the message it names;
	 * the ones after it go back without an attempt, and the ones before it are acked if
	 * {@code partialAck} (session mode), or go back too (transactional mode, where the handler's
	 * writes are rolled back). Any other exception fails every message the listener got.
	 */
	List<Delivery> deliverBatch(List<ClaimedMessage> messages, Timer timer, boolean partialAck) {
		return (this.observation != null && !messages.isEmpty())
				? this.observation.observeBatch(messages, () -> handleBatch(messages, timer, partialAck))
				: handleBatch(messages, timer, partialAck);
	}

	private List<Delivery> handleBatch(List<ClaimedMessage> messages, Timer timer, boolean partialAck) {
		List<Delivery> deliveries = new ArrayList<>(messages.size());
		List<Delivery> handed = new ArrayList<>(messages.size());
		List<QueueMessage<Object>> converted = new ArrayList<>(messages.size());
		for (ClaimedMessage message : messages) {
			Delivery delivery = new Delivery(message);
			deliveries.add(delivery);
			try {
				converted.add(convert(message));
				handed.add(delivery);
			}
			catch (PayloadConversionException ex) {
				logger.warn("Listener '{}': message {} of queue '{}' cannot be converted; dead-lettering it: {}",
						this.endpoint.id(), message.id(), message.queue(), ex.getMessage());
				delivery.failure = ex;
				delivery.deadLetter(ex.getMessage());
			}
			catch (Throwable ex) {
				delivery.failure = ex;
				fail(unread(message), message, ex, delivery);
				delivery.fatal = (ex instanceof VirtualMachineError error) ? error : null;
			}
		}
		if (handed.isEmpty()) {
			return deliveries;
		}
		long started = System.nanoTime();
		try {
			this.endpoint.batchListener().onMessages(Collections.unmodifiableList(converted));
			handed.forEach((delivery) -> delivery.completion = Completion.ACK);
		}
		catch (Throwable ex) {
			handed.forEach((delivery) -> {
				delivery.thrown = true;
				delivery.failure = ex;
			});
			if (interruptedByStop(ex)) {
				logger.info("Listener '{}': batch handler was interrupted by the stop; giving its {} messages back",
						this.endpoint.id(), handed.size());
				handed.forEach((delivery) -> delivery.completion = Completion.GIVE_BACK);
			}
			else if (ex instanceof BatchListenerFailedException failed && failed.getIndex() < handed.size()) {
				int index = failed.getIndex();
				for (int i = 0; i < handed.size(); i++) {
					Delivery delivery = handed.get(i);
					if (i == index) {
						fail(converted.get(i), delivery.message, (failed.getCause() != null) ? failed.getCause() : failed,
								delivery);
					}
					else {
						delivery.completion = (i < index && partialAck) ? Completion.ACK : Completion.GIVE_BACK;
					}
				}
			}
			else {
				for (int i = 0; i < handed.size(); i++) {
					fail(converted.get(i), handed.get(i).message, ex, handed.get(i));
				}
			}
			if (ex instanceof VirtualMachineError error) {
				handed.get(0).fatal = error;
			}
		}
		finally {
			timer.record(System.nanoTime() - started, TimeUnit.NANOSECONDS);
		}
		return deliveries;
	}

	/** Delivers {@code message} and returns how it ends; never throws. */
	Delivery deliver(ClaimedMessage message, Timer timer) {
		return (this.observation != null) ? this.observation.observe(message, (claimed) -> handle(claimed, timer))
				: handle(message, timer);
	}

	private Delivery handle(ClaimedMessage message, Timer timer) {
		Delivery delivery = new Delivery(message);
		QueueMessage<Object> converted;
		try {
			converted = convert(message);
		}
		catch (PayloadConversionException ex) {
			logger.warn("Listener '{}': message {} of queue '{}' cannot be converted; dead-lettering it: {}",
					this.endpoint.id(), message.id(), message.queue(), ex.getMessage());
			delivery.failure = ex;
			delivery.deadLetter(ex.getMessage());
			return delivery;
		}
		catch (Throwable ex) {
			// Not the payload's fault as far as anyone can tell: a failed attempt, retried.
			delivery.failure = ex;
			fail(unread(message), message, ex, delivery);
			delivery.fatal = (ex instanceof VirtualMachineError error) ? error : null;
			return delivery;
		}
		long started = System.nanoTime();
		try {
			this.endpoint.listener().onMessage(converted, delivery);
			if (delivery.completion == null) {
				if (this.endpoint.containerProperties().ackMode() == AckMode.AUTO) {
					delivery.completion = Completion.ACK;
				}
				else {
					fail(converted, message, new IllegalStateException("Listener returned without calling ack(), "
							+ "nack() or reject() (ackMode = MANUAL)"), delivery);
				}
			}
		}
		catch (Throwable ex) {
			delivery.thrown = true;
			delivery.failure = ex;
			if (delivery.completion == Completion.ACK
					&& this.endpoint.containerProperties().mode() == ConsumptionMode.TRANSACTIONAL) {
				// The throw rolls the handler's writes back: its ack would delete the message with none
				// of them. A nack or a reject stands, as in session mode.
				delivery.completion = null;
			}
			if (delivery.completion == null) {
				if (interruptedByStop(ex)) {
					// The stop's doing, not the message's: it goes back with its attempt.
					logger.info("Listener '{}': handler of message {} was interrupted by the stop; giving the "
							+ "message back", this.endpoint.id(), message.id());
					delivery.completion = Completion.GIVE_BACK;
				}
				else {
					fail(converted, message, ex, delivery);
				}
			}
			if (ex instanceof VirtualMachineError error) {
				delivery.fatal = error;
			}
		}
		finally {
			timer.record(System.nanoTime() - started, TimeUnit.NANOSECONDS);
		}
		return delivery;
	}

	/**
	 * Whether a handler failed because the container interrupted it to stop: the poller was asked
	 * to stop and the thread is interrupted, or an interruption is among the causes.
	 */
	private boolean interruptedByStop(Throwable ex) {
		if (this.running.getAsBoolean()) {
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
		return new QueueMessage<>(message.id(), message.queue(), null, MessageHeaders.read(message.headersJson()),
				message.priority(), message.attempt(), message.maxAttempts(), message.createdAt());
	}

	/** Fails the attempt as the error handler says: a retry after a delay, or the dead-letter queue. */
	void fail(QueueMessage<Object> converted, ClaimedMessage message, Throwable error, Delivery delivery) {
		FailureAction action;
		try {
			action = this.endpoint.containerProperties().errorHandler().handle(converted, error, message.backoff());
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
			delivery.retry(action.retryDelay(), DefaultQueueErrorHandler.describe(error));
		}
		else {
			logger.warn("Listener '{}' failed on message {} of queue '{}' (attempt {} of {}); dead-lettering it: {}",
					this.endpoint.id(), message.id(), message.queue(), message.attempt(), message.maxAttempts(),
					action.deadLetterReason(), error);
			delivery.deadLetter(action.deadLetterReason());
		}
	}

	/** Fails {@code message} without a handler having thrown (a transaction that timed out, say). */
	Delivery failed(ClaimedMessage message, Throwable error) {
		Delivery delivery = new Delivery(message);
		fail(unread(message), message, error, delivery);
		return delivery;
	}

	private QueueMessage<Object> convert(ClaimedMessage message) {
		Map<String, String> headers = MessageHeaders.read(message.headersJson());
		Object payload = this.converter.read(message.payloadJson(), this.endpoint.payloadType(),
				headers.get(PayloadConverter.CONTENT_TYPE_HEADER));
		return new QueueMessage<>(message.id(), message.queue(), payload, headers, message.priority(),
				message.attempt(), message.maxAttempts(), message.createdAt());
	}

	/** How one delivered message ends. */
	enum Completion {

		ACK, RETRY, DEAD_LETTER,

		/** Released with its attempt given back: the handler was interrupted by the stop. */
		GIVE_BACK

	}

	/** One delivery of a message: the one completion its handler (or its failure) chose. */
	static final class Delivery implements Acknowledgment {

		final ClaimedMessage message;

		Completion completion;

		Duration delay;

		String error;

		/** Whether the handler threw: in transactional mode its writes are rolled back. */
		boolean thrown;

		/** What the handler or the conversion threw, for the observation; null if nothing. */
		Throwable failure;

		/** An error the poller rethrows once the batch is completed. */
		VirtualMachineError fatal;

		Delivery(ClaimedMessage message) {
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
						+ this.completion.name().toLowerCase(Locale.ROOT) + ")");
			}
			this.completion = completion;
		}

	}

}
