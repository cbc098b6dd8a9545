package io.github.pgqueue;

import java.time.Duration;

import org.junit.jupiter.api.Test;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatIllegalArgumentException;

/** A queue's definition: its concurrency key, the withers that keep the rest, and the errors a bad key gets. */
class QueueDefinitionTests {

	@Test
	void aConcurrencyKeyIsAHeaderWithOrWithoutALimitPerKey() {
		assertThat(QueueDefinition.of("orders").concurrencyKey()).isNull();
		assertThat(QueueDefinition.of("orders").withConcurrencyKey("tenant").concurrencyKey())
			.isEqualTo(new QueueDefinition.ConcurrencyKey("tenant", null));
		assertThat(QueueDefinition.of("orders").withConcurrencyKey("tenant", 2).concurrencyKey())
			.isEqualTo(new QueueDefinition.ConcurrencyKey("tenant", 2));
		assertThat(QueueDefinition.of("orders").withConcurrencyKey("tenant", 2).withoutConcurrencyKey())
			.isEqualTo(QueueDefinition.of("orders"));
	}

	@Test
	void everyWitherKeepsTheConcurrencyKeyAndTheKeyKeepsTheRest() {
		QueueDefinition keyed = QueueDefinition.of("orders").withConcurrencyKey("tenant", 3);
		QueueDefinition.ConcurrencyKey key = new QueueDefinition.ConcurrencyKey("tenant", 3);
		assertThat(keyed.withMaxAttempts(9).concurrencyKey()).isEqualTo(key);
		assertThat(keyed.withBackoff(Duration.ZERO, 1.0, Duration.ZERO).concurrencyKey()).isEqualTo(key);
		assertThat(keyed.withDeadLetterQueue("orders.parked").concurrencyKey()).isEqualTo(key);
		assertThat(keyed.withDeduplicationWindow(Duration.ofMinutes(1)).concurrencyKey()).isEqualTo(key);
		assertThat(keyed.withRetention(Duration.ofDays(1)).concurrencyKey()).isEqualTo(key);
		assertThat(keyed.withRateLimit(RateLimit.perSecond(5)).concurrencyKey()).isEqualTo(key);

		QueueDefinition full = QueueDefinition.of("orders").withMaxAttempts(9).withDeadLetterQueue("orders.parked")
			.withDeduplicationWindow(Duration.ofMinutes(1)).withRetention(Duration.ofDays(1))
			.withRateLimit(RateLimit.perSecond(5));
		assertThat(full.withConcurrencyKey("tenant", 3)).isEqualTo(new QueueDefinition("orders", 9,
				QueueDefinition.DEFAULT_BACKOFF_INITIAL, QueueDefinition.DEFAULT_BACKOFF_MULTIPLIER,
				QueueDefinition.DEFAULT_BACKOFF_MAX, "orders.parked", Duration.ofMinutes(1), Duration.ofDays(1),
				RateLimit.perSecond(5), key));
		assertThat(new QueueDefinition("orders", 9, QueueDefinition.DEFAULT_BACKOFF_INITIAL,
				QueueDefinition.DEFAULT_BACKOFF_MULTIPLIER, QueueDefinition.DEFAULT_BACKOFF_MAX, "orders.parked",
				Duration.ofMinutes(1), Duration.ofDays(1), RateLimit.perSecond(5)))
			.as("the constructor without a key").isEqualTo(full);
	}

	@Test
	void aBadHeaderIsRefusedNamingTheQueue() {
		QueueDefinition orders = QueueDefinition.of("orders");
		assertThatIllegalArgumentException().isThrownBy(() -> orders.withConcurrencyKey(null))
			.withMessage("Queue 'orders': concurrency key header must name a header, was null");
		assertThatIllegalArgumentException().isThrownBy(() -> orders.withConcurrencyKey(" \t", 2))
			.withMessage("Queue 'orders': concurrency key header must name a header, was ' \t'");
		assertThatIllegalArgumentException().isThrownBy(() -> orders.withConcurrencyKey("x".repeat(201)))
			.withMessage("Queue 'orders': concurrency key header must be at most 200 characters, was 201");
		assertThat(orders.withConcurrencyKey("x".repeat(200)).concurrencyKey().header()).hasSize(200);
		assertThatIllegalArgumentException().isThrownBy(() -> orders.withConcurrencyKey("ten\nant"))
			.withMessage("Queue 'orders': concurrency key header must not contain control characters, has U+000A");
		assertThatIllegalArgumentException().isThrownBy(() -> orders.withConcurrencyKey("tenant\u0000"))
			.withMessage("Queue 'orders': concurrency key header must not contain control characters, has U+0000");
		assertThat(orders.withConcurrencyKey("x-tenant id ü").concurrencyKey().header()).isEqualTo("x-tenant id ü");
	}

	@Test
	void aLimitBelowOneIsRefusedNamingTheQueue() {
		assertThatIllegalArgumentException().isThrownBy(() -> QueueDefinition.of("orders").withConcurrencyKey("tenant", 0))
			.withMessage("Queue 'orders': max in flight per key must be at least 1, was 0");
		assertThatIllegalArgumentException().isThrownBy(() -> new QueueDefinition("orders", 5, Duration.ZERO, 1.0,
				Duration.ZERO, null, null, null, null, new QueueDefinition.ConcurrencyKey("tenant", -1)))
			.withMessage("Queue 'orders': max in flight per key must be at least 1, was -1");
		assertThat(QueueDefinition.of("orders").withConcurrencyKey("tenant", 1).concurrencyKey().maxInFlight())
			.isEqualTo(1);
	}

}
