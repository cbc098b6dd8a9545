package io.github.pgqueue;

import java.time.Duration;

import org.junit.jupiter.api.Test;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatIllegalArgumentException;

/** Reading and writing a rate limit, its rate and burst, and the errors a bad one gets. */
class RateLimitTests {

	@Test
	void readsPerSecondAndPerMinute() {
		assertThat(RateLimit.parse("100/s")).isEqualTo(RateLimit.perSecond(100)).hasToString("100/s");
		assertThat(RateLimit.parse(" 6000 / m ")).isEqualTo(new RateLimit(6000, Duration.ofMinutes(1)))
			.hasToString("6000/m");
		assertThat(RateLimit.parse("6000/m").perSecond()).isEqualTo(100.0);
	}

	@Test
	void theBurstIsOneSecondsWorthAndAtLeastOne() {
		assertThat(RateLimit.perSecond(100).burst()).isEqualTo(100);
		assertThat(RateLimit.perMinute(6000).burst()).isEqualTo(100);
		assertThat(RateLimit.perMinute(90).burst()).isEqualTo(1);
		assertThat(RateLimit.perMinute(1).burst()).isEqualTo(1);
	}

	@Test
	void aBadLimitSaysWhatIsWrong() {
		assertThatIllegalArgumentException().isThrownBy(() -> RateLimit.parse("0/s"))
			.withMessage("A rate limit must allow at least 1 message per second, was 0");
		assertThatIllegalArgumentException().isThrownBy(() -> RateLimit.parse("-3/m"))
			.withMessage("A rate limit must allow at least 1 message per minute, was -3");
		assertThatIllegalArgumentException().isThrownBy(() -> RateLimit.parse("100/x"))
			.withMessage("Rate limit '100/x' has an unknown unit 'x'; use s (per second) or m (per minute), "
					+ "such as 100/s or 6000/m");
		assertThatIllegalArgumentException().isThrownBy(() -> RateLimit.parse("fast"))
			.withMessageContaining("is not of the form <messages>/s or <messages>/m");
		assertThatIllegalArgumentException().isThrownBy(() -> RateLimit.parse(null))
			.withMessageContaining("Rate limit 'null' is not of the form");
		assertThatIllegalArgumentException().isThrownBy(() -> RateLimit.parse("99999999999/s"))
			.withMessageContaining("allows more messages than");
		assertThatIllegalArgumentException().isThrownBy(() -> new RateLimit(5, Duration.ofHours(1)))
			.withMessage("A rate limit is per second or per minute, not per PT1H");
	}

}
