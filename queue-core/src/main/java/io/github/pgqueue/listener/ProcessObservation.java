package io.github.pgqueue.listener;

import java.util.Map;
import java.util.function.Function;

import io.github.pgqueue.PayloadConversionException;
import io.github.pgqueue.internal.ClaimedMessage;
import io.github.pgqueue.internal.Headers;
import io.github.pgqueue.observation.DefaultQueueProcessObservationConvention;
import io.github.pgqueue.observation.QueueObservation;
import io.github.pgqueue.observation.QueueProcessObservationContext.Outcome;
import io.github.pgqueue.observation.QueueProcessObservationContext;
import io.github.pgqueue.observation.QueueProcessObservationConvention;
import io.micrometer.observation.Observation;
import io.micrometer.observation.ObservationRegistry;

/**
 * Runs one delivery inside a {@code pgqueue.process} observation, opened as the current one so
 * that the handler's logs and sends belong to it; the message's headers are the carrier a
 * propagating tracing handler reads the sender's trace context from.
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
		Observation observation = QueueObservation.PROCESS
			.observation(this.convention, DefaultQueueProcessObservationConvention.INSTANCE, () -> context,
					this.registry)
			.start();
		try {
			Dispatcher.Delivery delivery;
			try (Observation.Scope scope = observation.openScope()) {
				delivery = deliver.apply(message);
			}
			if (delivery.failure != null) {
				observation.error(delivery.failure);
			}
			context.setOutcome(outcome(delivery.completion));
			return delivery;
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
			return Headers.read(message.headersJson());
		}
		catch (PayloadConversionException ex) {
			return Map.of();
		}
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
