package io.github.pgqueue.internal;

import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;

import java.util.function.Supplier;

import javax.sql.DataSource;

import org.springframework.jdbc.core.ConnectionCallback;
import org.springframework.jdbc.core.JdbcTemplate;
import org.springframework.jdbc.datasource.ConnectionProxy;
import org.springframework.jdbc.datasource.TransactionAwareDataSourceProxy;
import org.springframework.transaction.support.TransactionSynchronizationManager;

/**
 * Runs pgqueue's removals of messages (cancel, purge, redrive) so that one that rolls back is not
 * taken for a transactional consumer that died. Both leave their aborted transaction in the lock
 * marker of the rows they touched, and a claim counts a dead consumer's lost attempt from it; so a
 * removal first records its transaction, committed on a connection of its own, and a claim leaves
 * a recorded transaction uncounted ({@code consumer_aborted} in
 * {@code V19__own_holding_rows_and_undone_removals.sql}).
 * <p>
 * A removal runs in the caller's transaction when there is one (a Spring-managed transaction on
 * the data source, or a connection not in autocommit mode), else in a transaction of its own. The
 * record takes a second connection from the data source for a moment: a pool must have one to
 * spare (it waits for one as long as the pool lets it). Not recorded: a removal made in a
 * transactional consumer's own transaction (see {@link #asConsumer}), and the changes of a
 * removal made inside a savepoint, which carry the savepoint's transaction id.
 */
public final class RecordedRemovals {

	private final JdbcTemplate jdbc;

	/** The key of the connection of the transactional consumer's batch running on this thread. */
	private static final Object CONSUMER_CONNECTION = new Object();

	/** Where records are written: never the caller's transaction, which may roll back. */
	private final DataSource recordSource;

	private final QueueSql sql;

	/** Removals on {@code dataSource}, of the pgqueue tables of {@code sql}'s schema. */
	public RecordedRemovals(DataSource dataSource, QueueSql sql) {
		this.jdbc = new JdbcTemplate(dataSource);
		DataSource target = dataSource;
		while (target instanceof TransactionAwareDataSourceProxy proxy && proxy.getTargetDataSource() != null) {
			target = proxy.getTargetDataSource();
		}
		this.recordSource = target;
		this.sql = sql;
	}

	/**
	 * Runs {@code work}, a transactional consumer's batch in the transaction of {@code connection}:
	 * a removal a handler makes in that transaction is not recorded, since the transaction is also
	 * the consumer's, whose death must count (it costs the removed messages an attempt if the
	 * transaction aborts).
	 */
	public static <T> T asConsumer(Connection connection, Supplier<T> work) {
		TransactionSynchronizationManager.bindResource(CONSUMER_CONNECTION, connection);
		try {
			return work.get();
		}
		finally {
			TransactionSynchronizationManager.unbindResource(CONSUMER_CONNECTION);
		}
	}

	/** Runs {@code removal} on a connection whose transaction is recorded as a removal's first. */
	public <T> T run(ConnectionCallback<T> removal) {
		return this.jdbc.execute((Connection connection) -> {
			Connection target = (connection instanceof ConnectionProxy proxy) ? proxy.getTargetConnection() : connection;
			if (target == TransactionSynchronizationManager.getResource(CONSUMER_CONNECTION)) {
				return removal.doInConnection(connection);
			}
			if (!connection.getAutoCommit()) {
				record(currentTransaction(connection));
				return removal.doInConnection(connection);
			}
			return OwnTransaction.run(connection, (inTransaction) -> {
				record(currentTransaction(inTransaction));
				return removal.doInConnection(inTransaction);
			});
		});
	}

	private String currentTransaction(Connection connection) throws SQLException {
		try (PreparedStatement ps = this.sql.currentTransaction.prepare(connection, new QueueSql.None());
				ResultSet rs = ps.executeQuery()) {
			rs.next();
			return rs.getString("xid");
		}
	}

	private void record(String transaction) throws SQLException {
		try (Connection connection = this.recordSource.getConnection();
				PreparedStatement ps = this.sql.recordRemoval.prepare(connection, new QueueSql.RecordRemoval(transaction))) {
			ps.execute();
			if (!connection.getAutoCommit()) {
				connection.commit();
			}
		}
		catch (SQLException ex) {
			throw new SQLException("Could not record transaction " + transaction + " as a removal's on a second "
					+ "connection of the data source (nothing was removed; if the pool is exhausted, give it one more "
					+ "connection): " + ex.getMessage(), ex.getSQLState(), ex);
		}
	}

}
