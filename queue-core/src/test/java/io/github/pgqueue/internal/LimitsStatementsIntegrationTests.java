package io.github.pgqueue.internal;

import java.sql.Connection;
import java.sql.SQLException;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;

import com.zaxxer.hikari.HikariDataSource;
import io.github.pgqueue.ContextInternals;
import io.github.pgqueue.QueueAdmin;
import io.github.pgqueue.QueueDefinition;
import io.github.pgqueue.QueueTemplate;
import io.github.pgqueue.RateLimit;
import io.github.pgqueue.testing.Db;
import io.github.pgqueue.testing.EmbeddedPostgres;
import io.github.pgqueue.testing.PostgresExtension;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;

import org.springframework.jdbc.core.JdbcTemplate;

import static io.github.pgqueue.internal.StatementConnections.rows;
import static io.github.pgqueue.internal.StatementConnections.update;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.entry;
import static org.assertj.core.api.Assertions.tuple;
import static org.assertj.core.api.Assertions.within;

/**
 * Each statement of {@code limits.sql}, run by its name on PostgreSQL as the pollers and
 * {@code QueueAdmin} run it, and the bucket under many concurrent takers: together they are never
 * granted more than the limit allows.
 */
@ExtendWith(PostgresExtension.class)
class LimitsStatementsIntegrationTests {

	private final JdbcTemplate jdbc = Db.jdbc();

	private final QueueTemplate template = QueueTemplate.builder(EmbeddedPostgres.get().dataSource()).build();

	private final QueueAdmin admin = new QueueAdmin(this.template.context());

	private final QueueSql sql = ContextInternals.sql(this.template.context());

	private final StatementConnections connections = new StatementConnections();

	@AfterEach
	void closeConnections() throws SQLException {
		this.connections.close();
	}

	@Test
	void takeTokens() throws SQLException {
		this.admin.declare(QueueDefinition.of("take").withRateLimit(RateLimit.perSecond(20)));
		this.admin.declare(QueueDefinition.of("free"));
		Connection connection = this.connections.open();
		// The first take creates a full bucket (the burst: one second's worth) and grants a batch.
		Map<String, Object> first = take(connection, "take", 8);
		assertThat(first).containsEntry("granted", 8).containsEntry("next_in_ms", 0L);
		assertThat(bucket("take")).containsEntry("burst", 20).containsEntry("rate", 20.0);
		assertThat((double) bucket("take").get("tokens")).isEqualTo(12.0);
		// No refill up to the next take (its last refill is put an hour ahead, so that no time passes
		// for the bucket): exactly 12 - 8 tokens are left.
		freezeRefill("take");
		assertThat(take(connection, "take", 8)).containsEntry("granted", 8);
		assertThat((double) bucket("take").get("tokens")).isEqualTo(4.0);
		// 4 tokens, and again no refill (a take refills from its own time on): all or nothing, so
		// nothing; the next 8 are due in (8 - 4) / 20 s.
		freezeRefill("take");
		Map<String, Object> short_ = take(connection, "take", 8);
		assertThat(short_).containsEntry("granted", 0).containsEntry("next_in_ms", 200L);
		assertThat((double) bucket("take").get("tokens")).isEqualTo(4.0);
		// A grant never exceeds the burst, whatever is wanted.
		this.jdbc.update("UPDATE pgqueue.rate_bucket SET refilled_at = refilled_at - interval '10 seconds'");
		assertThat(take(connection, "take", 50)).containsEntry("granted", 20);
		assertThat((double) bucket("take").get("tokens")).isCloseTo(0.0, within(0.5));
		// A queue without a limit: no row, no bucket.
		assertThat(rows(connection, this.sql.takeTokens, new QueueSql.TakeTokens("free", 8))).isEmpty();
		assertThat(rows(connection, this.sql.takeTokens, new QueueSql.TakeTokens("undeclared", 8))).isEmpty();
		assertThat(Db.queryForLong("SELECT count(*) FROM pgqueue.rate_bucket WHERE queue <> 'take'")).isZero();
		// A changed limit applies at the next take; per minute, the burst is still one second's worth.
		this.admin.declare(QueueDefinition.of("take").withRateLimit(RateLimit.perMinute(600)));
		this.jdbc.update("UPDATE pgqueue.rate_bucket SET refilled_at = refilled_at - interval '10 seconds'");
		assertThat(take(connection, "take", 50)).containsEntry("granted", 10);
		assertThat(bucket("take")).containsEntry("burst", 10).containsEntry("rate", 10.0);
	}

	@Test
	void giveBackTokens() throws SQLException {
		this.admin.declare(QueueDefinition.of("back").withRateLimit(RateLimit.perSecond(10)));
		Connection connection = this.connections.open();
		assertThat(take(connection, "back", 10)).containsEntry("granted", 10);
		assertThat(update(connection, this.sql.giveBackTokens, new QueueSql.GiveBackTokens("back", 7))).isEqualTo(1);
		assertThat((double) bucket("back").get("tokens")).isCloseTo(7.0, within(0.5));
		// Never above the burst.
		update(connection, this.sql.giveBackTokens, new QueueSql.GiveBackTokens("back", 100));
		assertThat((double) bucket("back").get("tokens")).isEqualTo(10.0);
		assertThat(update(connection, this.sql.giveBackTokens, new QueueSql.GiveBackTokens("none", 1))).isZero();
	}

	@Test
	void rateLimitedQueues() throws SQLException {
		this.admin.declare(QueueDefinition.of("a").withRateLimit(RateLimit.perSecond(1)));
		this.admin.declare(QueueDefinition.of("b"));
		this.admin.declare(QueueDefinition.of("c").withRateLimit(RateLimit.perMinute(5)));
		this.admin.declare(QueueDefinition.of("e").withConcurrencyKey("tenant", null, RateLimit.perSecond(2)));
		this.admin.declare(QueueDefinition.of("f").withRateLimit(RateLimit.perSecond(9))
			.withConcurrencyKey("tenant", null, RateLimit.perSecond(2)));
		Connection connection = this.connections.open();
		assertThat(rows(connection, this.sql.rateLimitedQueues, new QueueSql.Queues(new String[] { "a", "b", "d", "e" })))
			.extracting("name", "queue_wide", "per_key")
			.containsExactlyInAnyOrder(tuple("a", true, false), tuple("e", false, true));
		assertThat(TokenBucket.limitedQueues(EmbeddedPostgres.get().dataSource(), this.sql,
				List.of("a", "b", "c", "e", "f")))
			.containsOnly(entry("a", new TokenBucket.Limited(true, false)), entry("c", new TokenBucket.Limited(true, false)),
					entry("e", new TokenBucket.Limited(false, true)), entry("f", new TokenBucket.Limited(true, true)));
	}

	@Test
	void rateLimits() throws SQLException {
		this.admin.declare(QueueDefinition.of("limited").withRateLimit(RateLimit.perMinute(6000)));
		this.admin.declare(QueueDefinition.of("slow").withRateLimit(RateLimit.perMinute(30)));
		this.admin.declare(QueueDefinition.of("free"));
		Connection connection = this.connections.open();
		take(connection, "limited", 60);
		// 40 tokens left, and no refill while the bucket's last refill is an hour ahead.
		freezeRefill("limited");
		List<Map<String, Object>> limits = rows(connection, this.sql.rateLimits, new QueueSql.None());
		assertThat(limits).extracting((row) -> row.get("name")).containsExactly("limited", "slow");
		assertThat(limits.get(0)).containsEntry("rate_limit_permits", 6000).containsEntry("rate_limit_period_ms", 60000)
			.containsEntry("burst", 100);
		assertThat((double) limits.get(0).get("tokens")).isEqualTo(40.0);
		// Never taken from: a full bucket, at least one token.
		assertThat(limits.get(1)).containsEntry("burst", 1).containsEntry("tokens", 1.0);
		// Through the admin: the ready messages beyond the tokens wait.
		for (int i = 0; i < 50; i++) {
			this.template.send("limited", Map.of("i", i));
		}
		QueueAdmin.RateLimitState state = this.admin.rateLimits().get(0);
		assertThat(state.queue()).isEqualTo("limited");
		assertThat(state.limit()).isEqualTo(RateLimit.perMinute(6000));
		assertThat(state.tokens()).isEqualTo(40.0);
		assertThat(state.waiting()).isEqualTo(10L);
		// The tokens are refilled to the moment of reading, at 100 a second: last refilled 300 ms
		// before the update, the bucket holds 40 + 30 and at most what the time since then refilled.
		long before = System.nanoTime();
		this.jdbc.update("UPDATE pgqueue.rate_bucket SET refilled_at = clock_timestamp() - interval '300 milliseconds'"
				+ " WHERE queue = 'limited'");
		double refilled = (double) rows(connection, this.sql.rateLimits, new QueueSql.None()).get(0).get("tokens");
		double seconds = (System.nanoTime() - before) / 1e9;
		assertThat(refilled).isBetween(70.0, Math.min(100.0, 70.0 + 100 * seconds));
		// Up to the burst, never beyond it.
		this.jdbc.update("UPDATE pgqueue.rate_bucket SET refilled_at = clock_timestamp() - interval '10 seconds'"
				+ " WHERE queue = 'limited'");
		assertThat(rows(connection, this.sql.rateLimits, new QueueSql.None()).get(0)).containsEntry("tokens", 100.0);
		assertThat(this.admin.list()).filteredOn((info) -> info.definition().name().equals("slow"))
			.singleElement()
			.satisfies((info) -> assertThat(info.definition().rateLimit()).hasToString("30/m"));
	}

	@Test
	void keyLimits() throws SQLException {
		this.admin.declare(QueueDefinition.of("per-key").withConcurrencyKey("tenant", 2));
		this.admin.declare(QueueDefinition.of("idle").withConcurrencyKey("tenant", 1));
		this.admin.declare(QueueDefinition.of("keyed-only").withConcurrencyKey("tenant"));
		// Keys a, b and c with 5, 2 and 0 visible messages (c's one is delayed), and two without a key:
		// only a's 3 beyond the limit of 2 wait. Keyed messages of a queue without a limit count nowhere.
		insert("per-key", "a", 5, "0 seconds");
		insert("per-key", "b", 2, "0 seconds");
		insert("per-key", "c", 1, "1 hour");
		insert("per-key", null, 2, "0 seconds");
		insert("keyed-only", "a", 4, "0 seconds");
		Connection connection = this.connections.open();
		List<Map<String, Object>> limits = rows(connection, this.sql.keyLimits, new QueueSql.None());
		assertThat(limits).extracting((row) -> row.get("name")).containsExactly("idle", "per-key");
		assertThat(limits.get(0)).containsEntry("concurrency_key", "tenant").containsEntry("max_in_flight_per_key", 1)
			.containsEntry("waiting", 0L);
		assertThat(limits.get(1)).containsEntry("concurrency_key", "tenant").containsEntry("max_in_flight_per_key", 2)
			.containsEntry("waiting", 3L);
		// A key's messages beyond the limit add up over the keys; at the limit, none wait.
		insert("per-key", "b", 3, "0 seconds");
		assertThat(rows(connection, this.sql.keyLimits, new QueueSql.None()).get(1)).containsEntry("waiting", 6L);
		this.admin.declare(QueueDefinition.of("per-key").withConcurrencyKey("tenant", 5));
		assertThat(rows(connection, this.sql.keyLimits, new QueueSql.None()).get(1)).containsEntry("waiting", 0L);
		// A rate limit per key of 3/s as well (burst 3): a (5 visible) has a full bucket, 2 wait; b (5)
		// has a bucket of 1.5 tokens, frozen, so 4 wait. Without the in-flight limit: the same.
		this.admin.declare(QueueDefinition.of("per-key").withConcurrencyKey("tenant", 5, RateLimit.perSecond(3)));
		this.jdbc.update("INSERT INTO pgqueue.key_rate_bucket (queue, key, rate, burst, tokens, refilled_at) "
				+ "VALUES ('per-key', 'b', 3, 3, 1.5, clock_timestamp() + interval '1 hour')");
		assertThat(rows(connection, this.sql.keyLimits, new QueueSql.None()).get(1))
			.containsEntry("rate_limit_per_key_permits", 3).containsEntry("waiting", 6L);
		this.admin.declare(QueueDefinition.of("per-key").withConcurrencyKey("tenant", null, RateLimit.perSecond(3)));
		assertThat(rows(connection, this.sql.keyLimits, new QueueSql.None()).get(1))
			.containsEntry("max_in_flight_per_key", null).containsEntry("waiting", 6L);
		assertThat(this.admin.keyLimits()).filteredOn((state) -> state.queue().equals("per-key")).singleElement()
			.isEqualTo(new QueueAdmin.KeyLimitState("per-key", "tenant", null, RateLimit.perSecond(3), 6));
	}

	/**
	 * Many threads, each on its own connection, take tokens of one bucket as fast as they can: over
	 * the window they are granted together at most rate × window + burst, and about that much
	 * (the bucket is never left full for long).
	 */
	@Test
	void concurrentTakesNeverGrantMoreThanTheBucketHolds() throws Exception {
		int rate = 200;
		this.admin.declare(QueueDefinition.of("race").withRateLimit(RateLimit.perSecond(rate)));
		// An empty bucket to start from, as if it had just been drained: the window starts before it.
		long began = System.nanoTime();
		this.jdbc.update("INSERT INTO pgqueue.rate_bucket (queue, rate, burst, tokens, refilled_at) "
				+ "VALUES ('race', ?, ?, 0, clock_timestamp())", rate, rate);
		int threads = 12;
		long windowNanos = TimeUnit.SECONDS.toNanos(3);
		try (HikariDataSource pool = EmbeddedPostgres.get().pool("race", threads)) {
			ExecutorService executor = Executors.newFixedThreadPool(threads);
			try {
				CountDownLatch start = new CountDownLatch(1);
				AtomicBoolean over = new AtomicBoolean();
				List<Future<long[]>> takers = new ArrayList<>();
				for (int t = 0; t < threads; t++) {
					int wanted = 1 + (t % 7);
					takers.add(executor.submit(() -> {
						long granted = 0;
						long takes = 0;
						try (Connection connection = pool.getConnection()) {
							start.await();
							while (!over.get()) {
								granted += TokenBucket.take(connection, this.sql, "race", wanted).granted();
								takes++;
							}
						}
						return new long[] { granted, takes };
					}));
				}
				start.countDown();
				Thread.sleep(TimeUnit.NANOSECONDS.toMillis(windowNanos));
				over.set(true);
				long granted = 0;
				long takes = 0;
				for (Future<long[]> taker : takers) {
					long[] result = taker.get(30, TimeUnit.SECONDS);
					granted += result[0];
					takes += result[1];
				}
				double seconds = (System.nanoTime() - began) / 1e9;
				assertThat(takes).as("takes").isGreaterThan(threads * 10L);
				assertThat((double) granted).as("granted in %.2f s at %d/s", seconds, rate)
					.isLessThanOrEqualTo(rate * seconds)
					.isGreaterThan(rate * seconds * 0.8);
			}
			finally {
				executor.shutdownNow();
			}
		}
	}

	/**
	 * A queue limited to 4 messages a second per key (burst 4), with ready messages of keys a, b and
	 * c, a delayed one of key d and one without a key.
	 */
	@Test
	void takeKeyTokens() throws SQLException {
		this.admin.declare(QueueDefinition.of("paced").withConcurrencyKey("tenant", null, RateLimit.perSecond(4)));
		this.admin.declare(QueueDefinition.of("unpaced").withConcurrencyKey("tenant"));
		for (String key : List.of("a", "a", "a", "a", "a", "a", "b", "c")) {
			this.template.send("paced", Map.of("k", key), io.github.pgqueue.SendOptions.builder().header("tenant", key).build());
		}
		this.template.send("paced", Map.of("k", "d"),
				io.github.pgqueue.SendOptions.builder().header("tenant", "d").delay(java.time.Duration.ofHours(1)).build());
		this.template.send("paced", Map.of("k", "none"));
		Connection connection = this.connections.open();
		// 10 wanted, 3 keys ready (not d): a share of 4 each, all granted (full buckets, emptied):
		// each holds a token again in 250 ms. The buckets are written in key order.
		List<Map<String, Object>> first = takeKeys(connection, "paced", 10, "");
		assertThat(first).extracting("key", "granted", "next_in_ms")
			.containsExactly(tuple("a", 4, 250L), tuple("b", 4, 250L), tuple("c", 4, 250L), tuple(null, null, null));
		assertThat(keyBucket("paced", "a")).containsEntry("burst", 4).containsEntry("rate", 4.0);
		// No refill until the next take: none has a token.
		freezeKeyRefill("paced");
		assertThat(takeKeys(connection, "paced", 10, "b")).extracting("key", "granted", "next_in_ms")
			.containsExactly(tuple("a", 0, 250L), tuple("b", 0, 250L), tuple("c", 0, 250L), tuple(null, null, null));
		// Two tokens back to a: a share of 4 is partly granted.
		this.jdbc.update("UPDATE pgqueue.key_rate_bucket SET tokens = 2.5 WHERE key = 'a'");
		freezeKeyRefill("paced");
		assertThat(takeKeys(connection, "paced", 2, "b")).as("after key b: a, then c from the last key down; a share of 1")
			.extracting("key", "granted").containsExactly(tuple("a", 1), tuple("c", 0), tuple(null, null));
		assertThat((double) keyBucket("paced", "a").get("tokens")).isEqualTo(1.5);
		// A paused queue: no key, but the row saying that the queue is limited per key. A queue not
		// limited per key, an undeclared one: no row.
		this.admin.pause("paced");
		assertThat(takeKeys(connection, "paced", 10, "")).extracting("key", "granted").containsExactly(tuple(null, null));
		assertThat(TokenBucket.takeForKeys(connection, this.sql, "paced", 10, "").granted()).isEmpty();
		this.admin.resume("paced");
		this.template.send("unpaced", Map.of("k", "a"), io.github.pgqueue.SendOptions.builder().header("tenant", "a").build());
		assertThat(takeKeys(connection, "unpaced", 10, "")).isEmpty();
		assertThat(takeKeys(connection, "undeclared", 10, "")).isEmpty();
		assertThat(TokenBucket.takeForKeys(connection, this.sql, "unpaced", 10, "")).as("no limit per key").isNull();
		// Buckets full again are deleted by the takes, now and then, but never those of the keys taken for.
		this.jdbc.update("UPDATE pgqueue.key_rate_bucket SET refilled_at = clock_timestamp() - interval '10 seconds'");
		this.jdbc.update("INSERT INTO pgqueue.key_rate_bucket (queue, key, rate, burst, tokens, refilled_at) "
				+ "VALUES ('paced', 'gone', 4, 4, 4, clock_timestamp())");
		for (int i = 0; i < 200 && Db.queryForLong("SELECT count(*) FROM pgqueue.key_rate_bucket WHERE key = 'gone'") > 0; i++) {
			takeKeys(connection, "paced", 1, "");
		}
		assertThat(this.jdbc.queryForList("SELECT key FROM pgqueue.key_rate_bucket ORDER BY key", String.class))
			.as("the idle full bucket deleted, the taken ones kept").doesNotContain("gone").contains("c");
	}

	@Test
	void giveBackKeyTokens() throws SQLException {
		this.admin.declare(QueueDefinition.of("back-keys").withConcurrencyKey("tenant", null, RateLimit.perSecond(5)));
		for (String key : List.of("a", "b")) {
			this.template.send("back-keys", Map.of("k", key), io.github.pgqueue.SendOptions.builder().header("tenant", key).build());
		}
		Connection connection = this.connections.open();
		assertThat(takeKeys(connection, "back-keys", 10, "")).extracting("granted").containsExactly(5, 5, null);
		freezeKeyRefill("back-keys");
		assertThat(update(connection, this.sql.giveBackKeyTokens, new QueueSql.GiveBackKeyTokens("back-keys",
				new String[] { "a", "b", "unknown" }, new Integer[] { 3, 9 }))).as("each key's own, up to its burst")
			.isEqualTo(2);
		assertThat((double) keyBucket("back-keys", "a").get("tokens")).isEqualTo(3.0);
		assertThat((double) keyBucket("back-keys", "b").get("tokens")).isEqualTo(5.0);
		// Through the bucket, as a poller gives back what its claim left: keys with none left are skipped.
		TokenBucket.giveBackForKeys(connection, this.sql, "back-keys", Map.of("a", 1, "b", 0));
		assertThat((double) keyBucket("back-keys", "a").get("tokens")).isEqualTo(4.0);
	}

	/**
	 * Many threads take and give back tokens of three keys' buckets at once, each in its own
	 * rotation of the keys: no deadlock (the buckets are locked in key order), and each key is
	 * granted at most rate × window + burst, and about that much.
	 */
	@Test
	void concurrentKeyTakesNeverGrantAKeyMoreThanItsBucketHolds() throws Exception {
		int rate = 50;
		this.admin.declare(QueueDefinition.of("race-keys").withConcurrencyKey("tenant", null, RateLimit.perSecond(rate)));
		List<String> keys = List.of("a", "b", "c");
		for (String key : keys) {
			this.template.send("race-keys", Map.of("k", key), io.github.pgqueue.SendOptions.builder().header("tenant", key).build());
		}
		long began = System.nanoTime();
		for (String key : keys) {
			this.jdbc.update("INSERT INTO pgqueue.key_rate_bucket (queue, key, rate, burst, tokens, refilled_at) "
					+ "VALUES ('race-keys', ?, ?, ?, 0, clock_timestamp())", key, rate, rate);
		}
		int threads = 9;
		try (HikariDataSource pool = EmbeddedPostgres.get().pool("race-keys", threads)) {
			ExecutorService executor = Executors.newFixedThreadPool(threads);
			try {
				CountDownLatch start = new CountDownLatch(1);
				AtomicBoolean over = new AtomicBoolean();
				List<Future<Map<String, Long>>> takers = new ArrayList<>();
				for (int t = 0; t < threads; t++) {
					String after = keys.get(t % 3);
					int wanted = 2 + (t % 4);
					takers.add(executor.submit(() -> {
						Map<String, Long> granted = new java.util.HashMap<>();
						try (Connection connection = pool.getConnection()) {
							start.await();
							while (!over.get()) {
								TokenBucket.KeyGrants grants = TokenBucket.takeForKeys(connection, this.sql, "race-keys",
										wanted, after);
								// Uses one token of each key granted, gives back the rest.
								Map<String, Integer> left = new java.util.HashMap<>();
								grants.granted().forEach((key, n) -> {
									if (n > 0) {
										granted.merge(key, 1L, Long::sum);
										left.put(key, n - 1);
									}
								});
								TokenBucket.giveBackForKeys(connection, this.sql, "race-keys", left);
							}
						}
						return granted;
					}));
				}
				start.countDown();
				Thread.sleep(3000);
				over.set(true);
				Map<String, Long> used = new java.util.HashMap<>();
				for (Future<Map<String, Long>> taker : takers) {
					taker.get(30, TimeUnit.SECONDS).forEach((key, n) -> used.merge(key, n, Long::sum));
				}
				double seconds = (System.nanoTime() - began) / 1e9;
				for (String key : keys) {
					assertThat((double) used.getOrDefault(key, 0L)).as("key %s used in %.2f s at %d/s", key, seconds, rate)
						.isLessThanOrEqualTo(rate * seconds)
						.isGreaterThan(rate * seconds * 0.7);
				}
			}
			finally {
				executor.shutdownNow();
			}
		}
	}

	private List<Map<String, Object>> takeKeys(Connection connection, String queue, int wanted, String afterKey)
			throws SQLException {
		return rows(connection, this.sql.takeKeyTokens, new QueueSql.TakeKeyTokens(queue, wanted, afterKey));
	}

	/** As {@link #freezeRefill}, for every key's bucket of {@code queue}. */
	private void freezeKeyRefill(String queue) {
		this.jdbc.update("UPDATE pgqueue.key_rate_bucket SET refilled_at = clock_timestamp() + interval '1 hour'"
				+ " WHERE queue = ?", queue);
	}

	private Map<String, Object> keyBucket(String queue, String key) {
		return this.jdbc.queryForMap("SELECT rate, burst, tokens FROM pgqueue.key_rate_bucket WHERE queue = ? AND key = ?",
				queue, key);
	}

	private Map<String, Object> take(Connection connection, String queue, int wanted) throws SQLException {
		List<Map<String, Object>> rows = rows(connection, this.sql.takeTokens, new QueueSql.TakeTokens(queue, wanted));
		assertThat(rows).hasSize(1);
		return rows.get(0);
	}

	/**
	 * Puts the bucket's last refill an hour ahead, so that no time passes for it until its next take
	 * (which refills from then on): what it holds is then exact, however slowly the test runs.
	 */
	private void freezeRefill(String queue) {
		assertThat(this.jdbc.update("UPDATE pgqueue.rate_bucket SET refilled_at = clock_timestamp() + interval '1 hour'"
				+ " WHERE queue = ?", queue)).isEqualTo(1);
	}

	/** Inserts {@code count} messages of {@code key} (null: none) into {@code queue}, visible after {@code delay}. */
	private void insert(String queue, String key, int count, String delay) {
		this.jdbc.update("INSERT INTO pgqueue.message (queue, payload, concurrency_key, visible_at) "
				+ "SELECT ?, '{}', ?, now() + ?::interval FROM generate_series(1, ?)", queue, key, delay, count);
	}

	private Map<String, Object> bucket(String queue) {
		return this.jdbc.queryForMap("SELECT rate, burst, tokens FROM pgqueue.rate_bucket WHERE queue = ?", queue);
	}

}
