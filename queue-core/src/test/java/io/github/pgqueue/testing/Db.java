package io.github.pgqueue.testing;

import java.time.Duration;
import java.util.List;

import org.springframework.jdbc.core.JdbcTemplate;

import static org.awaitility.Awaitility.await;

/**
 * The small reads of the shared {@link EmbeddedPostgres} that integration tests check their
 * outcome with: how many messages a queue holds, which queue a message is in now, why it last
 * failed, how many advisory locks are held. They live here rather than as a private copy in each
 * test class, so that a change to the schema is made once and every test reads the same thing.
 * <p>
 * Each read goes through a {@link JdbcTemplate} on the shared pool, as the copies it replaces did:
 * it sees what is committed, or joins the Spring-managed transaction a test has open on that
 * pool. Meant to be imported statically.
 */
public final class Db {

	/**
	 * How long {@link #terminateBackend(int)} waits for a session to go: generous, because a
	 * machine shared with other builds can be slow, and a session that is gone ends the wait at once.
	 */
	private static final Duration TIMEOUT = Duration.ofSeconds(30);

	private Db() {
	}

	/** A {@link JdbcTemplate} on the shared database, for a test's own statements. */
	public static JdbcTemplate jdbc() {
		return new JdbcTemplate(EmbeddedPostgres.get().dataSource());
	}

	/** The number of messages in {@code queue}, delayed and claimed ones included. */
	public static long count(String queue) {
		return jdbc().queryForObject("SELECT count(*) FROM pgqueue.message WHERE queue = ?", Long.class, queue);
	}

	/** The number of messages in every queue. */
	public static long count() {
		return jdbc().queryForObject("SELECT count(*) FROM pgqueue.message", Long.class);
	}

	/**
	 * The number that {@code sql}, a query of one row and one number such as a {@code count(*)},
	 * returns with {@code args} bound to its parameters.
	 */
	public static long queryForLong(String sql, Object... args) {
		return jdbc().queryForObject(sql, Long.class, args);
	}

	/**
	 * The number of advisory locks held or awaited in the whole database, by every session: pgqueue
	 * holds one per claimed message, so zero says that nothing is claimed or left behind.
	 */
	public static long advisoryLocks() {
		return queryForLong("SELECT count(*) FROM pg_locks WHERE locktype = 'advisory'");
	}

	/** The queue message {@code id} is in now, or null once it is removed. */
	public static String queueOf(long id) {
		List<String> queues = jdbc().queryForList("SELECT queue FROM pgqueue.message WHERE id = ?", String.class, id);
		return queues.isEmpty() ? null : queues.get(0);
	}

	/** The error that message {@code id}'s last failed attempt recorded, or null if none did. */
	public static String lastError(long id) {
		return jdbc().queryForObject("SELECT last_error FROM pgqueue.message WHERE id = ?", String.class, id);
	}

	/**
	 * Terminates the server session {@code pid}, as a crash or a network cut would, and waits until
	 * the server has let it go: only then are its advisory locks released, so a test that goes on
	 * before would race the server's clean-up.
	 */
	public static void terminateBackend(int pid) {
		jdbc().queryForObject("SELECT pg_terminate_backend(?)", Boolean.class, pid);
		await().atMost(TIMEOUT).pollInterval(Duration.ofMillis(10))
			.until(() -> queryForLong("SELECT count(*) FROM pg_stat_activity WHERE pid = ?", pid) == 0);
	}

}
