package io.github.pgqueue.observation;

import java.util.Locale;

import io.github.pgqueue.observation.QueueObservation.SendHighCardinalityTags;
import io.github.pgqueue.observation.QueueObservation.SendLowCardinalityTags;
import io.micrometer.common.KeyValues;

/**
 * The default {@link QueueSendObservationConvention}: tags {@code queue} and {@code exchange}
 * (either is {@code none} when the operation has no such destination) and {@code operation};
 * the routing key of a publish as a high-cardinality tag; the contextual (span) name
 * {@code "<queue or exchange> send"}.
 */
public class DefaultQueueSendObservationConvention implements QueueSendObservationConvention {

	/** A shared instance. */
	public static final DefaultQueueSendObservationConvention INSTANCE = new DefaultQueueSendObservationConvention();

	static final String NONE = "none";

	@Override
	public KeyValues getLowCardinalityKeyValues(QueueSendObservationContext context) {
		return KeyValues.of(
				SendLowCardinalityTags.QUEUE.withValue((context.getQueue() != null) ? context.getQueue() : NONE),
				SendLowCardinalityTags.EXCHANGE
					.withValue((context.getExchange() != null) ? context.getExchange() : NONE),
				SendLowCardinalityTags.OPERATION
					.withValue(context.getOperation().name().toLowerCase(Locale.ROOT)));
	}

	@Override
	public KeyValues getHighCardinalityKeyValues(QueueSendObservationContext context) {
		return (context.getRoutingKey() != null)
				? KeyValues.of(SendHighCardinalityTags.ROUTING_KEY.withValue(context.getRoutingKey()))
				: KeyValues.empty();
	}

	@Override
	public String getContextualName(QueueSendObservationContext context) {
		return context.getDestination() + " send";
	}

}
