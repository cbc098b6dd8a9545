package io.github.pgqueue.benchmarks;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.HashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Properties;

import javax.sql.DataSource;

import com.zaxxer.hikari.HikariConfig;
import com.zaxxer.hikari.HikariDataSource;
import io.zonky.test.db.postgres.embedded.EmbeddedPostgres;
import org.flywaydb.core.Flyway;

import org.springframework.jdbc.core.JdbcTemplate;

/**
 * The one embedded PostgreSQL of a run, with pgqueue's migrations applied, the pools every system
 * shares, and the statistics queries the scenarios read.
 */
final class BenchDatabase implements AutoCloseable {

	/** The application name of {@link #pressureConnection()}s. */
	static final String PRESSURE_APPLICATION = "bench-pressure";

	private final EmbeddedPostgres server;

	private final String jdbcUrl;

	private final HikariDataSource appPool;

	private final HikariDataSource consumerPool;

	private final HikariDataSource adminPool;

	private final JdbcTemplate admin;

	/**
	 * Which statements {@code pg_stat_statements} counts but while {@link #statementsDuring} does:
	 * all, those run inside functions too, for the probe (a claim's listed_by_the_dead is one);
	 * otherwise none, so that the other figures are taken without it.
	 */
	private final String tracking;

	private BenchDatabase(EmbeddedPostgres server, boolean recordStatements) {
		this.server = server;
		this.tracking = recordStatements ? "all" : "none";
		this.jdbcUrl = "jdbc:postgresql://localhost:" + server.getPort() + "/postgres";
		this.appPool = pool("bench-app", 24, false);
		// One session per listener thread: many-queues runs 500 listeners in one JVM.
		this.consumerPool = pool("bench-consumers", 600, false);
		this.adminPool = pool("bench-admin", 4, true);
		this.admin = new JdbcTemplate(this.adminPool);
		Flyway.configure()
			.dataSource(this.adminPool)
			.locations("classpath:db/pgqueue")
			.schemas("pgqueue")
			.table("pgqueue_schema_history")
			.placeholders(java.util.Map.of("lockNamespace", ""))
			.load()
			.migrate();
	}

	/**
	 * Starts the server with the settings of the project's test database: durability is off, so
	 * the figures measure CPU and locking rather than this machine's disk. {@code pg_stat_statements}
	 * is loaded, to count queries in {@link #statementsDuring}; with {@code recordStatements} it
	 * records every statement, those run inside functions too, for {@link #busiestStatements}.
	 */
	static BenchDatabase start(boolean recordStatements) {
		try {
			EmbeddedPostgres.Builder builder = EmbeddedPostgres.builder()
				.setServerConfig("max_connections", "700")
				.setServerConfig("fsync", "off")
				.setServerConfig("synchronous_commit", "off")
				.setServerConfig("full_page_writes", "off")
				.setServerConfig("shared_preload_libraries", "pg_stat_statements")
				// Queries only, not BEGIN, COMMIT or SET.
				.setServerConfig("pg_stat_statements.track_utility", "off")
				// Enough never to evict a statement: an evicted one takes its calls with it.
				.setServerConfig("pg_stat_statements.max", "10000");
			BenchDatabase database = new BenchDatabase(builder.start(), recordStatements);
			try {
				database.execute("CREATE EXTENSION pg_stat_statements");
				database.track(database.tracking);
			}
			catch (RuntimeException ex) {
				database.close();
				throw ex;
			}
			return database;
		}
		catch (IOException ex) {
			throw new UncheckedIOException("Could not start embedded PostgreSQL", ex);
		}
	}

	private HikariDataSource pool(String name, int size, boolean batchedInserts) {
		return pool(name, "postgres", size, batchedInserts);
	}

	/** A pool of {@code size} connections logged in as {@code role}, for the caller to close. */
	HikariDataSource poolAs(String role, int size) {
		return pool("bench-" + role, role, size, false);
	}

	private HikariDataSource pool(String name, String user, int size, boolean batchedInserts) {
		HikariConfig config = new HikariConfig();
		config.setPoolName(name);
		config.setJdbcUrl(this.jdbcUrl);
		config.setUsername(user);
		config.setMaximumPoolSize(size);
		config.setMinimumIdle(0);
		config.addDataSourceProperty("ApplicationName", name);
		if (batchedInserts) {
			// Only the admin pool bulk-loads backlogs; the systems measured keep the driver's defaults.
			config.addDataSourceProperty("reWriteBatchedInserts", "true");
		}
		return new HikariDataSource(config);
	}

	String jdbcUrl() {
		return this.jdbcUrl;
	}

	String username() {
		return "postgres";
	}

	/** Where producers take their connections, as an application's own pool would. */
	DataSource appPool() {
		return this.appPool;
	}

	/** Where consumers take theirs: one connection per consumer thread, plus LISTEN connections. */
	DataSource consumerPool() {
		return this.consumerPool;
	}

	/**
	 * Opens {@code connections} connections in the consumer pool ahead, one after the other, so
	 * that hundreds of listeners starting at once do not wait for the pool to open them.
	 */
	void openConsumerConnections(int connections) {
		java.util.List<java.sql.Connection> opened = new java.util.ArrayList<>();
		try {
			for (int i = 0; i < connections; i++) {
				opened.add(this.consumerPool.getConnection());
			}
		}
		catch (java.sql.SQLException ex) {
			throw new IllegalStateException("Could not open " + connections + " consumer connections", ex);
		}
		finally {
			for (java.sql.Connection connection : opened) {
				try {
					connection.close();
				}
				catch (java.sql.SQLException ex) {
					// back in the pool or gone: either way not ours any more
				}
			}
		}
	}

	/** For setup, bulk loads and statistics; never used by a system under measurement. */
	DataSource adminPool() {
		return this.adminPool;
	}

	JdbcTemplate admin() {
		return this.admin;
	}

	void execute(String sql) {
		this.admin.execute(sql);
	}

	long queryLong(String sql, Object... args) {
		Long value = this.admin.queryForObject(sql, Long.class, args);
		return (value != null) ? value : 0L;
	}

	String serverVersion() {
		return this.admin.queryForObject("SHOW server_version", String.class);
	}

	/**
	 * The queries run in this database during the next {@code millis}, top-level, as
	 * {@code pg_stat_statements} counts them: each as it ends, where {@code pg_stat_database} may
	 * hear of a backend's commits up to a minute late. The readings themselves are left out.
	 */
	StatementsRun statementsDuring(long millis) {
		Map<String, Long> before;
		Map<String, Long> after;
		track("top");
		try {
			BenchContext.pause(1_000); // for the server to signal every backend
			before = statementCalls();
			BenchContext.pause(millis);
			after = statementCalls();
		}
		finally {
			track(this.tracking);
		}
		Map<String, Long> run = new HashMap<>();
		after.forEach((query, calls) -> {
			long delta = calls - before.getOrDefault(query, 0L);
			if (delta > 0 && !query.contains("pg_stat_statements")) {
				run.put(query, delta);
			}
		});
		List<String> busiest = run.entrySet()
			.stream()
			.sorted(Map.Entry.<String, Long>comparingByValue(Comparator.reverseOrder()))
			.limit(3)
			.map((entry) -> "calls=" + entry.getValue() + " " + head(entry.getKey()))
			.toList();
		return new StatementsRun(run.values().stream().mapToLong(Long::longValue).sum(), busiest);
	}

	/**
	 * Sets which statements {@code pg_stat_statements} counts, server-wide: in the configuration
	 * (a setting on the server's command line would hide it), reloaded. A backend reads the new
	 * setting before its next command, however long it was idle.
	 */
	private void track(String statements) {
		execute("ALTER SYSTEM SET pg_stat_statements.track = '" + statements + "'");
		execute("SELECT pg_reload_conf()");
	}

	/** The first 100 characters of {@code query}, each run of white space made one space. */
	private static String head(String query) {
		String line = query.replaceAll("\\s+", " ");
		return line.substring(0, Math.min(100, line.length()));
	}

	private Map<String, Long> statementCalls() {
		Map<String, Long> calls = new HashMap<>();
		String sql = "SELECT query, sum(calls)::bigint FROM pg_stat_statements WHERE toplevel"
				+ " AND dbid = (SELECT oid FROM pg_database WHERE datname = current_database()) GROUP BY query";
		try (Connection connection = this.appPool.getConnection();
				Statement statement = connection.createStatement();
				ResultSet rows = statement.executeQuery(sql)) {
			while (rows.next()) {
				calls.put(rows.getString(1), rows.getLong(2));
			}
		}
		catch (SQLException ex) {
			throw new IllegalStateException("Could not read pg_stat_statements", ex);
		}
		return calls;
	}

	/**
	 * Queries run in a window of time.
	 * @param statements how many, in all
	 * @param busiest the three run most often: how often, and the start of the query
	 */
	record StatementsRun(long statements, List<String> busiest) {
	}

	/** Forgets the statements recorded so far (a server started to record them). */
	void forgetStatements() {
		execute("SELECT pg_stat_statements_reset()");
	}

	/**
	 * The statements that took the most of the server's time since {@link #forgetStatements()}: how
	 * often each ran, its time in all and on average, and its shared buffers read, one line each.
	 */
	List<String> busiestStatements(int limit) {
		String sql = "SELECT calls, total_exec_time, mean_exec_time, shared_blks_hit + shared_blks_read,"
				+ " left(regexp_replace(query, '\\s+', ' ', 'g'), 120) FROM pg_stat_statements"
				+ " ORDER BY total_exec_time DESC LIMIT " + limit;
		List<String> lines = new ArrayList<>();
		try (Connection connection = this.appPool.getConnection();
				Statement statement = connection.createStatement();
				ResultSet rows = statement.executeQuery(sql)) {
			while (rows.next()) {
				lines.add(String.format(Locale.ROOT, "calls=%d total_ms=%.0f mean_ms=%.3f buffers=%d %s", rows.getLong(1),
						rows.getDouble(2), rows.getDouble(3), rows.getLong(4), rows.getString(5)));
			}
		}
		catch (SQLException ex) {
			throw new IllegalStateException("Could not read pg_stat_statements", ex);
		}
		return lines;
	}

	/**
	 * The consumer sessions' table as the server sees it now: its pages, live and dead rows, and
	 * its updates so far, of which HOT; one line, for the {@code probe} option.
	 */
	String holdingTable() {
		this.admin.execute("SELECT pg_stat_clear_snapshot()");
		return this.admin.queryForObject("SELECT format('holding: pages=%s live=%s dead=%s updates=%s hot=%s',"
				+ " pg_relation_size(relid) / current_setting('block_size')::int, n_live_tup, n_dead_tup,"
				+ " n_tup_upd, n_tup_hot_upd) FROM pg_stat_user_tables WHERE schemaname = 'pgqueue' AND relname = 'holding'",
				String.class);
	}

	/** Transactions committed in this database so far, as the statistics collector last saw them. */
	long committedTransactions() {
		this.admin.execute("SELECT pg_stat_clear_snapshot()");
		return queryLong("SELECT xact_commit FROM pg_stat_database WHERE datname = current_database()");
	}

	/** Heap, indexes and TOAST of {@code table}, in bytes. */
	long totalSize(String table) {
		return queryLong("SELECT pg_total_relation_size(?::regclass)", table);
	}

	long deadTuples(String table) {
		this.admin.execute("SELECT pg_stat_clear_snapshot()");
		return queryLong("SELECT COALESCE(n_dead_tup, 0) FROM pg_stat_all_tables WHERE relid = ?::regclass", table);
	}

	/**
	 * A connection of its own outside the pools, named {@value #PRESSURE_APPLICATION} so that wait
	 * samples leave it out: for the sessions a scenario adds to put the systems under pressure.
	 */
	Connection pressureConnection() throws SQLException {
		Properties properties = new Properties();
		properties.setProperty("user", username());
		properties.setProperty("ApplicationName", PRESSURE_APPLICATION);
		return DriverManager.getConnection(this.jdbcUrl, properties);
	}

	/**
	 * What the active client backends wait on right now, other than the benchmark's own
	 * statistics and pressure sessions: {@code type:event}, or {@code CPU} for one running.
	 */
	List<String> waitSample() {
		return this.admin.queryForList("""
				SELECT COALESCE(wait_event_type || ':' || wait_event, 'CPU') FROM pg_stat_activity
				 WHERE state = 'active' AND backend_type = 'client backend' AND pid <> pg_backend_pid()
				   AND application_name NOT IN ('bench-admin', ?)""", String.class, PRESSURE_APPLICATION);
	}

	/** Leaves {@code table} as a freshly loaded table is in production: visible to index-only scans, analyzed. */
	void vacuumAnalyze(String table) {
		this.admin.execute("VACUUM ANALYZE " + table);
	}

	/** Vacuums {@code system}'s tables ({@link QueueSystem#tables()}). */
	void vacuumAnalyze(QueueSystem system) {
		system.tables().forEach(this::vacuumAnalyze);
	}

	@Override
	public void close() {
		this.appPool.close();
		this.consumerPool.close();
		this.adminPool.close();
		try {
			this.server.close();
		}
		catch (IOException ex) {
			throw new UncheckedIOException(ex);
		}
	}

}
