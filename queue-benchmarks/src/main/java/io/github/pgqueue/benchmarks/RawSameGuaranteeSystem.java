package io.github.pgqueue.benchmarks;

import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.time.Duration;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.concurrent.Semaphore;

import io.github.pgqueue.QueueContext;
import io.github.pgqueue.internal.QueueSql;

/**
 * pgqueue's session-mode protocol without the framework: a bare JDBC loop issuing exactly the
 * statements of {@link QueueSql} (send, send batch, the claim that locks, re-checks and unlocks
 * what it skipped, the batched ack with unlock). What pgqueue adds on top of this is implementation cost.
 */
final class RawSameGuaranteeSystem extends MessageTableSystem {

	/** As the consumer session: candidates looked at beyond the batch before a priority is given up. */
	private static final int CLAIM_WINDOW = 1000;

	private static final String HEADERS = "{}";

	/** As the consumer session: claims from the head made while each one's rows were all raced. */
	private static final int RACED_CLAIM_ATTEMPTS = 3;

	private final QueueSql sql = new QueueSql("pgqueue");

	/**
	 * As pgqueue's pollers: one session at a time may take messages whose consumer died, the
	 * others claim with that parameter false.
	 */
	private final Semaphore suspects = new Semaphore(1);

	private final int namespace;

	RawSameGuaranteeSystem(BenchDatabase database) {
		super(database);
		this.namespace = (int) database.queryLong(this.sql.namespace());
	}

	@Override
	public String name() {
		return "raw-sql-same-guarantee";
	}

	@Override
	public boolean claimsInBatches() {
		return true;
	}

	@Override
	public void send(long sequence) {
		send(QUEUE, sequence, 0);
	}

	@Override
	public boolean hasQueues() {
		return true;
	}

	@Override
	public void send(String queue, long sequence) {
		send(queue, sequence, 0);
	}

	@Override
	public boolean sendsDelayed() {
		return true;
	}

	@Override
	public void sendDelayed(long sequence, Duration delay) {
		send(QUEUE, sequence, delay.toMillis());
	}

	private void send(String queue, long sequence, long delayMillis) {
		try (Connection connection = this.database.appPool().getConnection();
				PreparedStatement ps = connection.prepareStatement(this.sql.send())) {
			// 1 queue, 2 payload, 3 headers, 4 priority, 5 not-before, 6 delay ms, 7 max attempts
			ps.setString(1, queue);
			ps.setString(2, Payloads.json(sequence));
			ps.setString(3, HEADERS);
			ps.setInt(4, 0);
			ps.setNull(5, java.sql.Types.TIMESTAMP_WITH_TIMEZONE);
			ps.setLong(6, delayMillis);
			ps.setNull(7, java.sql.Types.INTEGER);
			ps.setNull(8, java.sql.Types.VARCHAR);
			try (ResultSet rs = ps.executeQuery()) {
				rs.next();
			}
		}
		catch (SQLException ex) {
			throw new IllegalStateException(ex);
		}
	}

	@Override
	public void sendBatch(long first, int count) {
		String[] payloads = new String[count];
		for (int i = 0; i < count; i++) {
			payloads[i] = Payloads.json(first + i);
		}
		try (Connection connection = this.database.appPool().getConnection();
				PreparedStatement ps = connection.prepareStatement(this.sql.sendBatch())) {
			// 1 queue, 2 headers, 3 priority, 4 not-before, 5 delay ms, 6 max attempts, 7 payloads
			ps.setString(1, QUEUE);
			ps.setString(2, HEADERS);
			ps.setInt(3, 0);
			ps.setNull(4, java.sql.Types.TIMESTAMP_WITH_TIMEZONE);
			ps.setLong(5, 0);
			ps.setNull(6, java.sql.Types.INTEGER);
			ps.setNull(7, java.sql.Types.VARCHAR);
			ps.setArray(8, connection.createArrayOf("text", payloads));
			try (ResultSet rs = ps.executeQuery()) {
				while (rs.next()) {
					rs.getLong(1);
				}
			}
		}
		catch (SQLException ex) {
			throw new IllegalStateException(ex);
		}
	}

	@Override
	public Consumers startConsumers(int concurrency, int batchSize, MessageHandler handler) {
		return new JdbcWorkers("raw-sg", this.database.consumerPool(), QUEUE, concurrency,
				(connection) -> new Session(connection, QUEUE, batchSize, handler)::poll);
	}

	@Override
	public Consumers startQueueListeners(java.util.List<String> queues, int batchSize, MessageHandler handler) {
		return new JdbcWorkers("raw-sg", this.database.consumerPool(), queues, PgQueueSystem.POLL_INTERVAL,
				(connection, queue) -> new Session(connection, queue, batchSize, handler)::poll);
	}

	/** Sleeps until the next delayed message is due, as learnt from the claim, like pgqueue's listener. */
	@Override
	public Consumers startDelayedConsumer(int batchSize, Duration pollInterval, MessageHandler handler) {
		return new JdbcWorkers("raw-sg", this.database.consumerPool(), QUEUE, 1, pollInterval,
				(connection) -> new Session(connection, QUEUE, batchSize, handler));
	}

	/**
	 * Binds pgqueue's claim (lock, re-check, list what it holds in its session's holding row,
	 * unlock what the re-check skipped), whose batch size is written into its text: 1–4 queue,
	 * 5 may take suspects, 6 namespace, 7–9 queue, 10 session key (0: none, nothing is listed),
	 * 11 namespace, 12 payload limit in bytes, 13 queue.
	 */
	static void bindClaim(PreparedStatement claim, int namespace) throws SQLException {
		bindClaim(claim, QUEUE, namespace, 0, true);
	}

	static void bindClaim(PreparedStatement claim, String queue, int namespace, long sessionKey, boolean mayTakeOpen)
			throws SQLException {
		claim.setString(1, queue);
		claim.setString(2, queue);
		claim.setString(3, queue);
		claim.setString(4, queue);
		claim.setBoolean(5, mayTakeOpen);
		claim.setInt(6, namespace);
		claim.setString(7, queue);
		claim.setString(8, queue);
		claim.setString(9, queue);
		claim.setLong(10, sessionKey);
		claim.setInt(11, namespace);
		claim.setInt(12, QueueContext.DEFAULT_MAX_PAYLOAD_BYTES);
		claim.setString(13, queue);
	}

	/**
	 * One worker's session: its backend pid guards the ack, as in pgqueue; its claims go on from
	 * where the last full one ended, and start from the front at least once a second or when one
	 * from there finds nothing, as pgqueue's do.
	 */
	private final class Session implements JdbcWorkers.Poller {

		private final Connection connection;

		private final String queue;

		private final MessageHandler handler;

		private final int pid;

		private final long sessionKey;

		private final PreparedStatement claim;

		private final PreparedStatement claimAfter;

		private final PreparedStatement ack;

		private final int batchSize;

		/** Where the last full claim ended (priority, visible_at in microseconds, id), or null. */
		private long[] cursor;

		private long headClaimedAt;

		/** How many rows the last claim locked that the re-check skipped. */
		private int raced;

		private boolean lastPollFull;

		/** What the last claim that found nothing said of the next delayed message. */
		private Duration nextDue;

		Session(Connection connection, String queue, int batchSize, MessageHandler handler) throws SQLException {
			this.connection = connection;
			this.queue = queue;
			this.handler = handler;
			try (PreparedStatement ps = connection.prepareStatement(RawSameGuaranteeSystem.this.sql.openSession());
					ResultSet rs = ps.executeQuery()) {
				rs.next();
				this.sessionKey = rs.getLong(1);
				this.pid = rs.getInt(2);
			}
			try (java.sql.Statement statement = connection.createStatement()) {
				statement.execute(QueueSql.INDEX_PLANS);
			}
			this.batchSize = batchSize;
			this.claim = connection.prepareStatement(RawSameGuaranteeSystem.this.sql.claim(batchSize));
			this.claimAfter = connection.prepareStatement(RawSameGuaranteeSystem.this.sql.claimAfter(batchSize, false));
			this.ack = connection.prepareStatement(RawSameGuaranteeSystem.this.sql.ack());
		}

		/**
		 * Binds the claim that goes on from the cursor: 1 priority, 2–4 queue, 5 may take suspects,
		 * 6 visible_at in microseconds, 7 id, then as {@link #bindClaim} from its parameter 6 on.
		 */
		private void bindClaimAfter(int namespace, boolean mayTakeOpen) throws SQLException {
			PreparedStatement ps = this.claimAfter;
			ps.setInt(1, (int) this.cursor[0]);
			ps.setString(2, this.queue);
			ps.setString(3, this.queue);
			ps.setString(4, this.queue);
			ps.setBoolean(5, mayTakeOpen);
			ps.setLong(6, this.cursor[1]);
			ps.setLong(7, this.cursor[2]);
			ps.setInt(8, namespace);
			ps.setString(9, this.queue);
			ps.setString(10, this.queue);
			ps.setString(11, this.queue);
			ps.setLong(12, this.sessionKey);
			ps.setInt(13, namespace);
			ps.setInt(14, QueueContext.DEFAULT_MAX_PAYLOAD_BYTES);
			ps.setString(15, this.queue);
		}

		@Override
		public int poll() throws SQLException {
			int ns = RawSameGuaranteeSystem.this.namespace;
			Map<Long, String> claimed = new LinkedHashMap<>();
			boolean mayTakeOpen = RawSameGuaranteeSystem.this.suspects.tryAcquire();
			try {
				// As pgqueue: a claim whose rows were all being completed by others is made again.
				for (int i = 0; i < RACED_CLAIM_ATTEMPTS && claimed.isEmpty() && (i == 0 || this.raced > 0); i++) {
					if (this.cursor != null && System.nanoTime() - this.headClaimedAt < 1_000_000_000L) {
						bindClaimAfter(ns, mayTakeOpen);
						claim(this.claimAfter, claimed);
						if (!claimed.isEmpty() || this.raced > 0) {
							continue;
						}
					}
					bindClaim(this.claim, this.queue, ns, this.sessionKey, mayTakeOpen);
					this.headClaimedAt = System.nanoTime();
					claim(this.claim, claimed);
				}
			}
			finally {
				if (mayTakeOpen) {
					RawSameGuaranteeSystem.this.suspects.release();
				}
			}
			this.lastPollFull = claimed.size() == this.batchSize;
			for (String payload : claimed.values()) {
				this.handler.onMessage(Payloads.sequence(payload));
			}
			if (!claimed.isEmpty()) {
				// ack: 1 ids, 2 their queue, 3 pid, 4 namespace, 5 session key
				this.ack.setArray(1, this.connection.createArrayOf("bigint", claimed.keySet().toArray(new Long[0])));
				this.ack.setString(2, this.queue);
				this.ack.setInt(3, this.pid);
				this.ack.setInt(4, ns);
				this.ack.setLong(5, this.sessionKey);
				try (ResultSet rs = this.ack.executeQuery()) {
					while (rs.next()) {
						rs.getLong(1);
					}
				}
			}
			return claimed.size();
		}

		@Override
		public boolean tookFullBatch() {
			return this.lastPollFull;
		}

		/** Runs a claim, adding what it took to {@code claimed}; keeps the cursor of a full one. */
		private void claim(PreparedStatement claim, Map<Long, String> claimed) throws SQLException {
			this.nextDue = null;
			this.raced = 0;
			long[] last = null;
			try (ResultSet rs = claim.executeQuery()) {
				while (rs.next()) {
					if (rs.getObject(1) == null) {
						// The row a claim that found nothing adds: column 15, ms until the next delayed message.
						long millis = rs.getLong(15);
						this.nextDue = rs.wasNull() ? null : Duration.ofMillis(Math.max(0, millis));
						continue;
					}
					// Columns 16 and 17: the place of every chosen row (null for one left because a
					// suspect was claimed alone); the cursor goes on after the last.
					boolean chosen = rs.getObject(16) != null;
					long[] place = { rs.getInt(16), rs.getLong(17), rs.getLong(1) };
					if (chosen && (last == null || java.util.Arrays.compare(place, last) > 0)) {
						last = place;
					}
					// Column 5 (priority) is null for a row the re-check found gone; it is already unlocked.
					if (rs.getObject(5) != null) {
						claimed.put(rs.getLong(1), rs.getString(3));
					}
					else if (chosen) {
						this.raced++;
					}
				}
			}
			this.cursor = (claimed.size() + this.raced == this.batchSize) ? last : null;
		}

		@Override
		public Duration nextDue() {
			return this.nextDue;
		}

	}

}
