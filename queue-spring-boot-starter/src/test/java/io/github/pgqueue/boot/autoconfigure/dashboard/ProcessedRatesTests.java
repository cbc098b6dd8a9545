package io.github.pgqueue.boot.autoconfigure.dashboard;

import java.time.Clock;
import java.time.Duration;
import java.time.Instant;
import java.time.ZoneId;
import java.time.ZoneOffset;
import java.util.List;

import io.micrometer.core.instrument.MeterRegistry;
import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import org.junit.jupiter.api.Test;

import static org.assertj.core.api.Assertions.assertThat;

/** Per-minute counts from the processed counters, over one hour at most. */
class ProcessedRatesTests {

	private final MeterRegistry registry = new SimpleMeterRegistry();

	private final MutableClock clock = new MutableClock(Instant.parse("2026-01-01T10:00:10Z"));

	private final ProcessedRates rates = new ProcessedRates(this.registry, this.clock);

	@Test
	void countsEachMinuteByOutcomeOverAllQueuesAndShowsTheMinuteUnderWay() {
		count("emails", "success", 2);
		this.rates.sample();
		count("emails", "success", 3);
		count("billing", "success", 1);
		count("emails", "retry", 2);
		count("emails", "dead", 1);
		assertThat(this.rates.lastHour()).containsExactly(new ProcessedRates.Minute("2026-01-01T10:00:00Z", 4, 2, 1));

		this.clock.advance(Duration.ofMinutes(1));
		this.rates.sample();
		count("billing", "success", 5);
		assertThat(this.rates.lastHour()).containsExactly(new ProcessedRates.Minute("2026-01-01T10:00:00Z", 4, 2, 1),
				new ProcessedRates.Minute("2026-01-01T10:01:00Z", 5, 0, 0));
	}

	@Test
	void keepsTheLastHourOnly() {
		this.rates.sample();
		for (int i = 0; i < 90; i++) {
			count("emails", "success", 1);
			this.clock.advance(Duration.ofMinutes(1));
			this.rates.sample();
		}
		List<ProcessedRates.Minute> hour = this.rates.lastHour();
		assertThat(hour).hasSize(ProcessedRates.MINUTES + 1);
		assertThat(hour.get(0).start()).isEqualTo("2026-01-01T10:30:00Z");
		assertThat(hour.subList(0, ProcessedRates.MINUTES)).allSatisfy((minute) -> assertThat(minute.processed()).isOne());
	}

	private void count(String queue, String outcome, int n) {
		this.registry.counter("pgqueue.messages.processed", "queue", queue, "outcome", outcome).increment(n);
	}

	static final class MutableClock extends Clock {

		private Instant now;

		MutableClock(Instant now) {
			this.now = now;
		}

		void advance(Duration duration) {
			this.now = this.now.plus(duration);
		}

		@Override
		public ZoneId getZone() {
			return ZoneOffset.UTC;
		}

		@Override
		public Clock withZone(ZoneId zone) {
			return this;
		}

		@Override
		public Instant instant() {
			return this.now;
		}

		@Override
		public long millis() {
			return this.now.toEpochMilli();
		}

	}

}
