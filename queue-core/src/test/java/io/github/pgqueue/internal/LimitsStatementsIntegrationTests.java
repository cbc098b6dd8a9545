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
		Connection connection = this.connections.open();
		assertThat(rows(connection, this.sql.rateLimitedQueues, new QueueSql.Queues(new String[] { "a", "b", "d" })))
			.extracting((row) -> row.get("name"))
			.containsExactly("a");
		assertThat(TokenBucket.limitedQueues(EmbeddedPostgres.get().dataSource(), this.sql, List.of("a", "b", "c")))
			.containsExactlyInAnyOrder("a", "c");
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
