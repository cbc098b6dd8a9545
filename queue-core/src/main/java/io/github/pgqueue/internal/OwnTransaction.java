package io.github.pgqueue.internal;

import java.sql.Connection;
import java.sql.SQLException;

import org.springframework.jdbc.core.ConnectionCallback;

/**
 * Work in a transaction of its own on a connection that is not in one: autocommit off, the work,
 * commit; on any failure a rollback. Either way the connection's autocommit goes back to what it
 * was, so that a borrowed connection returns to its pool as it came.
 */
final class OwnTransaction {

	private OwnTransaction() {
	}

	/**
	 * Runs {@code work} on {@code connection} in a transaction of its own and commits it. A failure
	 * of the rollback or of restoring autocommit (both fail too on a lost connection) is added to the
	 * work's failure as suppressed: the first failure is the one reported.
	 */
	static <T> T run(Connection connection, ConnectionCallback<T> work) throws SQLException {
		boolean autoCommit = connection.getAutoCommit();
		if (autoCommit) {
			connection.setAutoCommit(false);
		}
		T result;
		try {
			result = work.doInConnection(connection);
			connection.commit();
		}
		catch (SQLException | RuntimeException | Error ex) {
			try {
				connection.rollback();
				connection.setAutoCommit(autoCommit);
			}
			catch (SQLException undo) {
				ex.addSuppressed(undo);
			}
			throw ex;
		}
		connection.setAutoCommit(autoCommit);
		return result;
	}

}
