package io.github.pgqueue.benchmarks;

import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.util.ArrayList;
import java.util.List;

import io.github.pgqueue.ConsumptionMode;
import io.github.pgqueue.QueueAdmin;
import io.github.pgqueue.QueueDefinition;
import io.github.pgqueue.QueueTemplate;
import io.github.pgqueue.RateLimit;
import io.github.pgqueue.internal.QueueSql;
import io.github.pgqueue.internal.TokenBucket;

/**
 * {@code rate-limit}: what a rate limit costs when it does not hold anything back. 4 consumers at
 * batch 10 and 100, in both modes, drain a backlog for the drain time ({@code drain-seconds})
 * without a limit and with one far above the drain rate (1 000 000/s: every take is granted),
 * alternated three times after one unmeasured drain, median; a limited claim runs one more
 * statement, the take of tokens. The same for a limit per key: a backlog spread over 100 keys of a
 * queue with a concurrency key, without and with a limit of each key far above the drain rate (a
 * claim runs a take of its keys' tokens before it and a give-back after it). Also the take's own
 * time on one connection.
 */
final class RateLimitScenario {

	private static final String QUEUE = "rate-bench";

	private static final int CONSUMERS = 4;

	private static final RateLimit FAR_ABOVE = RateLimit.perSecond(1_000_000);

	/** How many keys a keyed drain's backlog is spread over. */
	private static final int KEYS = 100;

	private final BenchContext context;

	private final QueueTemplate template;

	private final QueueAdmin admin;

	RateLimitScenario(BenchContext context) {
		this.context = context;
		this.template = QueueTemplate.builder(context.database().appPool()).build();
		this.admin = new QueueAdmin(this.template.context());
	}

	void run() {
		for (ConsumptionMode mode : ConsumptionMode.values()) {
			for (int batch : List.of(10, 100)) {
				// Up to about 120 000 msg/s here unkeyed, 30 000 keyed (a backlog that runs out grows).
				Drain.Timed drains = new Drain.Timed(this.context, (batch == 10) ? 35_000 : 120_000);
				Drain.Timed keyedDrains = new Drain.Timed(this.context, (batch == 10) ? 20_000 : 35_000);
				drain(drains, mode, batch, null, false, null);
				drain(keyedDrains, mode, batch, null, true, null);
				List<Drain.Outcome> free = new ArrayList<>();
				List<Drain.Outcome> limited = new ArrayList<>();
				List<Drain.Outcome> keyed = new ArrayList<>();
				List<Drain.Outcome> keyLimited = new ArrayList<>();
				for (int round = 0; round < 3; round++) {
					free.add(drain(drains, mode, batch, null, false, null));
					limited.add(drain(drains, mode, batch, FAR_ABOVE, false, null));
					keyed.add(drain(keyedDrains, mode, batch, null, true, null));
					keyLimited.add(drain(keyedDrains, mode, batch, null, true, FAR_ABOVE));
				}
				String system = (mode == ConsumptionMode.TRANSACTIONAL) ? "pgqueue-tx" : "pgqueue";
				double freeRate = add(system, batch, free, drains);
				double limitedRate = add(system + "-limited", batch, limited, drains);
				this.context.results().ratio("scenario=rate-limit system=" + system + " consumers=" + CONSUMERS
						+ " batch=" + batch + " limited/unlimited=" + Results.ratio(limitedRate / freeRate));
				double keyedRate = add(system + "-keyed", batch, keyed, keyedDrains);
				double keyLimitedRate = add(system + "-limited-per-key", batch, keyLimited, keyedDrains);
				this.context.results().ratio("scenario=rate-limit system=" + system + " consumers=" + CONSUMERS
						+ " batch=" + batch + " keys=" + KEYS + " limited-per-key/keyed="
						+ Results.ratio(keyLimitedRate / keyedRate));
			}
		}
		takeTime();
		keyTakeTime();
		this.context.database().execute("TRUNCATE pgqueue.message");
	}

	/**
	 * Adds the row of {@code system}'s drains, the one of median rate, with every drain's rate and
	 * length and the backlog the last one started from; returns that rate.
	 */
	private double add(String system, int batch, List<Drain.Outcome> outcomes, Drain.Timed drains) {
		Drain.Runs runs = new Drain.Runs(outcomes, drains.backlog());
		Drain.Outcome median = runs.median();
		this.context.results().add(BenchRow.throughput("rate-limit", system, CONSUMERS, String.valueOf(batch),
				median.messages(), median.rate())
			.with("runs", runs.rates())
			.with("drain_ms", outcomes.stream().map((outcome) -> Math.round(outcome.seconds() * 1000)).toList()
				.toString())
			.with("backlog", drains.backlog()));
		return median.rate();
	}

	/**
	 * One of {@code drains}: a backlog keyed by header tenant over {@link #KEYS} keys if
	 * {@code keyed}, with {@code limit} on the queue and {@code perKey} on each key.
	 */
	private Drain.Outcome drain(Drain.Timed drains, ConsumptionMode mode, int batch, RateLimit limit, boolean keyed,
			RateLimit perKey) {
		QueueDefinition definition = QueueDefinition.of(QUEUE).withRateLimit(limit);
		this.admin.declare(keyed ? definition.withConcurrencyKey("tenant", null, perKey) : definition);
		String label = "rate-limit " + mode.name().toLowerCase(java.util.Locale.ROOT) + " " + CONSUMERS + "x" + batch
				+ (keyed ? " keyed" : "") + ((limit != null || perKey != null) ? " limited" : "");
		return drains.drain(label, (messages) -> load(messages, keyed), (handled) -> Drain.countingListener(
				this.template.context(), this.context.database().consumerPool(), "rate-bench", QUEUE, CONSUMERS, batch,
				mode, null, handled));
	}

	/** Empties the table and loads {@code messages}, spread over {@link #KEYS} keys if {@code keyed}. */
	private void load(long messages, boolean keyed) {
		this.context.database().execute("TRUNCATE pgqueue.message");
		this.context.database().admin().update("""
				INSERT INTO pgqueue.message (queue, payload, headers, concurrency_key)
				SELECT ?, jsonb_build_object('n', g), k.headers, k.key
				  FROM generate_series(1, ?) g
				 CROSS JOIN LATERAL (SELECT CASE WHEN ? THEN jsonb_build_object('tenant', 't' || g % ?) ELSE '{}' END,
				                            CASE WHEN ? THEN 't' || g % ? END) k(headers, key)""",
				QUEUE, messages, keyed, KEYS, keyed, KEYS);
		this.context.database().vacuumAnalyze("pgqueue.message");
	}

	/** The mean time of {@code take_tokens} on one connection, granted every time. */
	private void takeTime() {
		this.admin.declare(QueueDefinition.of(QUEUE).withRateLimit(FAR_ABOVE));
		QueueSql sql = QueueSql.of("pgqueue");
		int takes = this.context.options().quick() ? 5_000 : 20_000;
		try (Connection connection = this.context.database().consumerPool().getConnection()) {
			connection.setAutoCommit(true);
			long started = 0;
			for (int i = -1_000; i < takes; i++) {
				if (i == 0) {
					started = System.nanoTime();
				}
				try (PreparedStatement ps = sql.takeTokens.prepare(connection, new QueueSql.TakeTokens(QUEUE, 10));
						ResultSet rs = ps.executeQuery()) {
					rs.next();
				}
			}
			double micros = (System.nanoTime() - started) / 1e3 / takes;
			this.context.results().ratio(String.format(java.util.Locale.ROOT,
					"scenario=rate-limit take_tokens_us=%.1f takes=%d", micros, takes));
		}
		catch (SQLException ex) {
			throw new IllegalStateException("Could not time take_tokens", ex);
		}
	}

	/**
	 * The mean time of a take of the keys' tokens ({@code take_key_tokens}, in its own transaction
	 * with its planner settings) as a transactional poller makes it, on a connection of the
	 * consumers' pool each time: 10 wanted, of a backlog over {@link #KEYS} keys, granted every time.
	 */
	private void keyTakeTime() {
		this.context.database().execute("TRUNCATE pgqueue.message");
		this.admin.declare(QueueDefinition.of(QUEUE).withConcurrencyKey("tenant", null, FAR_ABOVE));
		this.context.database().admin().update("""
				INSERT INTO pgqueue.message (queue, payload, headers, concurrency_key)
				SELECT ?, jsonb_build_object('n', g), jsonb_build_object('tenant', 't' || g % ?), 't' || g % ?
				  FROM generate_series(1, 10000) g""", QUEUE, KEYS, KEYS);
		this.context.database().vacuumAnalyze("pgqueue.message");
		TokenBucket bucket = TokenBucket.onDataSource(this.context.database().consumerPool(), QueueSql.of("pgqueue"));
		int takes = this.context.options().quick() ? 5_000 : 20_000;
		long started = 0;
		for (int i = -1_000; i < takes; i++) {
			if (i == 0) {
				started = System.nanoTime();
			}
			if (bucket.takeForKeys(QUEUE, 10, "").total() == 0) {
				throw new IllegalStateException("A take of the keys' tokens of '" + QUEUE + "' was granted none");
			}
		}
		double micros = (System.nanoTime() - started) / 1e3 / takes;
		this.context.results().ratio(String.format(java.util.Locale.ROOT,
				"scenario=rate-limit take_key_tokens_us=%.1f takes=%d", micros, takes));
	}

}
