package io.github.pgqueue.listener;

import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.stream.IntStream;

import com.zaxxer.hikari.HikariConfig;
import com.zaxxer.hikari.HikariDataSource;
import io.github.pgqueue.ConsumptionMode;
import io.github.pgqueue.QueueAdmin;
import io.github.pgqueue.QueueContext;
import io.github.pgqueue.QueueDefinition;
import io.github.pgqueue.QueueTemplate;
import io.github.pgqueue.RateLimit;
import io.github.pgqueue.SendOptions;
import io.github.pgqueue.testing.EmbeddedPostgres;
import io.github.pgqueue.testing.PostgresExtension;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.extension.ExtendWith;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;

import org.springframework.jdbc.core.JdbcTemplate;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

/**
 * The plans a consumer's statements get while its queue is empty, as it is when an application
 * starts, still walk indexes once a backlog arrives. The driver prepares a statement run often
 * and PostgreSQL then keeps a generic plan per connection, planned for the table as it was:
 * empty, a sequential scan is the cheapest plan for everything. Here every statement is planned
 * generically from its first run, on a schema of its own whose message table starts empty; the
 * table's scan counters, flushed when the consumers' connections end, show how the backlog was
 * read.
 */
@ExtendWith(PostgresExtension.class)
class PlanStabilityIntegrationTests {

	private static final String SCHEMA = "pgqueue_plans";

	private static final int BACKLOG = 3000;

	private static final QueueDefinition PLAIN = new QueueDefinition("plans", 5, Duration.ofMillis(1), 1.0,
			Duration.ofMillis(1), null);

	private final EmbeddedPostgres postgres = EmbeddedPostgres.get();

	private final JdbcTemplate jdbc = new JdbcTemplate(this.postgres.dataSource());

	@BeforeAll
	static void schema() {
		EmbeddedPostgres.get().migrate(SCHEMA, null);
	}

	/**
	 * Index fetches are bounded at 100 a message: a good plan fetches 20 to 30, a plan that walks
	 * the backlog for every batch of 10 about 150. The sweep that looks for visible messages once a
	 * poll interval (20 ms here) is planned on the empty table too: planned as a join, it hashed
	 * every visible message on every call. So the handler takes 2 ms a message, and the drain lasts
	 * long enough for about 300 sweeps: with that join it fetched 526 000 rows.
	 */
	@ParameterizedTest
	@EnumSource(ConsumptionMode.class)
	void statementsPlannedOnAnEmptyQueueDoNotScanTheBacklog(ConsumptionMode mode) throws InterruptedException {
		drainPlannedOnAnEmptyQueue(mode, PLAIN, List.of(SendOptions.DEFAULTS), BACKLOG, Duration.ofMillis(2), 100L * BACKLOG);
	}

	/**
	 * As above with the backlog in three FIFO groups: the claims can take only the three heads at a
	 * time, so they find them through the group index. Only sequential scans are checked: besides
	 * the heads, each claim's walk reads up to a window of rows, for messages outside the groups.
	 */
	@ParameterizedTest
	@EnumSource(ConsumptionMode.class)
	void claimsOfAFewGroupsPlannedOnAnEmptyQueueDoNotScanTheBacklog(ConsumptionMode mode) throws InterruptedException {
		List<SendOptions> groups = IntStream.range(0, 6)
			.mapToObj((part) -> SendOptions.builder().group("g" + (part % 3)).build())
			.toList();
		drainPlannedOnAnEmptyQueue(mode, PLAIN, groups, BACKLOG / groups.size(), Duration.ZERO, Long.MAX_VALUE);
	}

	/**
	 * As the first on a queue limited per key, the backlog sent to ten keys in turn: before each claim,
	 * take_key_tokens finds the keys that have visible messages, and the fair claim tests whether its
	 * cursor still stands. Planned as joins, the first hashed every visible message of the queue
	 * before every claim and the second read every entry of the queue: each made the drain fetch
	 * 350 000 rows or more, against 21 000 without. On the pool of a transactional consumer, without
	 * the consumers' planner settings, take_key_tokens scanned the table (10 million rows read).
	 */
	@ParameterizedTest
	@EnumSource(ConsumptionMode.class)
	void keyTokensPlannedOnAnEmptyQueueDoNotScanTheBacklog(ConsumptionMode mode) throws InterruptedException {
		QueueDefinition limitedPerKey = PLAIN.withConcurrencyKey("tenant", null, RateLimit.perSecond(100_000));
		List<SendOptions> keys = IntStream.range(0, 10)
			.mapToObj((key) -> SendOptions.builder().header("tenant", "t" + key).build())
			.toList();
		drainPlannedOnAnEmptyQueue(mode, limitedPerKey, keys, 1, Duration.ZERO, 100L * BACKLOG);
	}

	/**
	 * Drains a backlog of {@code definition}'s queue, sent in as many equal parts as {@code parts}
	 * has options, {@code chunk} messages of each part in turn, through consumers whose statements
	 * were planned on the empty table, each message handled in {@code handling}.
	 */
	private void drainPlannedOnAnEmptyQueue(ConsumptionMode mode, QueueDefinition definition, List<SendOptions> parts,
			int chunk, Duration handling, long maxIndexFetches) throws InterruptedException {
		this.jdbc.execute("TRUNCATE " + SCHEMA + ".message");
		this.jdbc.execute("VACUUM ANALYZE " + SCHEMA + ".message");
		// Ids, not runs: a transactional batch runs a failed handler's predecessors again after the
		// rollback that undid their writes.
		Set<Long> handled = ConcurrentHashMap.newKeySet();
		String application = "plans-" + mode.name().toLowerCase();
		Map<String, Object> before;
		try (HikariDataSource app = genericPlans(application + "-app");
				HikariDataSource consumers = genericPlans(application)) {
			QueueTemplate template = new QueueTemplate(QueueContext.builder(app).schema(SCHEMA).build());
			QueueListenerEndpointRegistry registry = new QueueListenerEndpointRegistry(template.context(), consumers,
					Duration.ofSeconds(5));
			registry.registerListenerEndpoint(QueueListenerEndpoint.builder("plans")
					.listener(Integer.class, (message, ack) -> {
						if ((Integer) message.payload() % 10 == 0 && message.attempt() == 1) {
							throw new IllegalStateException("retry me"); // the retry statement runs too
						}
						Thread.sleep(handling.toMillis());
						handled.add(message.id());
					})
					.containerProperties(ContainerProperties.builder(List.of("plans"))
						.pollInterval(Duration.ofMillis(20))
						.mode(mode)
						.build())
					.build());
			new QueueAdmin(template.context()).declare(definition);
			before = scans();
			registry.start();
			try {
				// Idle polls (every 20 ms): the claim is planned on the empty table. Then one message, failed
				// once: the retry and the ack are planned on a table of one row.
				Thread.sleep(300);
				template.send("plans", 0);
				await().atMost(Duration.ofSeconds(10)).until(() -> handled.size() == 1);
				int perPart = BACKLOG / parts.size();
				for (int offset = 0; offset < perPart; offset += chunk) {
					for (int part = 0; part < parts.size(); part++) {
						int first = 1 + part * perPart + offset;
						template.sendBatch("plans", IntStream.range(first, first + chunk).boxed().toList(),
								parts.get(part));
					}
				}
				await().atMost(Duration.ofSeconds(60)).until(() -> handled.size() == BACKLOG + 1);
			}
			finally {
				registry.stop();
			}
		}
		// The consumers' connections are closed: their counters are flushed.
		await().atMost(Duration.ofSeconds(10))
			.until(() -> this.jdbc.queryForObject("SELECT count(*) FROM pg_stat_activity WHERE application_name LIKE ?",
					Integer.class, application + "%") == 0);
		Map<String, Object> after = scans();
		assertThat(delta(before, after, "seq_tup_read")).as("rows read by sequential scans of the message table")
			.isLessThan(BACKLOG);
		assertThat(delta(before, after, "idx_tup_fetch")).as("rows fetched through indexes (a walk of the backlog for every batch "
				+ "fetches about 150 a message)").isLessThan(maxIndexFetches);
	}

	private static long delta(Map<String, Object> before, Map<String, Object> after, String counter) {
		return ((Number) after.get(counter)).longValue() - ((Number) before.get(counter)).longValue();
	}

	private Map<String, Object> scans() {
		this.jdbc.execute("SELECT pg_stat_clear_snapshot()");
		return this.jdbc.queryForMap("SELECT seq_tup_read, idx_tup_fetch FROM pg_stat_user_tables "
				+ "WHERE schemaname = ? AND relname = 'message'", SCHEMA);
	}

	/** A pool whose statements are server-prepared and planned generically from their first run. */
	private HikariDataSource genericPlans(String name) {
		HikariConfig config = new HikariConfig();
		config.setPoolName(name);
		config.setJdbcUrl(this.postgres.jdbcUrl());
		config.setUsername(this.postgres.username());
		config.setMaximumPoolSize(4);
		config.setMinimumIdle(0);
		config.addDataSourceProperty("ApplicationName", name);
		config.addDataSourceProperty("prepareThreshold", "1");
		config.addDataSourceProperty("options", "-c plan_cache_mode=force_generic_plan");
		return new HikariDataSource(config);
	}

}
