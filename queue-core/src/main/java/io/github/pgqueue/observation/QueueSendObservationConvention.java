package io.github.pgqueue.observation;

import io.micrometer.observation.Observation;
import io.micrometer.observation.ObservationConvention;

/**
 * The names and tags of the {@code pgqueue.send} observation; implement it (or extend
 * {@link DefaultQueueSendObservationConvention}) to change them.
 */
public interface QueueSendObservationConvention extends ObservationConvention<QueueSendObservationContext> {

	@Override
	default boolean supportsContext(Observation.Context context) {
		return context instanceof QueueSendObservationContext;
	}

	@Override
	default String getName() {
		return QueueObservation.SEND.getName();
	}

}
