package io.github.pgqueue.internal;

import java.sql.Connection;
import java.sql.SQLException;
import java.sql.Statement;

import io.github.pgqueue.testing.Db;
import io.github.pgqueue.testing.PostgresExtension;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

import org.springframework.jdbc.core.JdbcTemplate;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatExceptionOfType;

/**
 * {@link OwnTransaction} on PostgreSQL: the work is committed or rolled back as a whole, and the
 * connection's autocommit is what it was before, whichever it was and however the work ended.
 */
@ExtendWith(PostgresExtension.class)
class OwnTransactionIntegrationTests {

	private final JdbcTemplate jdbc = Db.jdbc();

	private final StatementConnections connections = new StatementConnections();

	@BeforeEach
	void createTable() {
		this.jdbc.execute("DROP TABLE IF EXISTS own_transaction_rows");
		this.jdbc.execute("CREATE TABLE own_transaction_rows (n int)");
	}

	@AfterEach
	void dropTable() throws SQLException {
		this.connections.close();
		this.jdbc.execute("DROP TABLE own_transaction_rows");
	}

	@ParameterizedTest
	@ValueSource(booleans = { true, false })
	void commitsTheWorkAndRestoresAutocommit(boolean autoCommit) throws SQLException {
		Connection connection = this.connections.open();
		connection.setAutoCommit(autoCommit);
		int inserted = OwnTransaction.run(connection, (inTransaction) -> {
			assertThat(inTransaction.getAutoCommit()).as("autocommit while the work runs").isFalse();
			insert(inTransaction, 1);
			return insert(inTransaction, 2);
		});
		assertThat(inserted).isEqualTo(1);
		assertThat(connection.getAutoCommit()).isEqualTo(autoCommit);
		assertThat(rowsSeenElsewhere()).isEqualTo(2);
	}

	@ParameterizedTest
	@ValueSource(booleans = { true, false })
	void rollsBackAFailedStatementsTransactionAndRestoresAutocommit(boolean autoCommit) throws SQLException {
		Connection connection = this.connections.open();
		connection.setAutoCommit(autoCommit);
		assertThatExceptionOfType(SQLException.class).isThrownBy(() -> OwnTransaction.run(connection, (inTransaction) -> {
			insert(inTransaction, 1);
			try (Statement statement = inTransaction.createStatement()) {
				return statement.executeUpdate("INSERT INTO own_transaction_rows VALUES (1 / 0)");
			}
		})).withMessageContaining("division by zero");
		assertThat(connection.getAutoCommit()).isEqualTo(autoCommit);
		assertThat(rowsSeenElsewhere()).isZero();
		assertThat(insert(connection, 3)).as("the connection is usable again").isEqualTo(1);
	}

	/** An {@link Error}, such as an {@link OutOfMemoryError} in the work, also rolls back. */
	@Test
	void rollsBackWhenTheWorkThrowsAnError() throws SQLException {
		Connection connection = this.connections.open();
		assertThatExceptionOfType(AssertionError.class).isThrownBy(() -> OwnTransaction.run(connection, (inTransaction) -> {
			insert(inTransaction, 1);
			throw new AssertionError("failed in the work");
		}));
		assertThat(connection.getAutoCommit()).isTrue();
		assertThat(rowsSeenElsewhere()).isZero();
	}

	/** On a lost connection the undo fails too: the work's failure is reported, the undo's suppressed. */
	@Test
	void reportsTheWorksFailureWhenTheUndoFailsToo() throws SQLException {
		Connection connection = this.connections.open();
		assertThatExceptionOfType(IllegalStateException.class).isThrownBy(() -> OwnTransaction.run(connection, (inTransaction) -> {
			insert(inTransaction, 1);
			inTransaction.close();
			throw new IllegalStateException("connection lost");
		})).satisfies((ex) -> assertThat(ex.getSuppressed()).singleElement().isInstanceOf(SQLException.class));
		assertThat(rowsSeenElsewhere()).isZero();
	}

	private static int insert(Connection connection, int n) throws SQLException {
		try (Statement statement = connection.createStatement()) {
			return statement.executeUpdate("INSERT INTO own_transaction_rows VALUES (" + n + ")");
		}
	}

	private int rowsSeenElsewhere() {
		return this.jdbc.queryForObject("SELECT count(*) FROM own_transaction_rows", Integer.class);
	}

}
