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
import io.github.pgqueue.internal.NamedStatement;
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

	private final QueueSql sql = QueueSql.of("pgqueue");

	/**
	 * As pgqueue's pollers: one session at a time may take messages whose consumer died, the
	 * others claim with that parameter false.
	 */
	private final Semaphore suspects = new Semaphore(1);

	private final int namespace;

	RawSameGuaranteeSystem(BenchDatabase database) {
		super(database);
		this.namespace = (int) database.queryLong(this.sql.namespace.sql());
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
				PreparedStatement ps = this.sql.send.prepare(connection, new QueueSql.Send(queue, Payloads.json(sequence),
						HEADERS, 0, null, delayMillis, null, null, null))) {
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
				PreparedStatement ps = this.sql.sendBatch.prepare(connection,
						new QueueSql.SendBatch(QUEUE, HEADERS, 0, null, 0, null, null, payloads))) {
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
				(connection) -> new Session(connection, QUEUE, batchSize, handler));
	}

	@Override
	public Consumers startQueueListeners(java.util.List<String> queues, int batchSize, MessageHandler handler) {
		return new JdbcWorkers("raw-sg", this.database.consumerPool(), queues, PgQueueSystem.POLL_INTERVAL,
				(connection, queue) -> new Session(connection, queue, batchSize, handler));
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
	/** The parameters of a session claim of {@code queue}, from the head or after {@code cursor}. */
	static QueueSql.SessionClaim claimParameters(String queue, int namespace, long sessionKey, boolean mayTakeOpen,
			long[] cursor) {
		return new QueueSql.SessionClaim(queue, mayTakeOpen, null, namespace, sessionKey,
				QueueContext.DEFAULT_MAX_PAYLOAD_BYTES, (cursor != null) ? (int) cursor[0] : null,
				(cursor != null) ? cursor[1] : null, (cursor != null) ? cursor[2] : null);
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

		private final NamedStatement<QueueSql.SessionClaim> claimStatement;

		private final NamedStatement<QueueSql.SessionClaim> claimAfterStatement;

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
			try (PreparedStatement ps = RawSameGuaranteeSystem.this.sql.openSession.prepare(connection,
					new QueueSql.None()); ResultSet rs = ps.executeQuery()) {
				rs.next();
				this.sessionKey = rs.getLong("session");
				this.pid = rs.getInt("pid");
			}
			try (java.sql.Statement statement = connection.createStatement()) {
				statement.execute(QueueSql.INDEX_PLANS);
			}
			this.batchSize = batchSize;
			this.claimStatement = RawSameGuaranteeSystem.this.sql.claimWalk.variant(batchSize, false);
			this.claimAfterStatement = RawSameGuaranteeSystem.this.sql.claimWalkAfter.variant(batchSize, false);
			this.claim = connection.prepareStatement(this.claimStatement.sql());
			this.claimAfter = connection.prepareStatement(this.claimAfterStatement.sql());
			this.ack = connection.prepareStatement(RawSameGuaranteeSystem.this.sql.ack.sql());
		}

		private void bindClaimAfter(int namespace, boolean mayTakeOpen) throws SQLException {
			this.claimAfterStatement.bind(this.claimAfter,
					claimParameters(this.queue, namespace, this.sessionKey, mayTakeOpen, this.cursor));
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
					this.claimStatement.bind(this.claim,
							claimParameters(this.queue, ns, this.sessionKey, mayTakeOpen, null));
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
				RawSameGuaranteeSystem.this.sql.ack.bind(this.ack, new QueueSql.Ack(claimed.keySet().toArray(new Long[0]),
						this.queue, this.pid, ns, this.sessionKey));
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
					String kind = rs.getString("kind");
					if (kind.equals("next_due")) {
						long millis = rs.getLong("next_due_ms");
						this.nextDue = rs.wasNull() ? null : Duration.ofMillis(Math.max(0, millis));
						continue;
					}
					// The place of every chosen row (null for one left because suspects were
					// claimed alone); the cursor goes on after the last.
					boolean chosen = rs.getObject("place_priority") != null;
					long[] place = { rs.getInt("place_priority"), rs.getLong("place_visible_at_us"), rs.getLong("id") };
					if (chosen && (last == null || java.util.Arrays.compare(place, last) > 0)) {
						last = place;
					}
					if (kind.equals("claimed")) {
						claimed.put(rs.getLong("id"), rs.getString("payload"));
					}
					else if (kind.equals("gone")) {
						this.raced++; // found gone by the re-check; already unlocked
					}
				}
			}
			this.cursor = (claimed.size() + this.raced == this.batchSize) ? last : null;
		}

		@Override
		public Duration nextDue() {
			return this.nextDue;
		}

		/** Gives the connection its planner defaults back, as pgqueue's sessions do when they close. */
		@Override
		public void close() throws SQLException {
			try (java.sql.Statement statement = this.connection.createStatement()) {
				statement.execute(QueueSql.DEFAULT_PLANS);
			}
		}

	}

}
