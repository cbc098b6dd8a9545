package io.github.pgqueue.observation;

import io.micrometer.observation.Observation;
import io.micrometer.observation.ObservationConvention;

/**
 * The names and tags of the {@code pgqueue.process} observation; implement it (or extend
 * {@link DefaultQueueProcessObservationConvention}) to change them.
 */
public interface QueueProcessObservationConvention extends ObservationConvention<QueueProcessObservationContext> {

	@Override
	default boolean supportsContext(Observation.Context context) {
		return context instanceof QueueProcessObservationContext;
	}

	@Override
	default String getName() {
		return QueueObservation.PROCESS.getName();
	}

}
