package io.github.pgqueue.reliability;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.SQLException;
import java.sql.Statement;
import java.time.Duration;
import java.util.Comparator;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.function.Consumer;
import java.util.stream.Stream;

import io.zonky.test.db.postgres.embedded.EmbeddedPostgres;
import org.flywaydb.core.Flyway;

import org.springframework.util.FileSystemUtils;

/**
 * A PostgreSQL of one scenario's own, on zonky's embedded binaries (the same as the shared
 * server's, so nothing needs to be installed): a data directory of its own, a port, settings given
 * at start. Unlike the shared server it may be killed outright, made a standby of another, or
 * promoted. Its data directory is deleted on {@link #close()}.
 */
final class ScenarioServer implements AutoCloseable {

	private static final String USER = "postgres";

	private final String name;

	private final Path dataDirectory;

	private final Map<String, String> settings;

	/** What is done to the data directory before each start (after initdb on the first): it must be idempotent. */
	private final Consumer<Path> afterInitdb;

	private EmbeddedPostgres server;

	private int port;

	private ScenarioServer(String name, Path dataDirectory, Map<String, String> settings, Consumer<Path> afterInitdb) {
		this.name = name;
		this.dataDirectory = dataDirectory;
		this.settings = settings;
		this.afterInitdb = afterInitdb;
	}

	/**
	 * Runs initdb in a new data directory and starts the server with {@code settings} besides the
	 * suite's (commits are synchronous; fsync is off, since no test crashes the machine).
	 */
	static ScenarioServer initialize(String name, Map<String, String> settings) {
		try {
			return new ScenarioServer(name, Files.createTempDirectory("pgqueue-" + name), settings, (path) -> {
			}).start();
		}
		catch (IOException ex) {
			throw new UncheckedIOException("Could not create a data directory for " + name, ex);
		}
	}

	/**
	 * Runs initdb in {@code dataDirectory} (which must not exist yet), then {@code afterInitdb} on it
	 * (again before every later start, so it must be idempotent), and starts the server as
	 * {@link #initialize(String, Map)} does.
	 */
	static ScenarioServer initialize(String name, Path dataDirectory, Map<String, String> settings,
			Consumer<Path> afterInitdb) {
		return new ScenarioServer(name, dataDirectory, settings, afterInitdb).start();
	}

	/** Starts a server on a data directory prepared by the caller (a base backup). */
	static ScenarioServer onDataDirectory(String name, Path dataDirectory, Map<String, String> settings) {
		return new ScenarioServer(name, dataDirectory, settings, (path) -> {
		}).start();
	}

	private ScenarioServer start() {
		Map<String, String> all = new LinkedHashMap<>();
		all.put("max_connections", "200");
		all.put("fsync", "off");
		all.put("synchronous_commit", "on");
		all.putAll(this.settings);
		EmbeddedPostgres.Builder builder = EmbeddedPostgres.builder()
			.setDataDirectory(this.dataDirectory)
			.setCleanDataDirectory(false)
			.setPGStartupWait(Duration.ofSeconds(60))
			.setDataDirectoryCustomizer((directory) -> this.afterInitdb.accept(directory.toPath()));
		if (this.port != 0) {
			builder.setPort(this.port);
		}
		all.forEach(builder::setServerConfig);
		try {
			this.server = builder.start();
			this.port = this.server.getPort();
		}
		catch (IOException ex) {
			throw new UncheckedIOException("Could not start PostgreSQL " + this.name + " on " + this.dataDirectory, ex);
		}
		return this;
	}

	String name() {
		return this.name;
	}

	int port() {
		return this.port;
	}

	Path dataDirectory() {
		return this.dataDirectory;
	}

	String username() {
		return USER;
	}

	/** The URL of this server's {@code postgres} database on {@code host}. */
	String jdbcUrl(String host) {
		return "jdbc:postgresql://" + host + ":" + port() + "/postgres";
	}

	/** Applies pgqueue's migrations, as the starter does (lock namespace from the table's oid). */
	void migrate() {
		Flyway.configure()
			.dataSource(jdbcUrl("localhost"), USER, null)
			.locations("classpath:db/pgqueue")
			.schemas("pgqueue")
			.table("pgqueue_schema_history")
			.placeholders(Map.of("lockNamespace", ""))
			.load()
			.migrate();
	}

	/** Runs {@code sql} on a connection of its own, as the superuser. */
	void execute(String sql) {
		try (Connection connection = connect(); Statement statement = connection.createStatement()) {
			statement.execute(sql);
		}
		catch (SQLException ex) {
			throw new IllegalStateException("SQL on " + this.name + " failed: " + sql, ex);
		}
	}

	/** A new connection as the superuser, which the caller closes. */
	Connection connect() throws SQLException {
		return DriverManager.getConnection(jdbcUrl("localhost") + "?ApplicationName=chaos-" + this.name, USER, "");
	}

	/** Appends {@code line} to {@code pg_hba.conf} and makes the server read it again. */
	void allow(String line) {
		try {
			Files.writeString(this.dataDirectory.resolve("pg_hba.conf"), "\n" + line + "\n",
					java.nio.file.StandardOpenOption.APPEND);
		}
		catch (IOException ex) {
			throw new UncheckedIOException(ex);
		}
		execute("SELECT pg_reload_conf()");
	}

	/**
	 * Kills the postmaster and every backend with SIGKILL at once, as a machine that dies would end
	 * them: nothing is flushed or sent, no backend finishes its statement.
	 */
	void kill() {
		long postmaster;
		try {
			postmaster = Long.parseLong(Files.readAllLines(this.dataDirectory.resolve("postmaster.pid")).get(0).trim());
		}
		catch (IOException ex) {
			throw new UncheckedIOException("Cannot read the postmaster's pid of " + this.name, ex);
		}
		ProcessHandle handle = ProcessHandle.of(postmaster)
			.orElseThrow(() -> new IllegalStateException("No postmaster " + postmaster + " for " + this.name));
		List<ProcessHandle> all = Stream.concat(Stream.of(handle), handle.descendants()).toList();
		// The postmaster first: a backend that outlived it by a moment could still answer a client.
		all.forEach((process) -> Signals.send("KILL", process.pid()));
		all.forEach((process) -> process.onExit().join());
	}

	/** Whether the postmaster runs: it may have shut itself down (a startup that failed). */
	boolean isRunning() {
		try {
			long postmaster = Long.parseLong(Files.readAllLines(this.dataDirectory.resolve("postmaster.pid")).get(0).trim());
			return ProcessHandle.of(postmaster).map(ProcessHandle::isAlive).orElse(false);
		}
		catch (IOException | RuntimeException ex) {
			// No pid file (it is removed at shut-down) or an empty one: no postmaster.
			return false;
		}
	}

	/**
	 * Starts the server again on its data directory and port, as a service manager would after it
	 * stopped by itself (crash recovery runs); a server still running is stopped first.
	 */
	void restart() {
		try {
			this.server.close();
		}
		catch (IOException | RuntimeException ex) {
			// A server that shut itself down has nothing left to stop.
		}
		start();
	}

	/**
	 * Stops PostgreSQL in immediate mode (SIGQUIT to the postmaster: every backend exits at once,
	 * the next start runs crash recovery), runs {@code whileDown}, then starts it again on the same
	 * data directory, port and settings.
	 */
	void crashAndRestart(Runnable whileDown) {
		long postmaster = postmasterPid();
		Signals.send("QUIT", postmaster);
		ProcessHandle.of(postmaster).ifPresent((process) -> process.onExit().join());
		whileDown.run();
		restart();
	}

	private long postmasterPid() {
		try {
			return Long.parseLong(Files.readAllLines(this.dataDirectory.resolve("postmaster.pid")).get(0).trim());
		}
		catch (IOException ex) {
			throw new UncheckedIOException("Cannot read the postmaster's pid of " + this.name, ex);
		}
	}

	@Override
	public void close() {
		try {
			this.server.close();
		}
		catch (IOException | RuntimeException ex) {
			// A killed server has nothing left to stop; its data directory goes all the same.
		}
		FileSystemUtils.deleteRecursively(this.dataDirectory.toFile());
	}

	/** Copies a data directory file by file, skipping what {@code skip} says, and missing files. */
	static void copyTree(Path from, Path to, java.util.function.Predicate<Path> skip) throws IOException {
		try (Stream<Path> paths = Files.walk(from)) {
			for (Path path : paths.sorted(Comparator.naturalOrder()).toList()) {
				Path relative = from.relativize(path);
				if (skip.test(relative)) {
					continue;
				}
				Path target = to.resolve(relative.toString());
				try {
					if (Files.isDirectory(path)) {
						Files.createDirectories(target);
					}
					else {
						Files.copy(path, target);
					}
				}
				catch (java.nio.file.NoSuchFileException ex) {
					// Removed while the copy ran (a temporary file); the WAL replay does not need it.
				}
			}
		}
	}

}
