package io.github.pgqueue.listener;

import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.stream.IntStream;

import io.github.pgqueue.ConsumptionMode;
import io.github.pgqueue.QueueAdmin;
import io.github.pgqueue.QueueContext;
import io.github.pgqueue.QueueDefinition;
import io.github.pgqueue.QueueTemplate;
import io.github.pgqueue.RateLimit;
import io.github.pgqueue.testing.ListenerFixture;
import io.github.pgqueue.testing.PostgresExtension;
import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;

import static io.github.pgqueue.testing.Db.count;
import static io.github.pgqueue.testing.Db.queryForLong;
import static io.github.pgqueue.testing.ListenerFixture.endpoint;
import static io.github.pgqueue.testing.ListenerFixture.properties;
import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

/**
 * Listeners of a rate-limited queue, in both modes: however many pollers of however many
 * listeners take from the queue, they hand out at most the limit (plus one burst) over a window,
 * and close to it; the messages held back are not claimed, so their attempts are not counted; a
 * limit removed applies at the pollers' next claim.
 */
@ExtendWith(PostgresExtension.class)
class RateLimitIntegrationTests {

	private static final int RATE = 40;

	private final SimpleMeterRegistry meters = new SimpleMeterRegistry();

	@RegisterExtension
	final ListenerFixture listeners = ListenerFixture.pools("limit-app", 8, "limit-consumers", 8)
		.withTemplate((app) -> QueueTemplate.builder(QueueContext.builder(app).meterRegistry(this.meters).build())
			.build());

	@ParameterizedTest
	@EnumSource(ConsumptionMode.class)
	void pollersOfTwoListenersTogetherHandleNoMoreThanTheLimit(ConsumptionMode mode) throws Exception {
		QueueAdmin admin = this.listeners.admin();
		admin.declare(QueueDefinition.of("limited").withRateLimit(RateLimit.perSecond(RATE)));
		this.listeners.template().sendBatch("limited", IntStream.range(0, 2000).boxed().toList());
		ConcurrentLinkedQueue<Long> handledAt = new ConcurrentLinkedQueue<>();
		Map<Long, Integer> attempts = new ConcurrentHashMap<>();
		QueueMessageListener listener = (message, ack) -> {
			handledAt.add(System.nanoTime());
			attempts.merge(message.id(), 1, Integer::sum);
		};
		long began = System.nanoTime();
		this.listeners.start(endpoint("limited-a", Integer.class, listener,
				properties("limited").mode(mode).concurrency(2).batchSize(10)),
				endpoint("limited-b", Integer.class, listener,
						properties("limited").mode(mode).concurrency(2).batchSize(25)));
		Thread.sleep(5000);
		this.listeners.stop();
		double seconds = (System.nanoTime() - began) / 1e9;

		int handled = handledAt.size();
		assertThat((double) handled).as("handled in %.1f s at %d/s (burst %d)", seconds, RATE, RATE)
			.isLessThanOrEqualTo(RATE * seconds * 1.05 + RATE)
			.isGreaterThan(RATE * seconds * 0.7);
		// No second of the run handled more than a second's worth and a burst.
		long[] perSecond = new long[(int) Math.ceil(seconds) + 1];
		handledAt.forEach((at) -> perSecond[(int) ((at - began) / 1_000_000_000L)]++);
		assertThat(java.util.Arrays.stream(perSecond).max().orElseThrow()).as("the busiest second")
			.isLessThanOrEqualTo(2L * RATE);
		assertThat(attempts.values()).as("each handled once").containsOnly(1);
		assertThat(count("limited")).isEqualTo(2000 - handled);
		assertThat(queryForLong("SELECT count(*) FROM pgqueue.message WHERE queue = 'limited' AND attempts > 0"))
			.as("messages held back by the limit were never claimed: no attempt counted")
			.isZero();
		assertThat(this.meters.get("pgqueue.rate.limit.waits").tag("queue", "limited").counter().count())
			.as("pollers waited for tokens").isPositive();
		QueueAdmin.RateLimitState state = admin.rateLimits().get(0);
		assertThat(state.waiting()).as("the backlog waits for the limit").isGreaterThan(2000 - handled - RATE - 1);
	}

	/**
	 * A queue limited per key: two keys with a backlog each are handed out each at its own limit
	 * (together twice the limit), neither held back by the other, and the messages without a key
	 * are not held to it.
	 */
	@ParameterizedTest
	@EnumSource(ConsumptionMode.class)
	void pollersHandleEachKeyAtNoMoreThanItsOwnLimit(ConsumptionMode mode) throws Exception {
		int rate = 20;
		QueueAdmin admin = this.listeners.admin();
		admin.declare(QueueDefinition.of("paced").withConcurrencyKey("tenant", null, RateLimit.perSecond(rate)));
		for (String tenant : List.of("a", "b")) {
			this.listeners.template().sendBatch("paced", IntStream.range(0, 500).boxed().toList(),
					io.github.pgqueue.SendOptions.builder().header("tenant", tenant).build());
		}
		this.listeners.template().sendBatch("paced", IntStream.range(0, 30).boxed().toList());
		Map<String, ConcurrentLinkedQueue<Long>> handledAt = new ConcurrentHashMap<>();
		Map<Long, Integer> attempts = new ConcurrentHashMap<>();
		QueueMessageListener listener = (message, ack) -> {
			String tenant = message.header("tenant");
			handledAt.computeIfAbsent((tenant != null) ? tenant : "", (k) -> new ConcurrentLinkedQueue<>())
				.add(System.nanoTime());
			attempts.merge(message.id(), 1, Integer::sum);
		};
		long began = System.nanoTime();
		this.listeners.start(endpoint("paced-a", Integer.class, listener,
				properties("paced").mode(mode).concurrency(2).batchSize(10)),
				endpoint("paced-b", Integer.class, listener,
						properties("paced").mode(mode).concurrency(2).batchSize(25)));
		Thread.sleep(4000);
		this.listeners.stop();
		double seconds = (System.nanoTime() - began) / 1e9;

		for (String tenant : List.of("a", "b")) {
			int handled = handledAt.getOrDefault(tenant, new ConcurrentLinkedQueue<>()).size();
			assertThat((double) handled).as("key %s handled in %.1f s at %d/s (burst %d)", tenant, seconds, rate, rate)
				.isLessThanOrEqualTo(rate * seconds * 1.05 + rate)
				.isGreaterThan(rate * seconds * 0.6);
		}
		assertThat(handledAt.get("")).as("the messages without a key are not held to it").hasSize(30);
		assertThat(attempts.values()).as("each handled once").containsOnly(1);
		assertThat(queryForLong("SELECT count(*) FROM pgqueue.message WHERE queue = 'paced' AND attempts > 0"))
			.as("messages held back by the limit were never claimed: no attempt counted")
			.isZero();
		assertThat(count("paced")).isEqualTo(1030 - attempts.size());
	}

	@Test
	void aLimitRemovedAppliesAtThePollersNextClaim() {
		QueueAdmin admin = this.listeners.admin();
		admin.declare(QueueDefinition.of("freed").withRateLimit(RateLimit.perMinute(60)));
		this.listeners.template().sendBatch("freed", IntStream.range(0, 300).boxed().toList());
		this.listeners.start(endpoint("freed", Integer.class, (message, ack) -> {
		}, properties("freed").concurrency(2).batchSize(10)));
		await().atMost(Duration.ofSeconds(10)).until(() -> count("freed") < 300);
		assertThat(count("freed")).as("one message a second").isGreaterThan(290);

		admin.declare(QueueDefinition.of("freed"));
		await().atMost(Duration.ofSeconds(10)).until(() -> count("freed") == 0);
	}

	/**
	 * A limit per key removed while its pollers run applies at their next claim: the backlog of the
	 * key drains at once (a poller must not go on claiming with empty grants, which take no keyed
	 * message).
	 */
	@ParameterizedTest
	@EnumSource(ConsumptionMode.class)
	void aLimitPerKeyRemovedAppliesAtThePollersNextClaim(ConsumptionMode mode) {
		QueueAdmin admin = this.listeners.admin();
		admin.declare(QueueDefinition.of("freed-keys").withConcurrencyKey("tenant", null, RateLimit.perMinute(60)));
		this.listeners.template().sendBatch("freed-keys", IntStream.range(0, 300).boxed().toList(),
				io.github.pgqueue.SendOptions.builder().header("tenant", "a").build());
		this.listeners.start(endpoint("freed-keys", Integer.class, (message, ack) -> {
		}, properties("freed-keys").mode(mode).concurrency(2).batchSize(10)));
		await().atMost(Duration.ofSeconds(10)).until(() -> count("freed-keys") < 300);
		assertThat(count("freed-keys")).as("one message a second").isGreaterThan(290);

		admin.declare(QueueDefinition.of("freed-keys").withConcurrencyKey("tenant"));
		await().atMost(Duration.ofSeconds(10)).until(() -> count("freed-keys") == 0);
	}

	@Test
	void aQueueWithoutALimitTakesNoTokens() {
		this.listeners.admin().declare(QueueDefinition.of("free"));
		this.listeners.template().sendBatch("free", List.of(1, 2, 3));
		this.listeners.start(endpoint("free", Integer.class, (message, ack) -> {
		}, properties("free")));
		await().atMost(Duration.ofSeconds(10)).until(() -> count("free") == 0);
		assertThat(queryForLong("SELECT count(*) FROM pgqueue.rate_bucket")).isZero();
		assertThat(this.meters.find("pgqueue.rate.limit.waits").counters()).isEmpty();
	}

}
