package io.github.pgqueue.listener;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;

import org.junit.jupiter.api.Test;

import static org.assertj.core.api.Assertions.assertThat;

class LingerTests {

	@Test
	void lingersOnlyAfterWorkDoublingFromOneToTwoHundredFiftySixMilliseconds() {
		Linger linger = new Linger();
		assertThat(linger.next()).as("idle from the start").isNull();
		linger.workFound();
		List<Long> waits = new ArrayList<>();
		for (Duration wait = linger.next(); wait != null; wait = linger.next()) {
			waits.add(wait.toMillis());
		}
		assertThat(waits).containsExactly(1L, 2L, 4L, 8L, 16L, 32L, 64L, 128L, 256L);
		assertThat(linger.next()).isNull();
		linger.next();
		linger.workFound();
		assertThat(linger.next()).isEqualTo(Duration.ofMillis(1));
	}

}
