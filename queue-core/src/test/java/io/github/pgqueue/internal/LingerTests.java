package io.github.pgqueue.internal;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;

import org.junit.jupiter.api.Test;

import static org.assertj.core.api.Assertions.assertThat;

class LingerTests {

	@Test
	void aBusyPollerLingersAfterWorkDoublingFromOneToTwoHundredFiftySixMilliseconds() {
		Linger linger = new Linger();
		assertThat(linger.next()).as("idle from the start").isNull();
		linger.workFound(Linger.BUSY_PER_SECOND);
		List<Long> waits = new ArrayList<>();
		for (Duration wait = linger.next(); wait != null; wait = linger.next()) {
			waits.add(wait.toMillis());
		}
		assertThat(waits).containsExactly(1L, 2L, 4L, 8L, 16L, 32L, 64L, 128L, 256L);
		assertThat(linger.next()).isNull();
		linger.workFound(1);
		assertThat(linger.next()).as("still busy this second").isEqualTo(Duration.ofMillis(1));
	}

	@Test
	void aQuietPollerDoesNotLinger() {
		Linger linger = new Linger();
		for (int i = 0; i < Linger.BUSY_PER_SECOND / 2; i++) {
			linger.workFound(1);
			assertThat(linger.next()).isNull();
		}
	}

}
