package io.github.pgqueue.reliability;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.Collection;
import java.util.HashSet;
import java.util.List;
import java.util.Set;

import com.zaxxer.hikari.HikariConfig;
import com.zaxxer.hikari.HikariDataSource;
import io.github.pgqueue.QueueTemplate;
import io.github.pgqueue.test.QueueTestSupport;
import io.github.pgqueue.testing.EmbeddedPostgres;
import org.awaitility.core.ConditionTimeoutException;

import org.springframework.core.io.ClassPathResource;
import org.springframework.jdbc.core.JdbcTemplate;

import static org.awaitility.Awaitility.await;

/**
 * The one PostgreSQL of the suite (queue-core's {@link EmbeddedPostgres}, pgqueue's migrations
 * applied) with the suite's {@code chaos} schema, and the database side of every fault: which
 * claims a session holds, terminating sessions, and crashing the server. The server is queue-core's
 * rather than queue-test's because the suite restarts and crashes it on its data directory.
 * Scenarios that need a server of their own (a replicated pair, a server reachable from a network
 * namespace) use {@link #on(String, String)} with a URL of that server.
 */
final class ChaosDatabase implements AutoCloseable {

	private static ChaosDatabase instance;

	/** The shared server, or null for a database of a scenario's own server. */
	private final EmbeddedPostgres postgres;

	/** The URL without {@code ApplicationName}: one host, or several with {@code targetServerType}. */
	private final String url;

	private final String username;

	private final HikariDataSource pool;

	private final JdbcTemplate jdbc;

	private final QueueTestSupport queues;

	private ChaosDatabase() {
		this.postgres = EmbeddedPostgres.get();
		this.url = this.postgres.jdbcUrl();
		this.username = this.postgres.username();
		// The embedded server runs with synchronous_commit off for speed. A crash would then lose
		// commits that clients were told about (sends, deliveries, acks) and the count would blame
		// pgqueue for it: every session the suite and its consumers open commits synchronously.
		this.postgres.execute("ALTER DATABASE postgres SET synchronous_commit = on");
		this.pool = this.postgres.pool("chaos-harness", 8);
		this.jdbc = new JdbcTemplate(this.pool);
		this.queues = initialize();
	}

	private ChaosDatabase(String url, String username) {
		this.postgres = null;
		this.url = url;
		this.username = username;
		this.pool = pool("chaos-harness", 8);
		this.jdbc = new JdbcTemplate(this.pool);
		this.jdbc.execute("ALTER DATABASE postgres SET synchronous_commit = on");
		this.pool.getHikariPoolMXBean().softEvictConnections();
		this.queues = initialize();
	}

	/** Checks that sessions commit synchronously and creates the suite's schema. */
	private QueueTestSupport initialize() {
		String commit = this.jdbc.queryForObject("SHOW synchronous_commit", String.class);
		if (!"on".equals(commit)) {
			throw new IllegalStateException("Sessions must commit synchronously, but synchronous_commit is " + commit);
		}
		this.jdbc.execute(resource("chaos/schema.sql"));
		return new QueueTestSupport(template());
	}

	static synchronized ChaosDatabase get() {
		if (instance == null) {
			instance = new ChaosDatabase();
		}
		return instance;
	}

	/**
	 * The suite's view of a database of another server, whose pgqueue migrations are applied; the
	 * caller closes it. {@code url} may name several hosts ({@code targetServerType=primary}).
	 */
	static ChaosDatabase on(String url, String username) {
		return new ChaosDatabase(url, username);
	}

	/** The URL consumers connect with; their sessions show {@code applicationName}. */
	String jdbcUrl(String applicationName) {
		return this.url + (this.url.contains("?") ? "&" : "?") + "ApplicationName=" + applicationName;
	}

	String username() {
		return this.username;
	}

	/** The port of the shared server on localhost. */
	int port() {
		if (this.postgres == null) {
			throw new IllegalStateException("Only the shared server's port is known: this one is " + this.url);
		}
		return this.postgres.port();
	}

	JdbcTemplate jdbc() {
		return this.jdbc;
	}

	/** A new pool, which the caller closes. */
	HikariDataSource pool(String applicationName, int size) {
		if (this.postgres != null) {
			return this.postgres.pool(applicationName, size);
		}
		HikariConfig config = new HikariConfig();
		config.setPoolName(applicationName);
		config.setJdbcUrl(jdbcUrl(applicationName));
		config.setUsername(this.username);
		config.setMaximumPoolSize(size);
		config.setMinimumIdle(0);
		return new HikariDataSource(config);
	}

	/** A template on the harness's pool. */
	QueueTemplate template() {
		return QueueTemplate.builder(this.pool).build();
	}

	/** queue-test's support on the harness's pool: waiting for a queue to drain, reading dead letters. */
	QueueTestSupport queues() {
		return this.queues;
	}

	/** Empties pgqueue's tables (ids start again at 1) and the suite's. */
	void reset() {
		if (this.postgres != null) {
			this.postgres.reset();
		}
		else {
			this.jdbc.execute("TRUNCATE pgqueue.message, pgqueue.queue, pgqueue.binding, pgqueue.exchange, "
					+ "pgqueue.holding, pgqueue.deduplication_key, pgqueue.archive, pgqueue.schedule, pgqueue.rate_bucket, pgqueue.key_rate_bucket RESTART IDENTITY");
		}
		this.jdbc.execute("TRUNCATE chaos.delivery, chaos.fault, chaos.consumer, chaos.effect");
	}

	/** Makes the next message id {@code id}. */
	void restartIdsAt(long id) {
		this.jdbc.queryForObject("SELECT setval(pg_get_serial_sequence('pgqueue.message', 'id'), ?, false)",
				Long.class, id);
	}

	long count(String sql, Object... args) {
		Long count = this.jdbc.queryForObject(sql, Long.class, args);
		return (count != null) ? count : 0;
	}

	/** Messages of {@code queue} not yet acked or dead-lettered. */
	long pending(String queue) {
		return count("SELECT count(*) FROM pgqueue.message WHERE queue = ?", queue);
	}

	/** Advisory locks of pgqueue's lock namespace held by any session right now. */
	long advisoryLocks() {
		return count("""
				SELECT count(*) FROM pg_locks
				 WHERE locktype = 'advisory' AND objsubid = 2
				   AND classid = 'pgqueue.message'::regclass::oid""");
	}

	/**
	 * Waits up to {@code timeout} for pgqueue's advisory locks to be gone (a claim that finds a
	 * row gone holds its lock for one more statement) and returns how many are left.
	 */
	long awaitNoAdvisoryLocks(Duration timeout) {
		try {
			await().atMost(timeout).pollInterval(Duration.ofMillis(50)).until(() -> advisoryLocks() == 0);
		}
		catch (ConditionTimeoutException ex) {
			// Not an error here: what is left is returned and reported as locks_left.
			return advisoryLocks();
		}
		return 0;
	}

	/** How many handlers of consumer {@code name} have started and not ended, as its deliveries say. */
	long handlersRunningIn(String name) {
		return count("SELECT count(*) FROM chaos.delivery WHERE consumer = ? AND ended_at IS NULL", name);
	}

	/** How many messages the sessions of {@code applicationName} hold claimed right now. */
	long claimsOf(String applicationName) {
		return count("SELECT count(*) FROM chaos.held_by(chaos.backends_of(?))", applicationName);
	}

	/**
	 * Messages listed in {@code pgqueue.holding} (the ids each consumer session holds): none may be
	 * left once a queue is drained, whatever happened to the sessions that listed them.
	 */
	long heldIdsLeft() {
		return count("SELECT count(*) FROM pgqueue.holding h, unnest(h.ids) AS i");
	}

	/** Drops the harness's connections, so that the next ones go to the server that is primary now. */
	void reconnect() {
		this.pool.getHikariPoolMXBean().softEvictConnections();
	}

	/** Closes the harness's pool of a scenario's own server; the shared one stays open. */
	@Override
	public void close() {
		if (this.postgres == null) {
			this.pool.close();
		}
	}

	/**
	 * Waits until every backend of {@code applicationName} has finished its statement; if one does
	 * not, fails saying what those backends are doing and waiting for.
	 */
	void awaitIdle(String applicationName) {
		try {
			await().atMost(Duration.ofSeconds(20)).pollInterval(Duration.ofMillis(10))
				.until(() -> count("SELECT count(*) FROM pg_stat_activity WHERE application_name = ? AND state = 'active'",
						applicationName) == 0);
		}
		catch (ConditionTimeoutException ex) {
			List<String> active = this.jdbc.queryForList("""
					SELECT format('pid %s %s, waiting for %s/%s, blocked by %s, %s s: %s', a.pid, a.state,
					              a.wait_event_type, a.wait_event, pg_blocking_pids(a.pid),
					              round(extract(epoch FROM now() - a.query_start)::numeric, 1), left(a.query, 300))
					  FROM pg_stat_activity a WHERE a.application_name = ?""", String.class, applicationName);
			throw new AssertionError("The backends of " + applicationName + " did not become idle within 20 s: "
					+ active, ex);
		}
	}

	/**
	 * Records the claims held by the sessions of {@code applicationName} as faulted and, if asked,
	 * terminates those sessions. The sessions must be idle (their JVM stopped).
	 * @return the number of sessions terminated
	 */
	int faultSessions(String applicationName, String reason, boolean terminate) {
		Integer terminated = this.jdbc.queryForObject("SELECT chaos.fault_backends(chaos.backends_of(?), ?, ?)",
				Integer.class, applicationName, reason, terminate);
		return (terminated != null) ? terminated : 0;
	}

	/**
	 * Records the current attempt of every message still in the table as faulted: all sessions
	 * died. A claim writes nothing on its messages, so which of them were held is not known here;
	 * a message that was not is delivered for the first time later and needs no explaining.
	 */
	void faultEveryClaim(String reason) {
		this.jdbc.update("INSERT INTO chaos.fault (message_id, attempt, reason) "
				+ "SELECT id, attempts + 1, ? FROM pgqueue.message", reason);
	}

	/** The keys among {@code keys} that reached the database: a message row or a delivery. */
	Set<Long> keysPresent(Collection<Long> keys) {
		List<Long> present = this.jdbc.queryForList("""
				SELECT k FROM unnest(?::bigint[]) AS k
				 WHERE EXISTS (SELECT 1 FROM pgqueue.message m WHERE chaos.key_of(m.payload, m.headers) = k)
				    OR EXISTS (SELECT 1 FROM chaos.delivery d WHERE d.key = k)""", Long.class,
				(Object) keys.toArray(new Long[0]));
		return new HashSet<>(present);
	}

	/**
	 * Stops PostgreSQL in immediate mode (SIGQUIT to the postmaster: every backend exits at once,
	 * nothing is flushed, the next start runs crash recovery), runs {@code whileDown}, then starts
	 * it again on the same data directory and port.
	 */
	void crashAndRestart(Runnable whileDown) {
		if (this.postgres == null) {
			throw new IllegalStateException("Only the shared server is crashed and restarted here");
		}
		Path dataDirectory = Path.of(this.jdbc.queryForObject("SHOW data_directory", String.class));
		long postmaster = postmasterPid(dataDirectory);
		Signals.send("QUIT", postmaster);
		await().atMost(Duration.ofSeconds(30)).pollInterval(Duration.ofMillis(20))
			.until(() -> ProcessHandle.of(postmaster).map((p) -> !p.isAlive()).orElse(true));
		whileDown.run();
		// Its stop finds no server to stop (and logs so); its start runs the crash recovery.
		this.postgres.restart();
		this.pool.getHikariPoolMXBean().softEvictConnections();
	}

	private static long postmasterPid(Path dataDirectory) {
		try {
			return Long.parseLong(Files.readAllLines(dataDirectory.resolve("postmaster.pid")).get(0).trim());
		}
		catch (IOException ex) {
			throw new UncheckedIOException("Cannot read the postmaster's pid in " + dataDirectory, ex);
		}
	}

	/**
	 * Sleeps until {@code window} has passed since {@code startedNanos} ({@link System#nanoTime()}),
	 * or not at all when it has already: faults can outlast a scenario's window on a loaded machine.
	 */
	static void pauseUntilEnd(Duration window, long startedNanos) {
		Duration left = window.minusNanos(System.nanoTime() - startedNanos);
		if (!left.isNegative()) {
			pause(left);
		}
	}

	static void pause(Duration duration) {
		try {
			Thread.sleep(duration.toMillis());
		}
		catch (InterruptedException ex) {
			Thread.currentThread().interrupt();
			throw new IllegalStateException("Interrupted", ex);
		}
	}

	private static String resource(String path) {
		try {
			return new ClassPathResource(path).getContentAsString(StandardCharsets.UTF_8);
		}
		catch (IOException ex) {
			throw new UncheckedIOException(ex);
		}
	}

}
