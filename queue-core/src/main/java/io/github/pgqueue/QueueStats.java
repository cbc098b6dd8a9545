package io.github.pgqueue;

import java.time.Duration;

/**
 * A snapshot of one queue.
 * @param queue the queue
 * @param ready visible messages no consumer holds
 * @param scheduled messages delayed or backing off
 * @param inFlight messages a consumer holds right now
 * @param deadLettered messages in the queue's dead-letter queue
 * @param oldestReadyAge how long the oldest ready message has existed, zero if none
 */
public record QueueStats(String queue, long ready, long scheduled, long inFlight, long deadLettered,
		Duration oldestReadyAge) {
}
