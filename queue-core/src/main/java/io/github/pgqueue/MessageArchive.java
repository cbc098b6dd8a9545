package io.github.pgqueue;

import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Timestamp;
import java.util.List;
import java.util.Objects;

import io.github.pgqueue.internal.QueueSql;

import org.springframework.jdbc.core.JdbcTemplate;

/**
 * The messages kept after they completed in queues with a
 * {@linkplain QueueDefinition#retention() retention}: acked, cancelled, purged or dead-lettered,
 * each with its outcome, attempts, last error and completion time, until its retention ends. Read
 * it with {@link #search}, send a message of it again with {@link #resend}. Archived rows are
 * written by the statement that completes the message, in its transaction, so a completion that
 * rolls back archives nothing; they live in {@code <schema>.archive}, partitioned by the day they
 * expire, whose expired partitions are dropped by the listeners' upkeep ({@link #upkeep}).
 */
public final class MessageArchive {

	private final JdbcTemplate jdbc;

	private final QueueSql sql;

	private final QueueTemplate template;

	/** The archive of {@code context}'s schema. */
	public MessageArchive(QueueContext context) {
		this.jdbc = new JdbcTemplate(context.dataSource());
		this.sql = context.sql();
		this.template = new QueueTemplate(context);
	}

	/** The archived messages that match {@code search}, newest completion first. */
	public List<ArchivedMessage> search(ArchiveSearch search) {
		Objects.requireNonNull(search, "ArchiveSearch must not be null");
		return this.jdbc.query(this.sql.archived.with(new QueueSql.Archived(search.queue(), search.id(),
				search.headerName(), search.headerValue(), search.completedFrom(), search.completedBefore(),
				search.limit())), (rs, row) -> read(rs));
	}

	/**
	 * Sends the archived message {@code id} of {@code queue} to that queue again, as a new message
	 * with its body, headers (and {@code pgqueue-resent-from} with the archived id), priority, max
	 * attempts and FIFO group, but no deduplication key. The newest copy is sent if the message
	 * was archived more than once there.
	 * @return the new message's id
	 * @throws IllegalArgumentException if the archive of {@code queue} holds no message {@code id}
	 */
	public long resend(String queue, long id) {
		QueueNames.requireQueue(queue);
		List<Long> sent = this.jdbc.execute(this.sql.resendArchived.with(new QueueSql.ResendArchived(queue, id)),
				(PreparedStatement ps) -> {
					try (ResultSet rs = ps.executeQuery()) {
						return rs.next() ? List.of(rs.getLong("id")) : List.<Long>of();
					}
				});
		if (sent == null || sent.isEmpty()) {
			throw new IllegalArgumentException("The archive of queue '" + queue + "' holds no message " + id
					+ " (never archived there, or expired)");
		}
		this.template.sent(queue, 1);
		return sent.get(0);
	}

	/**
	 * Creates the archive's day partitions ahead for the longest retention declared, and drops
	 * those whose day has passed (one {@code DROP TABLE} each). The listeners run it once an hour;
	 * declaring a queue with a retention runs it too. One process at a time does the work: a call
	 * while another runs returns at once.
	 * @return the partitions created and dropped
	 */
	public Upkeep upkeep() {
		return this.jdbc.query(this.sql.archiveUpkeep.with(new QueueSql.None()),
				(rs, row) -> new Upkeep(rs.getInt("created"), rs.getInt("dropped"))).get(0);
	}

	/**
	 * What one {@link #upkeep()} did.
	 * @param created partitions created
	 * @param dropped expired partitions dropped
	 */
	public record Upkeep(int created, int dropped) {
	}

	private static ArchivedMessage read(ResultSet rs) throws SQLException {
		int maxAttempts = rs.getInt("max_attempts");
		Integer ownMaxAttempts = rs.wasNull() ? null : maxAttempts;
		return new ArchivedMessage(rs.getLong("id"), rs.getString("queue"),
				ArchivedMessage.Outcome.of(rs.getString("outcome")), rs.getString("payload"),
				MessageHeaders.read(rs.getString("headers")), rs.getInt("priority"), rs.getInt("attempts"), ownMaxAttempts,
				rs.getString("group_key"), rs.getString("deduplication_key"), rs.getString("last_error"),
				instant(rs.getTimestamp("created_at")), instant(rs.getTimestamp("completed_at")),
				instant(rs.getTimestamp("expires_at")));
	}

	private static java.time.Instant instant(Timestamp timestamp) {
		return (timestamp != null) ? timestamp.toInstant() : null;
	}

}
