package io.github.pgqueue.listener;

import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.atomic.AtomicLong;

import io.github.pgqueue.ConsumptionMode;
import io.github.pgqueue.QueueAdmin;
import io.github.pgqueue.QueueDefinition;
import io.github.pgqueue.QueueTemplate;
import io.github.pgqueue.SendOptions;
import io.github.pgqueue.testing.EmbeddedPostgres;
import io.github.pgqueue.testing.ListenerFixture;
import io.github.pgqueue.testing.PostgresExtension;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;

import org.springframework.jdbc.core.JdbcTemplate;
import org.springframework.jdbc.datasource.DataSourceTransactionManager;
import org.springframework.transaction.support.TransactionTemplate;

import static io.github.pgqueue.testing.ListenerFixture.endpoint;
import static io.github.pgqueue.testing.ListenerFixture.properties;
import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

/**
 * Delayed messages and retries reach an idle listener when they are due, not at its next poll:
 * every listener here polls once a minute, and every wait is far shorter.
 */
@ExtendWith(PostgresExtension.class)
class OnTimeDeliveryIntegrationTests {

	private static final Duration POLL_INTERVAL = Duration.ofSeconds(60);

	private final EmbeddedPostgres postgres = EmbeddedPostgres.get();

	private final JdbcTemplate jdbc = new JdbcTemplate(this.postgres.dataSource());

	@RegisterExtension
	final ListenerFixture listeners = ListenerFixture.consumers("on-time", 6);

	private final QueueTemplate template = this.listeners.template();

	private final QueueAdmin admin = this.listeners.admin();

	private final TransactionTemplate transactions = new TransactionTemplate(
			new DataSourceTransactionManager(this.listeners.app()));

	@Test
	void delayedMessageSentToAnIdleListenerArrivesWhenDueNotAtTheNextPoll() {
		List<Long> handledAt = new CopyOnWriteArrayList<>();
		listen("later", 2, (message, ack) -> handledAt.add(System.nanoTime()));
		awaitIdle();
		long sent = System.nanoTime();
		this.template.send("later", 1, SendOptions.builder().delay(Duration.ofMillis(1500)).build());
		await().atMost(Duration.ofSeconds(10)).until(() -> handledAt.size() == 1);
		Duration late = Duration.ofNanos(handledAt.get(0) - sent).minusMillis(1500);
		assertThat(late.toMillis()).as("ms after its delay").isBetween(0L, 5_000L);
	}

	@ParameterizedTest
	@EnumSource(ConsumptionMode.class)
	void delayedMessageArrivesWhenDueThoughTheClaimThatLearnedOfItFoundWork(ConsumptionMode mode) {
		String queue = "due-behind-" + mode.name().toLowerCase(java.util.Locale.ROOT);
		Map<Integer, Long> handledAt = new ConcurrentHashMap<>();
		this.listeners.start(endpoint(queue, Integer.class, (message, ack) -> handledAt.put((Integer) message.payload(),
				System.nanoTime()), properties(queue).mode(mode).pollInterval(POLL_INTERVAL)));
		awaitIdle();
		// One transaction, one notification: the claim it wakes takes the ready message and comes back
		// short, and must say when the delayed one is due, or the poller sleeps its poll interval.
		long sent = System.nanoTime();
		this.transactions.executeWithoutResult((status) -> {
			this.template.send(queue, 1, SendOptions.builder().delay(Duration.ofMillis(1500)).build());
			this.template.send(queue, 2);
		});
		await().atMost(Duration.ofSeconds(10)).until(() -> handledAt.size() == 2);
		Duration late = Duration.ofNanos(handledAt.get(1) - sent).minusMillis(1500);
		assertThat(late.toMillis()).as("ms after its delay").isBetween(0L, 5_000L);
	}

	@ParameterizedTest
	@EnumSource(ConsumptionMode.class)
	void nextMessageOfAFifoGroupFollowsItsHeadAtOnce(ConsumptionMode mode) {
		String queue = "group-follows-" + mode.name().toLowerCase(java.util.Locale.ROOT);
		List<Integer> handled = new CopyOnWriteArrayList<>();
		this.listeners.start(endpoint(queue, Integer.class, (message, ack) -> handled.add((Integer) message.payload()),
				properties(queue).mode(mode).pollInterval(POLL_INTERVAL)));
		awaitIdle();
		// The claim the send wakes can take only the group's head; the next message becomes the head
		// once that is done, and no notification says so: the poller must claim again, not sleep.
		this.template.sendBatch(queue, List.of(1, 2, 3), SendOptions.builder().group("g").build());
		await().atMost(Duration.ofSeconds(10)).until(() -> handled.size() == 3);
		assertThat(handled).containsExactly(1, 2, 3);
	}

	@Test
	void delayedMessageWrittenBeforeTheListenerWentIdleArrivesWhenDue() {
		this.jdbc.update("INSERT INTO pgqueue.message (queue, payload, visible_at) "
				+ "VALUES ('written', '1', now() + interval '2 seconds')");
		AtomicLong handledAt = new AtomicLong();
		long started = System.nanoTime();
		listen("written", 1, (message, ack) -> handledAt.set(System.nanoTime()));
		await().atMost(Duration.ofSeconds(10)).until(() -> handledAt.get() != 0);
		assertThat(Duration.ofNanos(handledAt.get() - started)).isLessThan(Duration.ofSeconds(7));
	}

	@Test
	void failingMessageIsRetriedWhenItsBackOffEndsAndReachesTheDeadLetterQueueInSeconds() {
		this.admin.declare(QueueDefinition.of("retried").withMaxAttempts(3)
			.withBackoff(Duration.ofMillis(300), 1.0, Duration.ofMillis(300)));
		List<Integer> attempts = new CopyOnWriteArrayList<>();
		listen("retried", 1, (message, ack) -> {
			attempts.add(message.attempt());
			throw new IllegalStateException("still failing");
		});
		long id = this.template.send("retried", 1);
		await().atMost(Duration.ofSeconds(10)).until(() -> "retried.dlq".equals(this.jdbc
			.queryForObject("SELECT queue FROM pgqueue.message WHERE id = ?", String.class, id)));
		assertThat(attempts).containsExactly(1, 2, 3);
	}

	private void listen(String queue, int concurrency, QueueMessageListener listener) {
		this.listeners.start(endpoint(queue, Integer.class, listener,
				properties(queue).concurrency(concurrency).pollInterval(POLL_INTERVAL)));
	}

	/** Waits until the pollers have made their first, empty claim and gone to sleep. */
	private void awaitIdle() {
		await().atMost(Duration.ofSeconds(10)).until(() -> this.listeners.registry().isListening()
				&& this.listeners.registry().getListenerContainers().stream()
					.allMatch(QueueListenerContainer::isConnected));
		await().pollDelay(Duration.ofMillis(300)).atMost(Duration.ofSeconds(1)).until(() -> true);
	}

}
