package io.github.pgqueue.testing;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.sql.Connection;
import java.sql.SQLException;
import java.sql.Statement;

import javax.sql.DataSource;

import com.zaxxer.hikari.HikariConfig;
import com.zaxxer.hikari.HikariDataSource;
import org.flywaydb.core.Flyway;

/**
 * One real PostgreSQL per JVM (zonky's embedded binaries), with pgqueue's migrations applied.
 * It can be stopped and started again on the same data directory and port, to test recovery.
 */
public final class EmbeddedPostgres {

	private static EmbeddedPostgres instance;

	private final Path dataDirectory;

	private io.zonky.test.db.postgres.embedded.EmbeddedPostgres server;

	private int port;

	private HikariDataSource dataSource;

	private EmbeddedPostgres() throws IOException {
		this.dataDirectory = Files.createTempDirectory("pgqueue-test-pg");
		this.server = start(0);
		this.port = this.server.getPort();
		this.dataSource = pool("pgqueue-test", 48);
		migrate("pgqueue", null);
		Runtime.getRuntime().addShutdownHook(new Thread(this::shutdown, "embedded-postgres-shutdown"));
	}

	/**
	 * Creates or migrates a pgqueue schema; {@code lockNamespace} is stored in it when it is
	 * created (null: the message table's oid).
	 */
	public void migrate(String schema, Integer lockNamespace) {
		migrate(schema, lockNamespace, "latest");
	}

	/**
	 * As {@link #migrate(String, Integer)}, up to migration {@code target} ("21", say, or
	 * "latest"): the schema a release before it left, to upgrade.
	 */
	public void migrate(String schema, Integer lockNamespace, String target) {
		migrate(this.dataSource, schema, lockNamespace, target);
	}

	/** As {@link #migrate(String, Integer)}, through connections of {@code dataSource}. */
	public void migrate(DataSource dataSource, String schema, Integer lockNamespace) {
		migrate(dataSource, schema, lockNamespace, "latest");
	}

	private void migrate(DataSource dataSource, String schema, Integer lockNamespace, String target) {
		Flyway.configure()
			.dataSource(dataSource)
			.locations("classpath:db/pgqueue")
			.schemas(schema)
			.table("pgqueue_schema_history")
			.placeholders(java.util.Map.of("lockNamespace", (lockNamespace != null) ? lockNamespace.toString() : ""))
			.target(target)
			.load()
			.migrate();
	}

	/** The shared instance, started on first use. */
	public static synchronized EmbeddedPostgres get() {
		if (instance == null) {
			try {
				instance = new EmbeddedPostgres();
			}
			catch (IOException ex) {
				throw new UncheckedIOException("Could not start embedded PostgreSQL", ex);
			}
		}
		return instance;
	}

	// Never let zonky clean the data directory: it deletes it on close, and a restart must find it.
	private io.zonky.test.db.postgres.embedded.EmbeddedPostgres start(int port) throws IOException {
		var builder = io.zonky.test.db.postgres.embedded.EmbeddedPostgres.builder()
			.setDataDirectory(this.dataDirectory)
			.setCleanDataDirectory(false)
			.setServerConfig("max_connections", "300")
			.setServerConfig("fsync", "off")
			.setServerConfig("synchronous_commit", "off")
			.setServerConfig("full_page_writes", "off");
		if (port != 0) {
			builder.setPort(port);
		}
		return builder.start();
	}

	/** A pooled data source on the shared database, for tests. */
	public DataSource dataSource() {
		return this.dataSource;
	}

	/** The JDBC URL of the database, for applications under test. */
	public String jdbcUrl() {
		return "jdbc:postgresql://localhost:" + this.port + "/postgres";
	}

	/** The server's port on localhost. */
	public int port() {
		return this.port;
	}

	public String username() {
		return "postgres";
	}

	/**
	 * A new pool of at most {@code size} connections, which the caller closes; its sessions show
	 * {@code name} as {@code application_name}, so a test can terminate them.
	 */
	public HikariDataSource pool(String name, int size) {
		HikariConfig config = new HikariConfig();
		config.setPoolName(name);
		config.setJdbcUrl(jdbcUrl());
		config.setUsername(username());
		config.setMaximumPoolSize(size);
		config.setMinimumIdle(0);
		config.addDataSourceProperty("ApplicationName", name);
		return new HikariDataSource(config);
	}

	/** Deletes every message, queue and exchange definition; ids start again at 1. */
	public void reset() {
		execute("TRUNCATE pgqueue.message, pgqueue.queue, pgqueue.binding, pgqueue.exchange, pgqueue.holding, pgqueue.deduplication_key, pgqueue.archive, pgqueue.schedule, pgqueue.rate_bucket, pgqueue.key_rate_bucket RESTART IDENTITY");
	}

	/** Runs {@code sql} on a fresh connection. */
	public void execute(String sql) {
		try (Connection connection = this.dataSource.getConnection(); Statement statement = connection.createStatement()) {
			statement.execute(sql);
		}
		catch (SQLException ex) {
			throw new IllegalStateException("Test SQL failed: " + sql, ex);
		}
	}

	/** Terminates every session of {@code applicationName} and returns how many there were. */
	public int terminateSessions(String applicationName) {
		return new org.springframework.jdbc.core.JdbcTemplate(this.dataSource).queryForObject(
				"SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity WHERE application_name = ?",
				Integer.class, applicationName);
	}

	/** Stops the server (zonky stops it in fast mode) and starts it again on the same data directory and port. */
	public synchronized void restart() {
		try {
			this.server.close();
			this.server = start(this.port);
		}
		catch (IOException ex) {
			throw new UncheckedIOException("Could not restart embedded PostgreSQL", ex);
		}
		this.dataSource.getHikariPoolMXBean().softEvictConnections();
	}

	private synchronized void shutdown() {
		try {
			this.dataSource.close();
			this.server.close();
		}
		catch (IOException ex) {
			throw new UncheckedIOException(ex);
		}
	}

}
