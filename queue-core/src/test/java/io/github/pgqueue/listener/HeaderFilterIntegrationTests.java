package io.github.pgqueue.listener;

import java.time.Duration;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicInteger;

import io.github.pgqueue.ConsumptionMode;
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

import static io.github.pgqueue.testing.Db.count;
import static io.github.pgqueue.testing.ListenerFixture.batchEndpoint;
import static io.github.pgqueue.testing.ListenerFixture.endpoint;
import static io.github.pgqueue.testing.ListenerFixture.properties;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatIllegalArgumentException;
import static org.awaitility.Awaitility.await;

/**
 * Listeners with header filters, in both modes: each takes only the messages its filter matches,
 * and the others stay in the queue untouched (no lock, no attempt, no write).
 */
@ExtendWith(PostgresExtension.class)
class HeaderFilterIntegrationTests {

	private final EmbeddedPostgres postgres = EmbeddedPostgres.get();

	private final JdbcTemplate jdbc = new JdbcTemplate(this.postgres.dataSource());

	@RegisterExtension
	final ListenerFixture listeners = ListenerFixture.pools("filter-app", 8, "filter-consumers", 16);

	private final QueueTemplate template = this.listeners.template();

	@ParameterizedTest
	@EnumSource(ConsumptionMode.class)
	void listenersWithDisjointFiltersEachHandleTheirMessagesExactlyOnceAndLeaveTheRestUntouched(ConsumptionMode mode) {
		String queue = "filter-" + mode.name().toLowerCase(Locale.ROOT);
		List<String> kinds = List.of("a", "b", "c", "d");
		for (int i = 0; i < 800; i++) {
			this.template.send(queue, i, SendOptions.builder().header("kind", kinds.get(i % 4)).priority(i % 3).build());
		}
		Map<Long, String> handledBy = new ConcurrentHashMap<>();
		AtomicInteger duplicates = new AtomicInteger();
		AtomicInteger wrong = new AtomicInteger();
		register(queue, "kind = 'a'", mode, List.of("a"), handledBy, duplicates, wrong);
		register(queue, "kind in ('b', 'c')", mode, List.of("b", "c"), handledBy, duplicates, wrong);
		this.listeners.registry().start();

		await().atMost(Duration.ofSeconds(60)).until(() -> handledBy.size() >= 600 && count(queue) == 200);
		assertThat(duplicates).hasValue(0);
		assertThat(wrong).hasValue(0);
		assertThat(handledBy).hasSize(600);
		assertThat(this.jdbc.queryForList("SELECT DISTINCT headers->>'kind' FROM pgqueue.message WHERE queue = ?",
				String.class, queue)).containsExactly("d");
		assertThat(this.jdbc.queryForObject("""
				SELECT count(*) FROM pgqueue.message
				 WHERE queue = ? AND (attempts <> 0 OR claim_open OR last_error IS NOT NULL OR claimed_at IS NOT NULL)""",
				Integer.class, queue)).as("rejected messages written").isZero();
		this.listeners.stop();
		assertThat(advisoryLocks()).isZero();
	}

	private void register(String queue, String filter, ConsumptionMode mode, List<String> accepted,
			Map<Long, String> handledBy, AtomicInteger duplicates, AtomicInteger wrong) {
		String id = queue + "-" + accepted.get(0);
		QueueMessageListener listener = (message, ack) -> {
			if (handledBy.putIfAbsent(message.id(), id) != null) {
				duplicates.incrementAndGet();
			}
			if (!accepted.contains(message.headers().get("kind"))) {
				wrong.incrementAndGet();
			}
		};
		this.listeners.registry().registerListenerEndpoint(endpoint(id, Integer.class, listener,
				properties(queue).concurrency(4).mode(mode).filter(filter)));
	}

	@ParameterizedTest
	@EnumSource(ConsumptionMode.class)
	void aFilteredBatchLocksOnlyTheMessagesItTakesAndRespectsPrioritiesAndGroups(ConsumptionMode mode) {
		String queue = "filter-locks-" + mode.name().toLowerCase(Locale.ROOT);
		List<Integer> order = new java.util.concurrent.CopyOnWriteArrayList<>();
		AtomicInteger mostLocks = new AtomicInteger();
		QueueBatchListener listener = (messages) -> {
			mostLocks.accumulateAndGet(advisoryLocks(), Math::max);
			messages.forEach((message) -> order.add((Integer) message.payload()));
		};
		this.listeners.start(batchEndpoint(queue, Integer.class, listener,
				properties(queue).mode(mode).filter("kind in ('x', 'y', 'z')")));
		// Claims enough for the driver and the server to switch to a generic plan, which does not
		// know the filter's size: with the filter in the lock's WHERE clause, that plan would lock first.
		for (int i = 0; i < 12; i++) {
			this.template.send(queue, 0, SendOptions.builder().header("kind", "y").build());
			int handled = i + 1;
			await().atMost(Duration.ofSeconds(10)).until(() -> order.size() == handled);
		}
		order.clear();
		mostLocks.set(0);
		// 50 rejected messages ahead of every match, in the claim index's order
		for (int i = 0; i < 50; i++) {
			this.template.send(queue, -1, SendOptions.builder().header("kind", "other").build());
		}
		// a group whose head the filter rejects: its matching second message is not the head, so not taken
		this.template.send(queue, -2, SendOptions.builder().header("kind", "other").group("g").build());
		this.template.send(queue, -3, SendOptions.builder().header("kind", "x").group("g").build());
		this.jdbc.update("""
				INSERT INTO pgqueue.message (queue, payload, headers, priority)
				VALUES (?, '3', '{"kind": "x"}', 2), (?, '1', '{"kind": "z"}', 0), (?, '2', '{"kind": "x"}', 1)""",
				queue, queue, queue);
		// The handler records the batch before its acknowledgement commits.
		await().atMost(Duration.ofSeconds(30)).until(() -> order.size() >= 3 && count(queue) <= 52);
		assertThat(order).containsExactly(1, 2, 3);
		assertThat(mostLocks.get()).as("advisory locks while the batch ran").isEqualTo(3);
		assertThat(count(queue)).isEqualTo(52);
		this.listeners.stop();
		assertThat(this.jdbc.queryForObject(
				"SELECT count(*) FROM pgqueue.message WHERE queue = ? AND (attempts <> 0 OR claim_open)", Integer.class,
				queue)).isZero();
		assertThat(advisoryLocks()).isZero();
	}

	@Test
	void anInvalidFilterFailsTheEndpointNamingFilterAndListener() {
		assertThatIllegalArgumentException()
			.isThrownBy(() -> QueueListenerEndpoint.builder("mailer")
					.listener(Integer.class, (message, ack) -> {
					})
					.containerProperties(ContainerProperties.builder(List.of("emails"))
						.pollInterval(Duration.ofSeconds(1))
						.filter("type == 'a'")
						.build())
					.build())
			.withMessage("filter 'type == 'a'' of listener 'mailer': expected a value: a string in single quotes "
					+ "or a number at position 7");
	}

	private int advisoryLocks() {
		return this.jdbc.queryForObject("SELECT count(*) FROM pg_locks WHERE locktype = 'advisory' AND objsubid = 2",
				Integer.class);
	}

}
