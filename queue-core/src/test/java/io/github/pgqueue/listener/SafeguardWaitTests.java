package io.github.pgqueue.listener;

import java.time.Duration;
import java.util.LongSummaryStatistics;
import java.util.stream.IntStream;

import org.junit.jupiter.api.Test;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * The safeguard wait of an idle poller whose queues are watched: sixty poll intervals on average,
 * drawn anew each time within a fifth of that either way, so that listeners that went idle together
 * do not keep polling together.
 */
class SafeguardWaitTests {

	@Test
	void waitsAreSpreadOverAFifthOfSixtyPollIntervalsEitherWay() {
		LongSummaryStatistics waits = IntStream.range(0, 10_000)
			.mapToLong((i) -> PollLoop.safeguardWait(Duration.ofSeconds(1)).toMillis())
			.summaryStatistics();

		assertThat(waits.getMin()).isGreaterThanOrEqualTo(48_000);
		assertThat(waits.getMax()).isLessThanOrEqualTo(72_000);
		// Spread over the range: ten thousand draws leave no tenth of it at either end empty.
		assertThat(waits.getMin()).isLessThan(50_400);
		assertThat(waits.getMax()).isGreaterThan(69_600);
		assertThat(waits.getAverage()).isBetween(59_000.0, 61_000.0);
	}

}
