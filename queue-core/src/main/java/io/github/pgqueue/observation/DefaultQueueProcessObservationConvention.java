package io.github.pgqueue.observation;

import java.util.Locale;

import io.github.pgqueue.observation.QueueObservation.ProcessHighCardinalityTags;
import io.github.pgqueue.observation.QueueObservation.ProcessLowCardinalityTags;
import io.micrometer.common.KeyValues;

/**
 * The default {@link QueueProcessObservationConvention}: tags {@code queue}, {@code listener.id}
 * and {@code outcome} ({@code success}, {@code retry}, {@code dead}, {@code released}); the
 * message id and attempt as high-cardinality tags, or for a batch listener's call its
 * {@code batch.size}; the contextual (span) name {@code "<queue> process"}. An exception of the
 * handler is the observation's error.
 */
public class DefaultQueueProcessObservationConvention implements QueueProcessObservationConvention {

	/** A shared instance. */
	public static final DefaultQueueProcessObservationConvention INSTANCE = new DefaultQueueProcessObservationConvention();

	@Override
	public KeyValues getLowCardinalityKeyValues(QueueProcessObservationContext context) {
		String outcome = (context.getOutcome() != null) ? context.getOutcome().name().toLowerCase(Locale.ROOT)
				: DefaultQueueSendObservationConvention.NONE;
		return KeyValues.of(ProcessLowCardinalityTags.QUEUE.withValue(context.getQueue()),
				ProcessLowCardinalityTags.LISTENER_ID.withValue(context.getListenerId()),
				ProcessLowCardinalityTags.OUTCOME.withValue(outcome));
	}

	@Override
	public KeyValues getHighCardinalityKeyValues(QueueProcessObservationContext context) {
		if (context instanceof QueueBatchProcessObservationContext batch) {
			return KeyValues
				.of(ProcessHighCardinalityTags.BATCH_SIZE.withValue(Integer.toString(batch.getBatchSize())));
		}
		return KeyValues.of(ProcessHighCardinalityTags.MESSAGE_ID.withValue(Long.toString(context.getMessageId())),
				ProcessHighCardinalityTags.ATTEMPT.withValue(Integer.toString(context.getAttempt())));
	}

	@Override
	public String getContextualName(QueueProcessObservationContext context) {
		return context.getQueue() + " process";
	}

}
