package io.github.pgqueue.internal;

import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;

import javax.sql.DataSource;

import io.github.pgqueue.QueueNames;

import org.springframework.jdbc.core.ConnectionCallback;
import org.springframework.jdbc.core.JdbcTemplate;
import org.springframework.jdbc.datasource.TransactionAwareDataSourceProxy;

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
 * spare.
 */
public final class RecordedRemovals {

	private final JdbcTemplate jdbc;

	/** Where records are written: never the caller's transaction, which may roll back. */
	private final DataSource recordSource;

	private final String record;

	/** Removals on {@code dataSource}, of the pgqueue tables in {@code schema}. */
	public RecordedRemovals(DataSource dataSource, String schema) {
		this.jdbc = new JdbcTemplate(dataSource);
		this.recordSource = (dataSource instanceof TransactionAwareDataSourceProxy proxy)
				? proxy.getTargetDataSource() : dataSource;
		this.record = "SELECT \"%s\".record_removal(?::xid8)".formatted(QueueNames.requireSchema(schema));
	}

	/** Runs {@code removal} on a connection whose transaction is recorded as a removal's first. */
	public <T> T run(ConnectionCallback<T> removal) {
		return this.jdbc.execute((Connection connection) -> {
			boolean own = connection.getAutoCommit();
			if (own) {
				connection.setAutoCommit(false);
			}
			try {
				record(currentTransaction(connection));
				T result = removal.doInConnection(connection);
				if (own) {
					connection.commit();
				}
				return result;
			}
			catch (SQLException | RuntimeException | Error ex) {
				if (own) {
					rollback(connection, ex);
				}
				throw ex;
			}
			finally {
				if (own) {
					connection.setAutoCommit(true);
				}
			}
		});
	}

	private static String currentTransaction(Connection connection) throws SQLException {
		try (PreparedStatement ps = connection.prepareStatement("SELECT pg_current_xact_id()::text");
				ResultSet rs = ps.executeQuery()) {
			rs.next();
			return rs.getString(1);
		}
	}

	private void record(String transaction) throws SQLException {
		try (Connection connection = this.recordSource.getConnection();
				PreparedStatement ps = connection.prepareStatement(this.record)) {
			ps.setString(1, transaction);
			ps.execute();
			if (!connection.getAutoCommit()) {
				connection.commit();
			}
		}
	}

	private static void rollback(Connection connection, Throwable cause) {
		try {
			connection.rollback();
		}
		catch (SQLException ex) {
			cause.addSuppressed(ex);
		}
	}

}
