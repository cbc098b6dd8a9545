package io.github.pgqueue.listener;

import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.stream.IntStream;

import io.github.pgqueue.ConsumptionMode;
import io.github.pgqueue.SendOptions;
import io.github.pgqueue.testing.EmbeddedPostgres;
import io.github.pgqueue.testing.ListenerFixture;
import io.github.pgqueue.testing.PostgresExtension;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;
import org.junit.jupiter.api.extension.ExtendWith;
import org.junit.jupiter.api.extension.RegisterExtension;

import org.springframework.jdbc.core.JdbcTemplate;

import static io.github.pgqueue.testing.ListenerFixture.properties;
import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

/**
 * Fair claims: in a queue whose definition names a concurrency key, one key's backlog does not
 * hold back another key's messages.
 */
@ExtendWith(PostgresExtension.class)
class FairClaimIntegrationTests {

	@RegisterExtension
	final ListenerFixture listeners = ListenerFixture.consumers("fair-consumers", 4);

	private final JdbcTemplate jdbc = new JdbcTemplate(EmbeddedPostgres.get().dataSource());

	/**
	 * Tenant a sends 3 000 messages, which two pollers handle at about a millisecond each; then
	 * tenant b sends 20, one every 25 ms. Each of b's messages is handled within a few claims of
	 * its send, long before a's backlog is drained; claimed in arrival order they would all wait
	 * behind it (the test fails with the queue's concurrency key removed).
	 */
	@ParameterizedTest
	@EnumSource(ConsumptionMode.class)
	void aKeysBacklogDoesNotHoldBackAnotherKey(ConsumptionMode mode) throws InterruptedException {
		this.jdbc.update("INSERT INTO pgqueue.queue (name, concurrency_key) VALUES ('tenants', 'tenant')");
		int backlog = 3000;
		this.listeners.template().sendBatch("tenants", IntStream.range(0, backlog).boxed().toList(),
				SendOptions.builder().header("tenant", "a").build());
		Map<Integer, Long> sentAt = new ConcurrentHashMap<>();
		Map<Integer, Long> waits = new ConcurrentHashMap<>();
		AtomicInteger handledA = new AtomicInteger();
		this.listeners.start(ListenerFixture.endpoint("tenants", Integer.class, (message, ack) -> {
			int n = (Integer) message.payload();
			if (n >= backlog) {
				waits.put(n, System.nanoTime() - sentAt.get(n));
			}
			else {
				handledA.incrementAndGet();
				Thread.sleep(1);
			}
		}, properties("tenants").concurrency(2).batchSize(10).mode(mode)));
		await().atMost(Duration.ofSeconds(10)).until(() -> handledA.get() > 100);
		for (int i = 0; i < 20; i++) {
			int n = backlog + i;
			sentAt.put(n, System.nanoTime());
			this.listeners.template().send("tenants", n, SendOptions.builder().header("tenant", "b").build());
			Thread.sleep(25);
		}
		await().atMost(Duration.ofSeconds(30)).until(() -> waits.size() == 20);
		int aWhenBDone = handledA.get();

		// How long b waited is the benchmark's to measure (noisy-neighbour); on a loaded machine it
		// varies tenfold. What fairness guarantees is the order: b is not served after a's backlog.
		List<Long> millis = waits.values().stream().map((nanos) -> nanos / 1_000_000).sorted().toList();
		assertThat(aWhenBDone).as("a's backlog was still draining when b's messages were all handled (b's waits, "
				+ "ms: %s)", millis).isLessThan(backlog);
	}


	/**
	 * A queue with at most two messages of a key in flight: four pollers handle two keys' messages,
	 * and no more than two handlers of one key ever run at once (without the limit, up to four do:
	 * the test fails with max_in_flight_per_key left null).
	 */
	@ParameterizedTest
	@EnumSource(ConsumptionMode.class)
	void atMostTheLimitOfAKeyIsInFlight(ConsumptionMode mode) {
		this.jdbc.update("INSERT INTO pgqueue.queue (name, concurrency_key, max_in_flight_per_key) "
				+ "VALUES ('limited', 'tenant', 2)");
		for (String tenant : List.of("a", "b")) {
			this.listeners.template().sendBatch("limited", IntStream.range(0, 200).boxed().toList(),
					SendOptions.builder().header("tenant", tenant).build());
		}
		Map<String, AtomicInteger> running = new ConcurrentHashMap<>();
		Map<String, AtomicInteger> most = new ConcurrentHashMap<>();
		AtomicInteger handled = new AtomicInteger();
		this.listeners.start(ListenerFixture.endpoint("limited", Integer.class, (message, ack) -> {
			String tenant = message.headers().get("tenant");
			int now = running.computeIfAbsent(tenant, (t) -> new AtomicInteger()).incrementAndGet();
			most.computeIfAbsent(tenant, (t) -> new AtomicInteger()).accumulateAndGet(now, Math::max);
			try {
				Thread.sleep(2);
			}
			finally {
				running.get(tenant).decrementAndGet();
				handled.incrementAndGet();
			}
		}, properties("limited").concurrency(4).batchSize(10).mode(mode)));
		await().atMost(Duration.ofSeconds(60)).until(() -> handled.get() >= 400);

		assertThat(most).hasSize(2);
		most.forEach((tenant, count) -> assertThat(count.get()).as("handlers of %s at once", tenant).isLessThanOrEqualTo(2));
	}


	/** Every sending statement copies the key's header into the message's key when its queue names one. */
	@Test
	void sendsPublishesAndDeduplicatedSendsCopyTheKey() {
		this.jdbc.update("INSERT INTO pgqueue.queue (name, concurrency_key) VALUES ('keyed', 'tenant')");
		this.listeners.admin().declare(new io.github.pgqueue.ExchangeDefinition("keyed-ex",
				io.github.pgqueue.ExchangeDefinition.Type.FANOUT,
				List.of(new io.github.pgqueue.ExchangeDefinition.Binding("keyed", null))));
		SendOptions acme = SendOptions.builder().header("tenant", "acme").build();
		this.listeners.template().send("keyed", 1, acme);
		this.listeners.template().send("keyed", 2, SendOptions.builder().header("tenant", "acme").deduplicationKey("d").build());
		this.listeners.template().publish("keyed-ex", "", 3, acme);
		this.listeners.template().sendBatch("keyed", List.of(4, 5), acme);
		this.listeners.template().sendBatch("keyed", List.of(6, 7),
				SendOptions.builder().header("tenant", "acme").group("g").build());
		this.listeners.template().send("keyed", 8);
		this.listeners.template().send("other", 9, acme);
		assertThat(this.jdbc.queryForList("SELECT COALESCE(concurrency_key, '-') FROM pgqueue.message ORDER BY id",
				String.class)).containsExactly("acme", "acme", "acme", "acme", "acme", "acme", "acme", "-", "-");
	}

}
