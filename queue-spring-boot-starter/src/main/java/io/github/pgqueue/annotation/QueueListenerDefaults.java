package io.github.pgqueue.annotation;

import java.time.Duration;
import java.util.Map;
import java.util.Set;
import java.util.function.Supplier;

import io.github.pgqueue.ConsumptionMode;
import io.github.pgqueue.listener.ContainerProperties;

/**
 * What {@link QueueListener} methods get when the annotation leaves a setting out, and which
 * queues they may consume.
 * @param concurrency poller threads per listener
 * @param batchSize messages claimed per statement
 * @param pollInterval the longest an idle poller waits without a notification
 * @param knownQueues the queues listeners started with the application may name, read when they register
 * @param queues how each configured queue is consumed; a queue not in it is consumed in session
 * mode with the default transaction timeout
 * @param observationEnabled whether listeners observe each handler call as {@code pgqueue.process}
 */
public record QueueListenerDefaults(int concurrency, int batchSize, Duration pollInterval,
		Supplier<Set<String>> knownQueues, Map<String, Consumption> queues, boolean observationEnabled) {

	/** Defaults without observation. */
	public QueueListenerDefaults(int concurrency, int batchSize, Duration pollInterval, Supplier<Set<String>> knownQueues,
			Map<String, Consumption> queues) {
		this(concurrency, batchSize, pollInterval, knownQueues, queues, false);
	}

	/** How listeners consume one queue unless the annotation says otherwise. */
	public record Consumption(ConsumptionMode mode, Duration transactionTimeout) {

		/** Session mode with the default transaction timeout. */
		public static final Consumption DEFAULT = new Consumption(ConsumptionMode.SESSION,
				ContainerProperties.DEFAULT_TRANSACTION_TIMEOUT);

	}

	/** How listeners consume {@code queue}, as configured. */
	public Consumption consumptionOf(String queue) {
		return this.queues.getOrDefault(queue, Consumption.DEFAULT);
	}

}
