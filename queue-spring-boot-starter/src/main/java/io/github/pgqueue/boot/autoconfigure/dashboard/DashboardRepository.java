package io.github.pgqueue.boot.autoconfigure.dashboard;

import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Timestamp;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;

import io.github.pgqueue.QueueTemplate;

import org.springframework.jdbc.core.JdbcTemplate;

/**
 * The dashboard's reads of the pgqueue tables. Reads run outside any transaction; previews are
 * cut in the database so a large payload never leaves it whole.
 */
final class DashboardRepository {

	/** Characters of a payload, headers or error the dashboard shows. */
	static final int PREVIEW_CHARS = 2000;

	private final JdbcTemplate jdbc;

	private final QueueTemplate template;

	private final String queueNames;

	private final String policy;

	private final String concurrencyKeys;

	private final String countMessages;

	private final String newestMessages;

	private final String oldestMessages;

	private final String deadLetters;

	DashboardRepository(QueueTemplate template) {
		this.template = template;
		this.jdbc = new JdbcTemplate(template.context().dataSource());
		String s = "\"" + template.context().schema() + "\"";

		// Declared queues and every queue holding a message. The message queues are found by a loose
		// index scan (one index probe per distinct queue), not a DISTINCT over the whole table.
		this.queueNames = """
				WITH RECURSIVE present(queue) AS (
				    SELECT min(queue) FROM %1$s.message
				    UNION ALL
				    SELECT (SELECT min(m.queue) FROM %1$s.message m WHERE m.queue > p.queue)
				      FROM present p WHERE p.queue IS NOT NULL)
				SELECT name FROM %1$s.queue
				UNION
				SELECT queue FROM present WHERE queue IS NOT NULL
				ORDER BY 1""".formatted(s);

		// 1 queue. The stored policy; the dead-letter queue as a dead letter would find it.
		this.policy = """
				SELECT q.max_attempts, q.backoff_initial_ms, q.backoff_multiplier, q.backoff_max_ms,
				       COALESCE(q.dead_letter_queue, %1$s.default_dead_letter_queue(q.name)), q.updated_at,
				       q.deduplication_window_ms, q.retention_ms,
				       q.rate_limit_permits || CASE q.rate_limit_period_ms WHEN 1000 THEN '/s' ELSE '/m' END,
				       q.concurrency_key, q.max_in_flight_per_key
				  FROM %1$s.queue q WHERE q.name = ?""".formatted(s);

		// The queues whose messages are keyed for fair claims: the key's header and the limit per key.
		this.concurrencyKeys = """
				SELECT q.name, q.concurrency_key, q.max_in_flight_per_key
				  FROM %1$s.queue q WHERE q.concurrency_key IS NOT NULL""".formatted(s);

		// 1 queue.
		this.countMessages = "SELECT count(*) FROM %s.message WHERE queue = ?".formatted(s);

		// 1 queue, 2 limit, 3 offset. Two statements, one per order, so each follows the primary key.
		// max_attempts null means the queue's, else 5, as the claim reads it.
		String page = """
				SELECT m.id, m.queue, m.priority, m.visible_at, m.attempts,
				       COALESCE(m.max_attempts, q.max_attempts, 5), m.created_at,
				       left(m.last_error, %2$d), left(m.payload::text, %2$d), left(m.headers::text, %2$d),
				       m.group_key, m.visible_at > now(), m.visible_at = 'infinity'
				  FROM %1$s.message m LEFT JOIN %1$s.queue q ON q.name = m.queue
				 WHERE m.queue = ?
				 ORDER BY m.id %3$s
				 LIMIT ? OFFSET ?""";
		this.newestMessages = page.formatted(s, PREVIEW_CHARS, "DESC");
		this.oldestMessages = page.formatted(s, PREVIEW_CHARS, "ASC");

		// 1 dead-letter queues, 2 origin (or null: all), 3 origin, 4 limit. Dead letters carry the
		// queue they came from in a header (a parked one too, which failed again in its dead-letter queue).
		this.deadLetters = """
				SELECT m.id, m.queue, m.priority, m.visible_at, m.attempts,
				       COALESCE(m.max_attempts, q.max_attempts, 5), m.created_at,
				       left(m.last_error, %2$d), left(m.payload::text, %2$d), left(m.headers::text, %2$d),
				       m.headers->>'pgqueue-dead-lettered-from', m.visible_at > now(), m.visible_at = 'infinity'
				  FROM %1$s.message m LEFT JOIN %1$s.queue q ON q.name = m.queue
				 WHERE m.queue = ANY(?) AND jsonb_exists(m.headers, 'pgqueue-dead-lettered-from')
				   AND (?::text IS NULL OR m.headers->>'pgqueue-dead-lettered-from' = ?)
				 ORDER BY m.id DESC
				 LIMIT ?""".formatted(s, PREVIEW_CHARS);
	}

	List<String> queueNames() {
		return this.jdbc.queryForList(this.queueNames, String.class);
	}

	Optional<Policy> policy(String queue) {
		return this.jdbc.query(this.policy, (rs, row) -> new Policy(rs.getInt(1), rs.getLong(2), rs.getDouble(3),
				rs.getLong(4), rs.getString(5), instant(rs.getTimestamp(6)), (Long) rs.getObject(7), (Long) rs.getObject(8),
				rs.getString(9), rs.getString(10), (Integer) rs.getObject(11)), queue)
			.stream()
			.findFirst();
	}

	/** The concurrency key of every keyed queue, by name. */
	Map<String, ConcurrencyKey> concurrencyKeys() {
		Map<String, ConcurrencyKey> keys = new HashMap<>();
		this.jdbc.query(this.concurrencyKeys, (rs) -> {
			keys.put(rs.getString(1), new ConcurrencyKey(rs.getString(2), (Integer) rs.getObject(3)));
		});
		return keys;
	}

	long countMessages(String queue) {
		Long count = this.jdbc.queryForObject(this.countMessages, Long.class, queue);
		return (count != null) ? count : 0;
	}

	List<MessageView> messages(String queue, boolean newestFirst, int limit, int offset) {
		return this.jdbc.query(newestFirst ? this.newestMessages : this.oldestMessages,
				(rs, row) -> message(rs, rs.getString(11), null), queue, limit, offset);
	}

	List<MessageView> deadLetters(List<String> deadLetterQueues, String origin, int limit) {
		return this.jdbc.query((connection) -> {
			var ps = connection.prepareStatement(this.deadLetters);
			ps.setArray(1, connection.createArrayOf("text", deadLetterQueues.toArray()));
			ps.setString(2, origin);
			ps.setString(3, origin);
			ps.setInt(4, limit);
			return ps;
		}, (rs, row) -> message(rs, null, rs.getString(11)));
	}

	private static MessageView message(ResultSet rs, String group, String origin) throws SQLException {
		boolean parked = rs.getBoolean(13);
		return new MessageView(rs.getLong(1), rs.getString(2), rs.getInt(3),
				parked ? null : instant(rs.getTimestamp(4)), rs.getInt(5), rs.getInt(6), instant(rs.getTimestamp(7)),
				rs.getString(8), rs.getString(9), rs.getString(10), group, origin,
				parked ? "parked" : rs.getBoolean(12) ? "scheduled" : "ready");
	}

	private static String instant(Timestamp timestamp) {
		return (timestamp != null) ? timestamp.toInstant().toString() : null;
	}

	/**
	 * A queue's stored policy; {@code deduplicationWindowMs} and {@code retentionMs} null for none,
	 * {@code rateLimit} as {@code 100/s} or {@code 6000/m}, null for none; {@code concurrencyKey} the
	 * header whose value is each message's key, {@code maxInFlightPerKey} its limit, null for none.
	 */
	record Policy(int maxAttempts, long backoffInitialMs, double backoffMultiplier, long backoffMaxMs,
			String deadLetterQueue, String updatedAt, Long deduplicationWindowMs, Long retentionMs, String rateLimit,
			String concurrencyKey, Integer maxInFlightPerKey) {
	}

	/** A keyed queue's header, and its limit per key (null for none). */
	record ConcurrencyKey(String header, Integer maxInFlight) {
	}

	/**
	 * A message as the dashboard shows it: {@code group} its FIFO group, {@code origin} the queue a dead
	 * letter came from, {@code state} ready, scheduled or parked (in a dead-letter queue until a redrive).
	 */
	record MessageView(long id, String queue, int priority, String visibleAt, int attempts, int maxAttempts,
			String createdAt, String lastError, String payload, String headers, String group, String origin,
			String state) {
	}

}
