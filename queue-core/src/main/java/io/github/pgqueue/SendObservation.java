package io.github.pgqueue;

import java.util.LinkedHashMap;
import java.util.Map;
import java.util.function.Function;

import io.github.pgqueue.observation.DefaultQueueSendObservationConvention;
import io.github.pgqueue.observation.QueueObservation;
import io.github.pgqueue.observation.QueueSendObservationContext;
import io.github.pgqueue.observation.QueueSendObservationConvention;
import io.micrometer.observation.Observation;
import io.micrometer.observation.ObservationRegistry;

/**
 * Runs a template's sends inside a {@code pgqueue.send} observation when observation is on: the
 * statement sees the headers after the observation started, with the trace context a
 * propagating handler put there.
 */
final class SendObservation {

	private final ObservationRegistry registry;

	private final boolean enabled;

	private final QueueSendObservationConvention convention;

	SendObservation(ObservationRegistry registry, boolean enabled, QueueSendObservationConvention convention) {
		this.registry = registry;
		this.enabled = enabled;
		this.convention = convention;
	}

	/**
	 * Runs {@code send} with the headers to write: {@code headers} themselves when observation
	 * is off, else a copy to which the observation's handlers may have added entries.
	 */
	<T> T observe(QueueSendObservationContext.Operation operation, String queue, String exchange, String routingKey,
			int count, Map<String, String> headers, Function<Map<String, String>, T> send) {
		if (!this.enabled || this.registry.isNoop()) {
			return send.apply(headers);
		}
		QueueSendObservationContext context = new QueueSendObservationContext(operation, queue, exchange, routingKey,
				count, new LinkedHashMap<>(headers));
		Observation observation = QueueObservation.SEND.observation(this.convention,
				DefaultQueueSendObservationConvention.INSTANCE, () -> context, this.registry);
		return observation.observe(() -> send.apply(context.getCarrier()));
	}

}
