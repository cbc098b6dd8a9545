package io.github.pgqueue.test;

import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Timestamp;
import java.time.Duration;
import java.time.Instant;
import java.util.List;
import java.util.Map;

import io.github.pgqueue.MessageHeaders;
import io.github.pgqueue.PayloadConversionException;
import io.github.pgqueue.PayloadConverter;
import io.github.pgqueue.QueueDefinition;
import io.github.pgqueue.QueueNames;
import io.github.pgqueue.QueueStats;
import io.github.pgqueue.QueueAdmin;
import io.github.pgqueue.QueueTemplate;

import org.springframework.jdbc.core.JdbcTemplate;

/**
 * Waits for queues and reads what they hold, for tests of an application that uses pgqueue. With
 * {@link EmbeddedPgQueue} it is a bean of the test's context; elsewhere, create one from the
 * application's {@link QueueTemplate}. Failures are {@link AssertionError}s that list what is left.
 */
public final class QueueTestSupport {

	// Often enough that a test goes on soon after its queue drains; a poll is one indexed count.
	private static final Duration POLL_INTERVAL = Duration.ofMillis(25);

	// A failure message lists this many messages and counts the rest.
	private static final int LISTED_MESSAGES = 10;

	// ...and shows this much of each payload.
	private static final int PAYLOAD_PREVIEW_CHARS = 200;

	private final QueueTemplate template;

	private final QueueAdmin admin;

	private final JdbcTemplate jdbc;

	private final QueueTestSql sql;

	/** Support for the queues of {@code template}'s schema, read through its data source and payload converter. */
	public QueueTestSupport(QueueTemplate template) {
		this.template = template;
		this.admin = new QueueAdmin(template.context());
		this.jdbc = new JdbcTemplate(template.context().dataSource());
		this.sql = new QueueTestSql(template.context().schema());
	}

	/**
	 * Waits until {@code queue} holds no message: none waiting, delayed, backing off after a
	 * failure, or held by a consumer. Its dead letters are in another queue and do not count.
	 * @throws AssertionError if messages are still there after {@code timeout}, listing them
	 * (id, attempts, state, last error, the start of the payload)
	 */
	public void awaitDrained(String queue, Duration timeout) {
		QueueNames.requireQueue(queue);
		long deadline = System.nanoTime() + timeout.toNanos();
		while (count(queue) > 0) {
			if (System.nanoTime() - deadline >= 0) {
				throw new AssertionError(notDrained(queue, timeout));
			}
			try {
				Thread.sleep(POLL_INTERVAL.toMillis());
			}
			catch (InterruptedException ex) {
				Thread.currentThread().interrupt();
				throw new IllegalStateException("Interrupted while waiting for queue '" + queue + "' to drain", ex);
			}
		}
	}

	/**
	 * The messages in {@code queue} now, in the order they were sent, with their payloads read
	 * as {@code payloadType}: what was sent and is not yet acked or dead-lettered. To assert on
	 * what a test sent, keep that queue's listeners from consuming it
	 * ({@code @QueueListener(autoStartup = "${...}")}).
	 * @throws AssertionError if a payload cannot be read as {@code payloadType}, naming the message
	 * ({@code Object.class} reads any payload)
	 */
	public <T> List<StoredMessage<T>> sent(String queue, Class<T> payloadType) {
		QueueNames.requireQueue(queue);
		return this.jdbc.query(this.sql.messages(), (rs, row) -> message(rs, payloadType),
				QueueDefinition.DEFAULT_MAX_ATTEMPTS, queue, null);
	}

	/**
	 * The messages in the dead-letter queue of {@code queue} (its configured one, else
	 * {@code <queue>.dlq}), oldest first; {@link StoredMessage#lastError()} says why each failed.
	 * @throws AssertionError if a payload cannot be read as {@code payloadType}, naming the message
	 */
	public <T> List<StoredMessage<T>> deadLetters(String queue, Class<T> payloadType) {
		QueueNames.requireQueue(queue);
		return sent(this.admin.deadLetterQueueOf(queue), payloadType);
	}

	private long count(String queue) {
		Long count = this.jdbc.queryForObject(this.sql.count(), Long.class, queue);
		return (count != null) ? count : 0;
	}

	private String notDrained(String queue, Duration timeout) {
		QueueStats stats = this.template.stats(queue);
		List<String> listed = this.jdbc.query(this.sql.messages(), (rs, row) -> describe(rs),
				QueueDefinition.DEFAULT_MAX_ATTEMPTS, queue, LISTED_MESSAGES);
		long left = count(queue);
		StringBuilder message = new StringBuilder("Queue '").append(queue)
			.append("' was not drained within ")
			.append(timeout)
			.append(": ")
			.append(left)
			.append((left == 1) ? " message" : " messages")
			.append(" left (")
			.append(stats.ready())
			.append(" ready, ")
			.append(stats.scheduled())
			.append(" delayed or backing off, ")
			.append(stats.inFlight())
			.append(" held by a consumer)");
		listed.forEach((line) -> message.append(System.lineSeparator()).append("  ").append(line));
		if (left > listed.size()) {
			message.append(System.lineSeparator()).append("  ... and ").append(left - listed.size()).append(" more");
		}
		return message.toString();
	}

	private static String describe(ResultSet rs) throws SQLException {
		StringBuilder line = new StringBuilder("id ").append(rs.getLong("id"))
			.append(", attempts ")
			.append(rs.getInt("attempts"))
			.append(" of ")
			.append(rs.getInt("max_attempts"));
		if (rs.getBoolean("parked")) {
			line.append(", parked until a redrive");
		}
		else if (rs.getBoolean("scheduled")) {
			line.append(", visible at ").append(instant(rs, "visible_at"));
		}
		String lastError = rs.getString("last_error");
		if (lastError != null) {
			line.append(", last error: ").append(lastError);
		}
		String payload = rs.getString("payload");
		line.append(", payload ")
			.append((payload.length() > PAYLOAD_PREVIEW_CHARS) ? payload.substring(0, PAYLOAD_PREVIEW_CHARS) + "..."
					: payload);
		return line.toString();
	}

	private <T> StoredMessage<T> message(ResultSet rs, Class<T> payloadType) throws SQLException {
		long id = rs.getLong("id");
		String queue = rs.getString("queue");
		Map<String, String> headers = MessageHeaders.read(rs.getString("headers"));
		T payload;
		try {
			payload = payloadType.cast(this.template.context().payloadConverter().read(rs.getString("payload"), payloadType,
					headers.get(PayloadConverter.CONTENT_TYPE_HEADER)));
		}
		catch (PayloadConversionException | ClassCastException ex) {
			throw new AssertionError("Message " + id + " of queue '" + queue + "': " + ex.getMessage()
					+ " (Object.class reads any payload)", ex);
		}
		return new StoredMessage<>(id, queue, payload, headers, rs.getInt("priority"),
				rs.getInt("attempts"), rs.getBoolean("parked") ? Instant.MAX : instant(rs, "visible_at"), instant(rs, "created_at"), rs.getString("last_error"),
				rs.getString("group_key"), rs.getString("deduplication_key"));
	}

	private static Instant instant(ResultSet rs, String column) throws SQLException {
		Timestamp timestamp = rs.getTimestamp(column);
		return (timestamp != null) ? timestamp.toInstant() : null;
	}

}
