package io.github.pgqueue.benchmarks;

import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.time.Duration;
import java.time.OffsetDateTime;
import java.time.ZoneOffset;
import java.util.List;

/**
 * The physical limit: the best plain SQL on pgqueue's own table. A single {@code INSERT} per send,
 * a multi-row {@code INSERT} per batch, and receive + ack in one delete-on-read statement
 * (at-most-once: a consumer that dies after it loses the batch). Delayed messages are inserted with
 * their {@code visible_at}, and their consumer sleeps until the next one is due.
 * <p>
 * The receive runs one of two ways ({@link Planning}): {@code raw-sql} claims as pgqueue claims
 * (the batch size a literal, one generic plan per connection, sequential scans off, going on after
 * the last full batch), {@code raw-sql-planned} receives from the front with the batch size bound
 * and leaves planning to PostgreSQL's default, which plans it again at every call. The drain
 * scenario measures both and says which is faster.
 */
final class RawSqlSystem extends MessageTableSystem {

	/** How a consumer's receive is planned. */
	enum Planning {

		/**
		 * {@code raw-sql}: the batch size written into the statement as a literal, and the
		 * consumer's connection set to one generic plan per prepared statement and no sequential
		 * scans, as pgqueue's consumers are: planned once per connection. Like pgqueue's pollers, a
		 * consumer goes on from where its last full batch ended, and from the front at least once
		 * a second: a receive from the front would walk again the index entries of the rows just
		 * deleted, which only vacuum removes.
		 */
		GENERIC("raw-sql"),

		/**
		 * {@code raw-sql-planned}: {@code LIMIT ?} bound at every call under the server's default
		 * settings. PostgreSQL's generic plan of it is estimated for an unknown limit and looks
		 * dearer than a custom one, so the statement is planned anew at every call.
		 */
		PER_CALL("raw-sql-planned");

		private final String systemName;

		Planning(String systemName) {
			this.systemName = systemName;
		}

	}

	private static final String INSERT_ONE = "INSERT INTO pgqueue.message (queue, payload) VALUES (?, ?::jsonb)";

	/**
	 * The receive with its batch size as a literal ({@code %d}, written once per batch size), going
	 * on after a place in the queue's order (priority, visible_at, id): after the last row of the
	 * consumer's last full batch, or before the first row there can be (the front). ORDER BY follows
	 * the claim index (queue, priority, visible_at, id), which is pgqueue's own delivery order, so
	 * the row comparison starts the index scan at the place; "ORDER BY priority, id" would have to
	 * sort every visible row of a priority. The ids go to the DELETE as an array, as in pgqueue's
	 * claims: its one generic plan then looks them up by primary key whatever the table held when it
	 * was planned (an IN semi-join planned on an empty table scans the whole table at every call).
	 */
	private static final String RECEIVE_LITERAL = """
			DELETE FROM pgqueue.message
			 WHERE id = ANY (ARRAY(SELECT id FROM pgqueue.message
			                        WHERE queue = ? AND visible_at <= now()
			                          AND (priority, visible_at, id) > (?, ?, ?)
			                        ORDER BY priority, visible_at, id
			                        LIMIT %d FOR UPDATE SKIP LOCKED))
			RETURNING priority, visible_at, id, payload::text""";

	/** A place before every message: the receive goes from the front. */
	private static final int FRONT_PRIORITY = Integer.MIN_VALUE;

	private static final OffsetDateTime FRONT_VISIBLE_AT = OffsetDateTime.of(1970, 1, 1, 0, 0, 0, 0, ZoneOffset.UTC);

	/** As pgqueue's pollers: a receive goes from the front at least this often. */
	private static final long FRONT_INTERVAL_NANOS = 1_000_000_000L;

	/** The same receive with the batch size bound as the second parameter. */
	private static final String RECEIVE_BOUND = """
			DELETE FROM pgqueue.message
			 WHERE id IN (SELECT id FROM pgqueue.message
			               WHERE queue = ? AND visible_at <= now()
			               ORDER BY priority, visible_at, id
			               LIMIT ? FOR UPDATE SKIP LOCKED)
			RETURNING payload::text""";

	/** A {@link Planning#GENERIC} consumer's session settings, the ones pgqueue's consumers run under. */
	private static final String GENERIC_PLANS = "SET enable_seqscan = off; SET plan_cache_mode = force_generic_plan";

	private static final String DEFAULT_PLANS = "RESET enable_seqscan; RESET plan_cache_mode";

	private static final String INSERT_DELAYED = """
			INSERT INTO pgqueue.message (queue, payload, visible_at)
			VALUES (?, ?::jsonb, now() + ? * interval '1 millisecond')""";

	// Asked only after a receive found nothing; rounded up, so that the worker wakes when the
	// message is visible, not just before. Served by the claim index (queue, priority, visible_at).
	private static final String NEXT_DUE = """
			SELECT ceil(extract(epoch FROM min(visible_at) - now()) * 1000)::bigint
			  FROM pgqueue.message
			 WHERE queue = ? AND visible_at > now()""";

	private final String[] multiRowInserts = new String[1001];

	private final Planning planning;

	RawSqlSystem(BenchDatabase database, Planning planning) {
		super(database);
		this.planning = planning;
	}

	@Override
	public String name() {
		return this.planning.systemName;
	}

	/** {@code raw-sql-planned} is only there to be compared with {@code raw-sql} in the drain. */
	@Override
	public boolean drainOnly() {
		return this.planning == Planning.PER_CALL;
	}

	@Override
	public boolean claimsInBatches() {
		return true;
	}

	@Override
	public void send(long sequence) {
		send(QUEUE, sequence);
	}

	@Override
	public boolean hasQueues() {
		return true;
	}

	@Override
	public void send(String queue, long sequence) {
		try (Connection connection = this.database.appPool().getConnection();
				PreparedStatement ps = connection.prepareStatement(INSERT_ONE)) {
			ps.setString(1, queue);
			ps.setString(2, Payloads.json(sequence));
			ps.executeUpdate();
		}
		catch (SQLException ex) {
			throw new IllegalStateException(ex);
		}
	}

	@Override
	public void sendBatch(long first, int count) {
		try (Connection connection = this.database.appPool().getConnection();
				PreparedStatement ps = connection.prepareStatement(multiRowInsert(count))) {
			for (int i = 0; i < count; i++) {
				ps.setString(2 * i + 1, QUEUE);
				ps.setString(2 * i + 2, Payloads.json(first + i));
			}
			ps.executeUpdate();
		}
		catch (SQLException ex) {
			throw new IllegalStateException(ex);
		}
	}

	private String multiRowInsert(int count) {
		String sql = this.multiRowInserts[count];
		if (sql == null) {
			StringBuilder builder = new StringBuilder("INSERT INTO pgqueue.message (queue, payload) VALUES ");
			for (int i = 0; i < count; i++) {
				builder.append((i == 0) ? "" : ", ").append("(?, ?::jsonb)");
			}
			sql = builder.toString();
			this.multiRowInserts[count] = sql;
		}
		return sql;
	}

	@Override
	public boolean sendsDelayed() {
		return true;
	}

	@Override
	public void sendDelayed(long sequence, Duration delay) {
		try (Connection connection = this.database.appPool().getConnection();
				PreparedStatement ps = connection.prepareStatement(INSERT_DELAYED)) {
			ps.setString(1, QUEUE);
			ps.setString(2, Payloads.json(sequence));
			ps.setLong(3, delay.toMillis());
			ps.executeUpdate();
		}
		catch (SQLException ex) {
			throw new IllegalStateException(ex);
		}
	}

	@Override
	public Consumers startConsumers(int concurrency, int batchSize, MessageHandler handler) {
		return new JdbcWorkers(name(), this.database.consumerPool(), QUEUE, concurrency,
				(connection) -> poller(connection, QUEUE, batchSize, handler));
	}

	@Override
	public Consumers startQueueListeners(List<String> queues, int batchSize, MessageHandler handler) {
		return new JdbcWorkers(name(), this.database.consumerPool(), queues, PgQueueSystem.POLL_INTERVAL,
				(connection, queue) -> poller(connection, queue, batchSize, handler));
	}

	/**
	 * The best plain SQL for delayed messages: after a receive that found nothing, one more
	 * statement asks when the next message falls due, and the worker sleeps until then (or the poll
	 * interval, or a notification), as pgqueue's listener does.
	 */
	@Override
	public Consumers startDelayedConsumer(int batchSize, Duration pollInterval, MessageHandler handler) {
		return new JdbcWorkers(name(), this.database.consumerPool(), QUEUE, 1, pollInterval, (connection) -> {
			JdbcWorkers.Poller receive = poller(connection, QUEUE, batchSize, handler);
			PreparedStatement nextDue = connection.prepareStatement(NEXT_DUE);
			return new JdbcWorkers.Poller() {

				@Override
				public int poll() throws SQLException {
					return receive.poll();
				}

				@Override
				public Duration nextDue() throws SQLException {
					nextDue.setString(1, QUEUE);
					try (ResultSet rs = nextDue.executeQuery()) {
						rs.next();
						long millis = rs.getLong(1);
						return rs.wasNull() ? null : Duration.ofMillis(Math.max(0, millis));
					}
				}

				@Override
				public void close() throws SQLException {
					nextDue.close();
					receive.close();
				}

			};
		});
	}

	private JdbcWorkers.Poller poller(Connection connection, String queue, int batchSize, MessageHandler handler)
			throws SQLException {
		if (this.planning == Planning.PER_CALL) {
			PreparedStatement receive = connection.prepareStatement(RECEIVE_BOUND);
			return new JdbcWorkers.Poller() {

				@Override
				public int poll() throws SQLException {
					receive.setString(1, queue);
					receive.setInt(2, batchSize);
					int handled = 0;
					try (ResultSet rs = receive.executeQuery()) {
						while (rs.next()) {
							handler.onMessage(Payloads.sequence(rs.getString(1)));
							handled++;
						}
					}
					return handled;
				}

				@Override
				public void close() throws SQLException {
					receive.close();
				}

			};
		}
		try (Statement statement = connection.createStatement()) {
			statement.execute(GENERIC_PLANS);
		}
		return new GenericReceive(connection, connection.prepareStatement(RECEIVE_LITERAL.formatted(batchSize)), queue,
				batchSize, handler);
	}

	/** A {@code raw-sql} consumer's receive, with the place its next one goes on from. */
	private static final class GenericReceive implements JdbcWorkers.Poller {

		private final Connection connection;

		private final PreparedStatement receive;

		private final String queue;

		private final int batchSize;

		private final MessageHandler handler;

		private int afterPriority = FRONT_PRIORITY;

		private OffsetDateTime afterVisibleAt = FRONT_VISIBLE_AT;

		private long afterId;

		private long frontAt;

		GenericReceive(Connection connection, PreparedStatement receive, String queue, int batchSize,
				MessageHandler handler) {
			this.connection = connection;
			this.receive = receive;
			this.queue = queue;
			this.batchSize = batchSize;
			this.handler = handler;
		}

		@Override
		public int poll() throws SQLException {
			boolean front = this.afterPriority == FRONT_PRIORITY
					|| System.nanoTime() - this.frontAt >= FRONT_INTERVAL_NANOS;
			if (front) {
				this.afterPriority = FRONT_PRIORITY;
				this.afterVisibleAt = FRONT_VISIBLE_AT;
				this.afterId = 0;
				this.frontAt = System.nanoTime();
			}
			this.receive.setString(1, this.queue);
			this.receive.setInt(2, this.afterPriority);
			this.receive.setObject(3, this.afterVisibleAt);
			this.receive.setLong(4, this.afterId);
			int handled = 0;
			int lastPriority = 0;
			OffsetDateTime lastVisibleAt = null;
			long lastId = 0;
			try (ResultSet rs = this.receive.executeQuery()) {
				while (rs.next()) {
					// RETURNING gives the rows in no order: the place goes on after the greatest.
					int priority = rs.getInt(1);
					OffsetDateTime visibleAt = rs.getObject(2, OffsetDateTime.class);
					long id = rs.getLong(3);
					if (lastVisibleAt == null || priority > lastPriority || (priority == lastPriority
							&& (visibleAt.isAfter(lastVisibleAt) || (visibleAt.isEqual(lastVisibleAt) && id > lastId)))) {
						lastPriority = priority;
						lastVisibleAt = visibleAt;
						lastId = id;
					}
					this.handler.onMessage(Payloads.sequence(rs.getString(4)));
					handled++;
				}
			}
			if (handled == this.batchSize) {
				this.afterPriority = lastPriority;
				this.afterVisibleAt = lastVisibleAt;
				this.afterId = lastId;
			}
			else if (!front) {
				// Found less than a batch after the place: the next receive goes from the front.
				this.afterPriority = FRONT_PRIORITY;
				return (handled > 0) ? handled : poll();
			}
			else {
				this.afterPriority = FRONT_PRIORITY;
			}
			return handled;
		}

		@Override
		public boolean tookFullBatch() {
			return this.afterPriority != FRONT_PRIORITY;
		}

		@Override
		public void close() throws SQLException {
			this.receive.close();
			try (Statement statement = this.connection.createStatement()) {
				statement.execute(DEFAULT_PLANS);
			}
		}

	}

}
