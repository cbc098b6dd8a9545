package io.github.pgqueue.listener;

import java.util.List;
import java.util.Map;
import java.util.function.Function;
import java.util.function.Supplier;

import io.github.pgqueue.MessageHeaders;
import io.github.pgqueue.PayloadConversionException;
import io.github.pgqueue.internal.ClaimedMessage;
import io.github.pgqueue.observation.DefaultQueueProcessObservationConvention;
import io.github.pgqueue.observation.QueueBatchProcessObservationContext;
import io.github.pgqueue.observation.QueueObservation;
import io.github.pgqueue.observation.QueueProcessObservationContext;
import io.github.pgqueue.observation.QueueProcessObservationContext.Outcome;
import io.github.pgqueue.observation.QueueProcessObservationConvention;
import io.micrometer.observation.Observation;
import io.micrometer.observation.ObservationRegistry;

/**
 * Runs one delivery inside a {@code pgqueue.process} observation, opened as the current one so
 * that the handler's logs and sends belong to it; the message's headers are the carrier a
 * propagating tracing handler reads the sender's trace context from. A batch listener's call is
 * one observation with no carrier: its messages come from several senders, so it starts a trace
 * of its own rather than continue one of theirs.
 */
final class ProcessObservation {

	private final ObservationRegistry registry;

	private final QueueProcessObservationConvention convention;

	private final String listenerId;

	ProcessObservation(ObservationRegistry registry, QueueProcessObservationConvention convention,
			String listenerId) {
		this.registry = registry;
		this.convention = convention;
		this.listenerId = listenerId;
	}

	/** The observation of a listener: null when it is off, so that the hot path creates nothing. */
	static ProcessObservation of(ObservationRegistry registry, QueueProcessObservationConvention convention,
			String listenerId) {
		return (registry == null || registry.isNoop()) ? null
				: new ProcessObservation(registry, convention, listenerId);
	}

	Dispatcher.Delivery observe(ClaimedMessage message, Function<ClaimedMessage, Dispatcher.Delivery> deliver) {
		QueueProcessObservationContext context = new QueueProcessObservationContext(this.listenerId, message.queue(),
				message.id(), message.attempt(), carrier(message));
		return observe(context, () -> List.of(deliver.apply(message))).get(0);
	}

	/** Observes one call of a batch listener on {@code messages}, all of one queue. */
	List<Dispatcher.Delivery> observeBatch(List<ClaimedMessage> messages,
			Supplier<List<Dispatcher.Delivery>> deliver) {
		return observe(new QueueBatchProcessObservationContext(this.listenerId, messages.get(0).queue(),
				messages.size()), deliver);
	}

	/**
	 * Runs {@code deliver} in the observation of {@code context}; its error is what the handler
	 * threw (else what a message failed on), its outcome the worst of the deliveries'.
	 */
	private List<Dispatcher.Delivery> observe(QueueProcessObservationContext context,
			Supplier<List<Dispatcher.Delivery>> deliver) {
		Observation observation = QueueObservation.PROCESS
			.observation(this.convention, DefaultQueueProcessObservationConvention.INSTANCE, () -> context,
					this.registry)
			.start();
		try {
			List<Dispatcher.Delivery> deliveries;
			try (Observation.Scope scope = observation.openScope()) {
				deliveries = deliver.get();
			}
			Throwable failure = failure(deliveries);
			if (failure != null) {
				observation.error(failure);
			}
			context.setOutcome(outcome(deliveries));
			return deliveries;
		}
		catch (RuntimeException | Error ex) {
			observation.error(ex);
			throw ex;
		}
		finally {
			observation.stop();
		}
	}

	/**
	 * The message's headers. Headers that are not a JSON object give no trace context: the
	 * delivery itself then fails on them and dead-letters the message with that error.
	 */
	private static Map<String, String> carrier(ClaimedMessage message) {
		try {
			return MessageHeaders.read(message.headersJson());
		}
		catch (PayloadConversionException ex) {
			return Map.of();
		}
	}

	private static Throwable failure(List<Dispatcher.Delivery> deliveries) {
		Throwable unread = null;
		for (Dispatcher.Delivery delivery : deliveries) {
			if (delivery.thrown && delivery.failure != null) {
				return delivery.failure;
			}
			unread = (unread != null) ? unread : delivery.failure;
		}
		return unread;
	}

	/** The worst outcome of the deliveries: dead, retry, released, success; null if none ended. */
	private static Outcome outcome(List<Dispatcher.Delivery> deliveries) {
		Outcome worst = null;
		for (Dispatcher.Delivery delivery : deliveries) {
			Outcome outcome = outcome(delivery.completion);
			if (outcome != null && (worst == null || severity(outcome) > severity(worst))) {
				worst = outcome;
			}
		}
		return worst;
	}

	private static int severity(Outcome outcome) {
		return switch (outcome) {
			case SUCCESS -> 0;
			case RELEASED -> 1;
			case RETRY -> 2;
			case DEAD -> 3;
		};
	}

	private static Outcome outcome(Dispatcher.Completion completion) {
		if (completion == null) {
			return null;
		}
		return switch (completion) {
			case ACK -> Outcome.SUCCESS;
			case RETRY -> Outcome.RETRY;
			case DEAD_LETTER -> Outcome.DEAD;
			case GIVE_BACK -> Outcome.RELEASED;
		};
	}

}
