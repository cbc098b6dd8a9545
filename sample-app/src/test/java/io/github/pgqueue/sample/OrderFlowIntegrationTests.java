package io.github.pgqueue.sample;

import java.math.BigDecimal;
import java.time.Duration;

import io.github.pgqueue.test.EmbeddedPgQueue;
import io.github.pgqueue.test.QueueTestSupport;
import org.junit.jupiter.api.Test;

import org.springframework.beans.factory.annotation.Autowired;
import org.springframework.boot.test.context.SpringBootTest;

import static org.assertj.core.api.Assertions.assertThat;

/** An order's way through the exchange, the billing and email listeners and the dead-letter queue. */
@SpringBootTest(properties = { "sample.traffic-enabled=false", "sample.email-failure-rate=0",
		"pgqueue.queues.emails.backoff.initial=10ms", "pgqueue.queues.emails.backoff.max=50ms" })
@EmbeddedPgQueue
class OrderFlowIntegrationTests {

	private static final Duration TIMEOUT = Duration.ofSeconds(30);

	@Autowired
	private OrderService orders;

	@Autowired
	private QueueTestSupport queues;

	@Test
	void ordersAreBilledAndEmailedAndOneToABouncingAddressIsDeadLetteredWithItsError() {
		this.orders.place(new Order("ok-1", "tea", 2, new BigDecimal("9.50"), "ok@example.com"));
		this.orders.place(new Order("bounce-1", "mug", 1, new BigDecimal("4.00"), "nobody@bounce.example"));

		this.queues.awaitDrained("billing", TIMEOUT);
		this.queues.awaitDrained("emails", TIMEOUT);

		assertThat(this.queues.deadLetters("billing", Order.class)).isEmpty();
		assertThat(this.queues.deadLetters("emails", Order.class)).singleElement().satisfies((dead) -> {
			assertThat(dead.payload().id()).isEqualTo("bounce-1");
			assertThat(dead.header("order-id")).isEqualTo("bounce-1");
			assertThat(dead.header("pgqueue-dead-lettered-attempts")).isEqualTo("3");
			assertThat(dead.lastError()).contains("mailbox nobody@bounce.example does not exist");
		});
	}

}
