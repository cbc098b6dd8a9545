package io.github.pgqueue.internal;

import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.time.Duration;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;

import javax.sql.DataSource;

import tools.jackson.core.type.TypeReference;
import tools.jackson.databind.json.JsonMapper;

import io.github.pgqueue.QueueException;

/**
 * The rate-limit bucket of a queue in the database ({@code limits.sql}): taking tokens before a
 * claim and giving back those a claim did not use, each one short statement outside any
 * transaction (taking the tokens of keys: in a transaction of its own, for its planner settings).
 * The row lock of the bucket makes concurrent takes of every JVM queue, so that they never grant
 * together more than the bucket holds.
 * <p>
 * {@link #onDataSource} runs them on a connection of a pool, for a poller whose claims run in a
 * transaction of the application's (it must not hold the bucket's row lock while its handlers run);
 * a {@link ConsumerSession} runs them on its own connection.
 */
public final class TokenBucket {

	/**
	 * The planner settings of {@code take_key_tokens}: those of {@link QueueSql#INDEX_PLANS}, and no
	 * sort where an index gives the order. Its plan is made generically while the message table is
	 * empty, when every plan costs about the same: then one key's descent may walk the whole queue
	 * by the claim index and sort it, instead of descending the concurrency index in key order.
	 */
	static final String KEY_PLANS = "SET LOCAL enable_seqscan = off; SET LOCAL enable_sort = off; "
			+ "SET LOCAL plan_cache_mode = force_generic_plan";

	private final DataSource dataSource;

	private final QueueSql sql;

	private TokenBucket(DataSource dataSource, QueueSql sql) {
		this.dataSource = dataSource;
		this.sql = sql;
	}

	/** Takes and gives back tokens on a connection of {@code dataSource} each time, in autocommit. */
	public static TokenBucket onDataSource(DataSource dataSource, QueueSql sql) {
		return new TokenBucket(dataSource, sql);
	}

	/**
	 * Which of {@code queues} have a rate limit now, of the queue or of each key, on a connection of
	 * {@code dataSource}.
	 */
	public static Map<String, Limited> limitedQueues(DataSource dataSource, QueueSql sql, List<String> queues) {
		try (Connection connection = dataSource.getConnection()) {
			return limitedQueues(connection, sql, queues);
		}
		catch (SQLException ex) {
			throw new QueueException("Could not read the rate limits of queues " + queues + ": " + ex.getMessage(), ex);
		}
	}

	/** {@code rate_limited_queues} on {@code connection}. */
	static Map<String, Limited> limitedQueues(Connection connection, QueueSql sql, List<String> queues)
			throws SQLException {
		try (PreparedStatement ps = sql.rateLimitedQueues.prepare(connection,
				new QueueSql.Queues(queues.toArray(String[]::new))); ResultSet rs = ps.executeQuery()) {
			Map<String, Limited> limited = new LinkedHashMap<>();
			while (rs.next()) {
				limited.put(rs.getString("name"), new Limited(rs.getBoolean("queue_wide"), rs.getBoolean("per_key")));
			}
			return limited;
		}
	}

	/**
	 * Takes tokens of {@code queue}'s keys' buckets for up to {@code wanted} keys with ready messages,
	 * from the key after {@code afterKey} on (see {@code take_key_tokens}); null if the queue is not
	 * limited per key (any more).
	 */
	public KeyGrants takeForKeys(String queue, int wanted, String afterKey) {
		try (Connection connection = this.dataSource.getConnection()) {
			return takeForKeys(connection, this.sql, queue, wanted, afterKey);
		}
		catch (SQLException ex) {
			throw new QueueException("Could not take tokens of the keys of queue '" + queue + "': " + ex.getMessage(),
					ex);
		}
	}

	/** Gives back the tokens {@code left} by a claim of {@code queue} (see {@link KeyGrants#left}). */
	public void giveBackForKeys(String queue, Map<String, Integer> left) {
		if (left.isEmpty()) {
			return;
		}
		try (Connection connection = this.dataSource.getConnection()) {
			inAutocommit(connection, () -> {
				giveBackForKeys(connection, this.sql, queue, left);
				return null;
			});
		}
		catch (SQLException ex) {
			throw new QueueException("Could not give back tokens of the keys of queue '" + queue + "': "
					+ ex.getMessage(), ex);
		}
	}

	/**
	 * {@code take_key_tokens} on {@code connection}, which must not be in a transaction, in a transaction
	 * of its own (which holds the buckets' row locks) planned as {@link #KEY_PLANS} says: the settings
	 * and the statement in one round trip, the commit in a second. Null if the queue is not limited
	 * per key (any more).
	 */
	static KeyGrants takeForKeys(Connection connection, QueueSql sql, String queue, int wanted, String afterKey)
			throws SQLException {
		return OwnTransaction.run(connection, (inTransaction) -> {
			try (PreparedStatement ps = sql.takeKeyTokens.between(KEY_PLANS, "")
				.prepare(inTransaction, new QueueSql.TakeKeyTokens(queue, wanted, afterKey))) {
				boolean rows = ps.execute();
				while (!rows && ps.getUpdateCount() != -1) {
					rows = ps.getMoreResults(); // past the settings
				}
				return readKeyGrants(ps.getResultSet());
			}
		});
	}

	private static KeyGrants readKeyGrants(ResultSet result) throws SQLException {
		try (ResultSet rs = result) {
			Map<String, Integer> granted = new LinkedHashMap<>();
			long nextInMs = Long.MAX_VALUE;
			boolean limited = false;
			while (rs.next()) {
				String key = rs.getString("key");
				if (key == null) {
					limited = true;
					continue;
				}
				granted.put(key, rs.getInt("granted"));
				nextInMs = Math.min(nextInMs, rs.getLong("next_in_ms"));
			}
			if (!limited) {
				return null;
			}
			return new KeyGrants(granted, granted.isEmpty() ? Duration.ZERO : Duration.ofMillis(Math.max(0, nextInMs)));
		}
	}

	/** {@code give_back_key_tokens} on {@code connection}, which must be in autocommit. */
	static void giveBackForKeys(Connection connection, QueueSql sql, String queue, Map<String, Integer> left)
			throws SQLException {
		Map<String, Integer> unused = new TreeMap<>();
		left.forEach((key, tokens) -> {
			if (tokens > 0) {
				unused.put(key, tokens);
			}
		});
		if (unused.isEmpty()) {
			return;
		}
		try (PreparedStatement ps = sql.giveBackKeyTokens.prepare(connection, new QueueSql.GiveBackKeyTokens(queue,
				unused.keySet().toArray(String[]::new), unused.values().toArray(Integer[]::new)))) {
			ps.executeUpdate();
		}
	}

	/** Takes up to {@code wanted} tokens of {@code queue}'s bucket; null if the queue has no limit. */
	public Grant take(String queue, int wanted) {
		try (Connection connection = this.dataSource.getConnection()) {
			return inAutocommit(connection, () -> take(connection, this.sql, queue, wanted));
		}
		catch (SQLException ex) {
			throw new QueueException("Could not take tokens of queue '" + queue + "': " + ex.getMessage(), ex);
		}
	}

	/** Gives back {@code unused} tokens to {@code queue}'s bucket. */
	public void giveBack(String queue, int unused) {
		try (Connection connection = this.dataSource.getConnection()) {
			inAutocommit(connection, () -> {
				giveBack(connection, this.sql, queue, unused);
				return null;
			});
		}
		catch (SQLException ex) {
			throw new QueueException("Could not give back tokens of queue '" + queue + "': " + ex.getMessage(), ex);
		}
	}

	/** Runs {@code statement} in autocommit, whatever the pool's default, and gives the default back. */
	private static <T> T inAutocommit(Connection connection, SqlCall<T> statement) throws SQLException {
		boolean autoCommit = connection.getAutoCommit();
		if (!autoCommit) {
			connection.setAutoCommit(true);
		}
		try {
			return statement.call();
		}
		finally {
			if (!autoCommit) {
				connection.setAutoCommit(false);
			}
		}
	}

	/** {@code take_tokens} on {@code connection}, which must be in autocommit; null if the queue has no limit. */
	static Grant take(Connection connection, QueueSql sql, String queue, int wanted) throws SQLException {
		try (PreparedStatement ps = sql.takeTokens.prepare(connection, new QueueSql.TakeTokens(queue, wanted));
				ResultSet rs = ps.executeQuery()) {
			if (!rs.next()) {
				return null;
			}
			return new Grant(rs.getInt("granted"), Duration.ofMillis(Math.max(0, rs.getLong("next_in_ms"))));
		}
	}

	/** {@code give_back_tokens} on {@code connection}, which must be in autocommit. */
	static void giveBack(Connection connection, QueueSql sql, String queue, int unused) throws SQLException {
		try (PreparedStatement ps = sql.giveBackTokens.prepare(connection, new QueueSql.GiveBackTokens(queue, unused))) {
			ps.executeUpdate();
		}
	}

	private interface SqlCall<T> {

		T call() throws SQLException;

	}

	/**
	 * Which rate limits a queue has.
	 * @param queueWide a limit of the queue's messages, all together
	 * @param perKey a limit of each key's messages (see {@link io.github.pgqueue.QueueDefinition.ConcurrencyKey})
	 */
	public record Limited(boolean queueWide, boolean perKey) {
	}

	/**
	 * What a take of the keys' tokens granted: the tokens of each key taken for, some 0, in the
	 * order the claim serves them; no key when none has a ready message.
	 * @param granted the tokens granted, by key
	 * @param nextIn how long until the first of those keys holds a token again, as things stand
	 */
	public record KeyGrants(Map<String, Integer> granted, Duration nextIn) {

		private static final JsonMapper JSON = JsonMapper.builder().build();

		/** How many messages the claim may take in all, of every key. */
		public int total() {
			return this.granted.values().stream().mapToInt(Integer::intValue).sum();
		}

		/**
		 * Whether keys have ready messages but none was granted a token: a claim would take none of
		 * them, and the poller waits {@link #nextIn} (or for news) instead.
		 */
		public boolean starved() {
			return !this.granted.isEmpty() && total() == 0;
		}

		/**
		 * The claim's {@code :grants} argument: {@code {"claim": claim, "left": {key: tokens}}}, the
		 * keys granted no token left out. {@code claim} must differ from the one of the claim made
		 * before it in the same transaction.
		 */
		public String argument(long claim) {
			Map<String, Integer> left = new LinkedHashMap<>();
			this.granted.forEach((key, tokens) -> {
				if (tokens > 0) {
					left.put(key, tokens);
				}
			});
			return JSON.writeValueAsString(Map.of("claim", claim, "left", left));
		}

		/** The tokens a claim left, by key, from its {@code grants_left} column (null: none). */
		public static Map<String, Integer> left(String grantsLeft) {
			if (grantsLeft == null) {
				return Map.of();
			}
			return JSON.readValue(grantsLeft, new TypeReference<Map<String, Integer>>() {
			});
		}

	}

	/**
	 * What a take granted.
	 * @param granted how many messages the claim may take: the number wanted (at most the
	 * bucket's burst), or 0
	 * @param nextIn how long until the bucket holds a whole grant again, as things stand
	 */
	public record Grant(int granted, Duration nextIn) {
	}

}
