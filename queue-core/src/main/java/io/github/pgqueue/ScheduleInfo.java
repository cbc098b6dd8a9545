package io.github.pgqueue;

import java.time.Instant;

/**
 * A schedule as the database holds it now, from {@link QueueAdmin#schedules()}.
 * @param definition what it sends, where and when
 * @param paused whether it is paused (it then sends nothing, and its ticks are not made up for)
 * @param nextFireAt the tick it sends next (while paused, the one it was at when paused)
 * @param lastFiredAt the tick of the last message it sent, null if none yet
 * @param lastSentAt when that message was sent, null if none yet
 * @param fired how many messages it has sent since it was created
 */
public record ScheduleInfo(ScheduleDefinition definition, boolean paused, Instant nextFireAt, Instant lastFiredAt,
		Instant lastSentAt, long fired) {
}
