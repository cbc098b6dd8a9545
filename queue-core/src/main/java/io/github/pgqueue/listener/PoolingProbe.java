package io.github.pgqueue.listener;

import java.sql.Connection;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import javax.sql.DataSource;

/**
 * Finds out, once before the first listener starts, whether the listeners' connections go through
 * a pooler in transaction pooling (PgBouncer's {@code pool_mode = transaction}), under which a
 * client connection keeps its server session only for the length of a transaction.
 * <p>
 * Connection A runs a statement and notes its server process ({@code pg_backend_pid()}); then B,
 * a second connection, opens a transaction and notes its own while it holds it. Only a pooler
 * that hands server sessions out per transaction can give B the session that served A a moment
 * ago, or give A another one for its next statement while it stays connected: with a direct
 * connection or session pooling neither can ever happen, so the probe never refuses those. Under
 * transaction pooling B gets A's server at once when nothing else ran between (PgBouncer reuses
 * the server connection freed last first), and otherwise A's next statement shows the move; the
 * probe tries {@value #ROUNDS} times before it concludes that the sessions are kept. No timing is
 * involved.
 */
final class PoolingProbe {

	/** How many times the probe looks before it concludes that the sessions are not pooled per transaction. */
	static final int ROUNDS = 3;

	private PoolingProbe() {
	}

	/** Whether connections of {@code dataSource} change server sessions between transactions. */
	static boolean transactionPooled(DataSource dataSource) throws SQLException {
		try (Connection a = dataSource.getConnection(); Connection b = dataSource.getConnection()) {
			a.setAutoCommit(true);
			for (int round = 0; round < ROUNDS; round++) {
				int first = backendPid(a);
				boolean autoCommit = b.getAutoCommit();
				b.setAutoCommit(false);
				try {
					// B's transaction holds a server session until the rollback.
					if (backendPid(b) == first || backendPid(a) != first) {
						return true;
					}
				}
				finally {
					b.rollback();
					b.setAutoCommit(autoCommit);
				}
			}
			return false;
		}
	}

	private static int backendPid(Connection connection) throws SQLException {
		try (Statement statement = connection.createStatement();
				ResultSet rs = statement.executeQuery("SELECT pg_backend_pid()")) {
			rs.next();
			return rs.getInt(1);
		}
	}

}
