package io.github.pgqueue.annotation;

import java.time.Duration;
import java.util.Set;
import java.util.function.Supplier;

/**
 * What {@link QueueListener} methods get when the annotation leaves a setting out, and which
 * queues they may consume.
 * @param concurrency poller threads per listener
 * @param batchSize messages claimed per statement
 * @param pollInterval the longest an idle poller waits without a notification
 * @param knownQueues the queues listeners may name, read once at startup
 */
public record QueueListenerDefaults(int concurrency, int batchSize, Duration pollInterval,
		Supplier<Set<String>> knownQueues) {
}
