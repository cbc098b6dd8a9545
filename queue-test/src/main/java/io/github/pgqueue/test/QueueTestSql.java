package io.github.pgqueue.test;

/**
 * The statements of {@link QueueTestSupport}, for one schema; all read-only, parameters positional.
 */
final class QueueTestSql {

	private final String count;

	private final String messages;

	QueueTestSql(String schema) {
		// The schema comes from QueueContext.schema(), validated there; quoted as pgqueue quotes it.
		String s = "\"" + schema + "\"";

		// 1 queue. Every message still in the queue, whatever its state: a held or backing-off
		// message is not done yet.
		this.count = """
				SELECT count(*) FROM %s.message WHERE queue = ?""".formatted(s);

		// 1 default max attempts, 2 queue, 3 limit (null: all). In id order, which is send order within one
		// queue; max attempts resolved as a claim resolves it (message, then queue, then default).
		this.messages = """
				SELECT m.id, m.queue, m.payload::text, m.headers::text, m.priority, m.attempts,
				       COALESCE(m.max_attempts, q.max_attempts, ?) AS max_attempts,
				       m.visible_at, m.visible_at > now() AS scheduled, NOT isfinite(m.visible_at) AS parked, m.created_at, m.last_error,
				       m.group_key, m.deduplication_key
				  FROM %1$s.message m
				  LEFT JOIN %1$s.queue q ON q.name = m.queue
				 WHERE m.queue = ?
				 ORDER BY m.id
				 LIMIT ?::bigint""".formatted(s);
	}

	String count() {
		return this.count;
	}

	String messages() {
		return this.messages;
	}

}
