package io.github.pgqueue.internal;

import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.time.Duration;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Set;

import javax.sql.DataSource;

import io.github.pgqueue.QueueException;

/**
 * The rate-limit bucket of a queue in the database ({@code limits.sql}): taking tokens before a
 * claim and giving back those a claim did not use, each one short statement outside any
 * transaction. The row lock of the bucket makes concurrent takes of every JVM queue, so that they
 * never grant together more than the bucket holds.
 * <p>
 * {@link #onDataSource} runs them on a connection of a pool, for a poller whose claims run in a
 * transaction of the application's (it must not hold the bucket's row lock while its handlers run);
 * a {@link ConsumerSession} runs them on its own connection.
 */
public final class TokenBucket {

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

	/** Which of {@code queues} have a rate limit now, on a connection of {@code dataSource}. */
	public static Set<String> limitedQueues(DataSource dataSource, QueueSql sql, List<String> queues) {
		try (Connection connection = dataSource.getConnection()) {
			return limitedQueues(connection, sql, queues);
		}
		catch (SQLException ex) {
			throw new QueueException("Could not read the rate limits of queues " + queues + ": " + ex.getMessage(), ex);
		}
	}

	/** {@code rate_limited_queues} on {@code connection}. */
	static Set<String> limitedQueues(Connection connection, QueueSql sql, List<String> queues) throws SQLException {
		try (PreparedStatement ps = sql.rateLimitedQueues.prepare(connection,
				new QueueSql.Queues(queues.toArray(String[]::new))); ResultSet rs = ps.executeQuery()) {
			Set<String> limited = new LinkedHashSet<>();
			while (rs.next()) {
				limited.add(rs.getString("name"));
			}
			return limited;
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
	 * What a take granted.
	 * @param granted how many messages the claim may take: the number wanted (at most the
	 * bucket's burst), or 0
	 * @param nextIn how long until the bucket holds a whole grant again, as things stand
	 */
	public record Grant(int granted, Duration nextIn) {
	}

}
