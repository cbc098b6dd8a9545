package io.github.pgqueue.internal;

import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.ResultSetMetaData;
import java.sql.SQLException;
import java.sql.Statement;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.UUID;

import io.github.pgqueue.testing.Db;
import io.github.pgqueue.testing.EmbeddedPostgres;
import org.postgresql.PGConnection;
import org.postgresql.PGNotification;

/**
 * What the statement tests share: plain JDBC connections of their own to the shared embedded
 * database, a statement's rows read by column name (as pgqueue reads them), the advisory locks a
 * backend holds, and the notifications a listener got.
 * <p>
 * Plain connections rather than the shared pool: a session-level advisory lock outlives a pool's
 * checkout, and a setting changed by a statement under test would reach the pool's next borrower.
 * {@link #close()} rolls back, drops every advisory lock and closes each connection, in the
 * test's thread: a connection merely closed ends its backend asynchronously, and a lock still
 * held on key (namespace, 1) would make the next test's claim of message 1 (ids restart at 1
 * before each test) fail now and then.
 */
final class StatementConnections implements AutoCloseable {

	private final List<Connection> opened = new ArrayList<>();

	/** A new connection in autocommit, closed by {@link #close()}. */
	Connection open() throws SQLException {
		EmbeddedPostgres postgres = EmbeddedPostgres.get();
		Connection connection = DriverManager.getConnection(postgres.jdbcUrl(), postgres.username(), "");
		this.opened.add(connection);
		return connection;
	}

	@Override
	public void close() throws SQLException {
		SQLException failure = null;
		for (Connection connection : this.opened) {
			try {
				if (!connection.isClosed()) {
					if (!connection.getAutoCommit()) {
						connection.rollback();
						connection.setAutoCommit(true);
					}
					try (Statement statement = connection.createStatement()) {
						statement.execute("SELECT pg_advisory_unlock_all()");
					}
					connection.close();
				}
			}
			catch (SQLException ex) {
				failure = (failure != null) ? failure : ex;
			}
		}
		this.opened.clear();
		if (failure != null) {
			throw failure;
		}
	}

	/** Every row {@code statement} returns with {@code parameters} on {@code connection}, by column name. */
	static <P extends Record> List<Map<String, Object>> rows(Connection connection, NamedStatement<P> statement,
			P parameters) throws SQLException {
		try (PreparedStatement ps = statement.prepare(connection, parameters); ResultSet rs = ps.executeQuery()) {
			return read(rs);
		}
	}

	/** Runs {@code statement}, one that returns no rows, with {@code parameters}: the rows it changed. */
	static <P extends Record> int update(Connection connection, NamedStatement<P> statement, P parameters)
			throws SQLException {
		try (PreparedStatement ps = statement.prepare(connection, parameters)) {
			return ps.executeUpdate();
		}
	}

	/**
	 * How many rows of the holding table statements on {@code connection} have read, by any scan:
	 * the counts its backend has not reported yet, so compare two readings of one connection.
	 */
	static long holdingRowsRead(Connection connection) throws SQLException {
		return ((Number) query(connection, "SELECT seq_tup_read + COALESCE(idx_tup_fetch, 0) AS n "
				+ "FROM pg_stat_xact_user_tables WHERE schemaname = 'pgqueue' AND relname = 'holding'")
			.get(0)
			.get("n")).longValue();
	}

	/** The rows of {@code sql} on {@code connection}, by column name. */
	static List<Map<String, Object>> query(Connection connection, String sql) throws SQLException {
		try (Statement statement = connection.createStatement(); ResultSet rs = statement.executeQuery(sql)) {
			return read(rs);
		}
	}

	private static List<Map<String, Object>> read(ResultSet rs) throws SQLException {
		List<Map<String, Object>> rows = new ArrayList<>();
		ResultSetMetaData meta = rs.getMetaData();
		while (rs.next()) {
			Map<String, Object> row = new LinkedHashMap<>();
			for (int i = 1; i <= meta.getColumnCount(); i++) {
				row.put(meta.getColumnLabel(i), rs.getObject(i));
			}
			rows.add(row);
		}
		return rows;
	}

	/** Runs {@code sql}, statements without results, on {@code connection}. */
	static void execute(Connection connection, String sql) throws SQLException {
		try (Statement statement = connection.createStatement()) {
			statement.execute(sql);
		}
	}

	/** The server process of {@code connection}. */
	static int pid(Connection connection) throws SQLException {
		return connection.unwrap(PGConnection.class).getBackendPID();
	}

	/**
	 * The message keys of {@code namespace} (message ids, for ids below 2^31) on which backend
	 * {@code pid} holds an advisory lock, session- or transaction-level, in key order. Read from
	 * another session, as pg_locks shows every backend's.
	 */
	static List<Long> lockedIds(int pid, int namespace) {
		return Db.jdbc().queryForList("SELECT objid::text::bigint FROM pg_locks WHERE locktype = 'advisory' AND pid = ? "
				+ "AND granted AND objsubid = 2 AND classid = ?::int4::oid ORDER BY 1", Long.class, pid, namespace);
	}

	/**
	 * Whether another session can take the advisory lock of message {@code id} now: false while a
	 * session or a transaction holds it. The lock taken to find out is given back at once.
	 */
	static boolean lockable(int namespace, long id) {
		return Boolean.TRUE.equals(Db.jdbc().queryForObject(
				"SELECT pg_try_advisory_xact_lock(?, ?::bigint::bit(32)::int4)", Boolean.class, namespace, id));
	}

	/**
	 * Whether a transaction holds a row lock on message {@code id}: another session's
	 * {@code FOR UPDATE SKIP LOCKED} skips it. False for a message that is gone.
	 */
	static boolean rowLocked(long id) {
		return message(id) != null && Db.jdbc()
			.queryForList("SELECT id FROM pgqueue.message WHERE id = ? FOR UPDATE SKIP LOCKED", Long.class, id)
			.isEmpty();
	}

	/**
	 * Message {@code id} as it is now, or null once it is gone: its columns, with visible_at as
	 * visible (whether it is due), visible_in_s (seconds until it is, negative when past) and
	 * visible_at_us (microseconds since the epoch, as a claim's place gives it), both null when
	 * parked (visible_at infinity), the jsonb columns
	 * as text, and xmin as text (a row written since has another).
	 */
	static Map<String, Object> message(long id) {
		List<Map<String, Object>> rows = Db.jdbc().queryForList("SELECT queue, payload::text AS payload, "
				+ "headers::text AS headers, priority, attempts, max_attempts, last_error, claim_open, claimed_at, "
				+ "group_key, deduplication_key, previous_id, visible_at <= now() AS visible, "
				+ "visible_at = 'infinity' AS parked, "
				+ "CASE WHEN visible_at < 'infinity' THEN extract(epoch FROM visible_at - now())::float8 END AS visible_in_s, "
				+ "CASE WHEN visible_at < 'infinity' THEN (extract(epoch FROM visible_at) * 1000000)::bigint END "
				+ "AS visible_at_us, xmin::text AS xmin "
				+ "FROM pgqueue.message WHERE id = ?", id);
		return rows.isEmpty() ? null : rows.get(0);
	}

	/** The ids that holding row {@code session} lists, in its order; null when the row is gone. */
	static List<Long> holding(long session) {
		List<List<Long>> rows = Db.jdbc().query("SELECT ids FROM pgqueue.holding WHERE session = ?",
				(rs, n) -> List.of((Long[]) rs.getArray("ids").getArray()), session);
		return rows.isEmpty() ? null : rows.get(0);
	}

	/**
	 * Listens on {@code channel} on a connection of this set: what {@link #notifications} then
	 * reads.
	 */
	Connection listen(String channel) throws SQLException {
		Connection listener = open();
		execute(listener, "LISTEN \"" + channel + "\"");
		return listener;
	}

	/**
	 * The payloads of the notifications on {@code channel} that {@code listener} got since it last
	 * read them, up to now: a marker notified now, from another session, comes after every
	 * notification committed before it (the queue is in commit order), so the read ends when the
	 * marker arrives rather than after a sleep.
	 */
	static List<String> notifications(Connection listener, String channel) throws SQLException {
		String marker = "marker-" + UUID.randomUUID();
		Db.jdbc().queryForObject("SELECT pg_notify(?, ?)::text", String.class, channel, marker);
		List<String> payloads = new ArrayList<>();
		long deadline = System.nanoTime() + 10_000_000_000L;
		while (System.nanoTime() < deadline) {
			PGNotification[] notifications = listener.unwrap(PGConnection.class).getNotifications(1000);
			if (notifications == null) {
				continue;
			}
			for (PGNotification notification : notifications) {
				if (notification.getName().equals(channel)) {
					if (notification.getParameter().equals(marker)) {
						return payloads;
					}
					payloads.add(notification.getParameter());
				}
			}
		}
		throw new IllegalStateException("The marker notification did not arrive within 10 s");
	}

}
