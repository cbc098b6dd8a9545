package io.github.pgqueue.test;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.sql.Connection;
import java.sql.SQLException;
import java.sql.Statement;
import java.util.concurrent.atomic.AtomicInteger;

import io.zonky.test.db.postgres.embedded.EmbeddedPostgres;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The one embedded PostgreSQL of this JVM, started on first use; zonky's shutdown hook stops it
 * and deletes its data directory when the JVM exits.
 */
final class SharedPostgres {

	private static final Logger logger = LoggerFactory.getLogger(SharedPostgres.class);

	private static final String USERNAME = "postgres";

	// Cached test contexts keep their pools and listener connections open until the JVM exits,
	// so the server allows far more than PostgreSQL's default of 100.
	private static final String MAX_CONNECTIONS = "300";

	private static SharedPostgres instance;

	private final EmbeddedPostgres server;

	private final AtomicInteger databases = new AtomicInteger();

	private SharedPostgres(EmbeddedPostgres server) {
		this.server = server;
	}

	/** The shared server, started on the first call. */
	static synchronized SharedPostgres get() {
		if (instance == null) {
			instance = new SharedPostgres(start());
			logger.info("Started an embedded PostgreSQL for tests on port {}", instance.server.getPort());
		}
		return instance;
	}

	// Durability settings off: test data is thrown away with the JVM, and they make commits cheap.
	private static EmbeddedPostgres start() {
		try {
			return EmbeddedPostgres.builder()
				.setRegisterShutdownHook(true)
				.setServerConfig("max_connections", MAX_CONNECTIONS)
				.setServerConfig("fsync", "off")
				.setServerConfig("synchronous_commit", "off")
				.setServerConfig("full_page_writes", "off")
				.start();
		}
		catch (IOException ex) {
			throw new UncheckedIOException("Could not start the embedded PostgreSQL of @EmbeddedPgQueue (zonky's "
					+ "binaries for this platform must be on the test classpath)", ex);
		}
	}

	/** Creates a new, empty database on the server. */
	Database createDatabase() {
		String name = "pgqueue_test_" + this.databases.incrementAndGet();
		try (Connection connection = this.server.getPostgresDatabase().getConnection();
				Statement statement = connection.createStatement()) {
			statement.execute("CREATE DATABASE " + name);
		}
		catch (SQLException ex) {
			throw new IllegalStateException("Could not create database " + name + " on the embedded PostgreSQL at port "
					+ this.server.getPort(), ex);
		}
		return new Database(this.server.getJdbcUrl(USERNAME, name), USERNAME);
	}

	/** The port the server listens on. */
	int port() {
		return this.server.getPort();
	}

	/** How many databases {@link #createDatabase()} has created. */
	int databasesCreated() {
		return this.databases.get();
	}

	/**
	 * A database of the shared server.
	 * @param jdbcUrl its JDBC URL
	 * @param username the user to connect as (no password)
	 */
	record Database(String jdbcUrl, String username) {
	}

}
