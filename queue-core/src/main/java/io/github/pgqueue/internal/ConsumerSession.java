package io.github.pgqueue.internal;

import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collection;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Set;

import javax.sql.DataSource;

import io.github.pgqueue.LeaseLostException;
import io.github.pgqueue.QueueException;
import io.github.pgqueue.QueueNames;

import org.postgresql.PGConnection;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * One database session that claims messages and holds them until they are acked, retried,
 * dead-lettered or released. Not thread-safe: one poller thread or one lease owns it.
 * <p>
 * Invariants: a claim runs only when the session holds nothing (advisory locks are re-entrant,
 * so a second claim would hand out a message this session already holds); every lock is either
 * held for a returned message or released in the statement after it was found useless; a claim
 * that fails releases every lock it took; after a connection error, or a completing statement
 * that failed part-way (its unlocks are not undone with it), the session is lost, never touches
 * a message again, and its connection is ended rather than returned to a pool.
 */
public final class ConsumerSession implements AutoCloseable {

	private static final Logger logger = LoggerFactory.getLogger(ConsumerSession.class);

	private final Connection connection;

	private final QueueSql sql;

	private final int namespace;

	private final int backendPid;

	/** The key of this session's row in the holding table, which lists what it holds. */
	private final long sessionKey;

	/** The connection's default isolation before this session pinned READ COMMITTED; given back on close. */
	private final String defaultIsolation;

	private final int maxPayloadBytes;

	private final Set<Long> held = new LinkedHashSet<>();

	/** The held messages whose queue keeps what completes there: their ack is {@code ack_keeping}. */
	private final Set<Long> keeping = new java.util.HashSet<>();

	/**
	 * The queue of the last claim: a claim runs only when nothing is held, so every held message
	 * comes from it.
	 */
	private String claimedQueue;

	private boolean lost;

	/** Where each queue's next claim starts, and whether its heads are scarce. */
	private final ClaimCursors cursors = new ClaimCursors();

	/**
	 * Per queue claimed by this session, whether its definition names a concurrency key (read at
	 * its first claim), and of those the last key a fair claim served ("" before the first).
	 */
	private final java.util.Map<String, ClaimCursors.Keying> keyed = new java.util.HashMap<>();

	private final java.util.Map<String, String> fairCursors = new java.util.HashMap<>();

	/**
	 * How many statements one claim makes at most while each locks only rows that other consumers
	 * were completing. In a busy queue the head is where the others' batches are being acked; a
	 * claim there could lock only those, and taking that as "nothing to do" sent pollers to sleep
	 * in the middle of a drain.
	 */
	static final int RACED_CLAIM_ATTEMPTS = 3;

	/** How often {@link #checkAlive()} looks at the socket. */
	static final long ALIVE_CHECK_INTERVAL_MS = 100;

	private long lastAliveCheck = System.nanoTime();

	private ConsumerSession(Connection connection, QueueSql sql, int namespace, int maxPayloadBytes)
			throws SQLException {
		this.connection = connection;
		this.maxPayloadBytes = maxPayloadBytes;
		this.sql = sql;
		this.namespace = namespace;
		if (!connection.getAutoCommit()) {
			connection.setAutoCommit(true);
		}
		try (Statement statement = connection.createStatement()) {
			boolean rows = statement.execute(QueueSql.INDEX_PLANS + ";\n" + QueueSql.READ_COMMITTED);
			while (!rows && statement.getUpdateCount() != -1) {
				rows = statement.getMoreResults(); // past the planner settings
			}
			try (ResultSet rs = statement.getResultSet()) {
				rs.next();
				this.defaultIsolation = rs.getString(1);
			}
		}
		try (PreparedStatement ps = sql.openSession.prepare(connection, new QueueSql.None());
				ResultSet rs = ps.executeQuery()) {
			rs.next();
			this.sessionKey = rs.getLong("session");
			this.backendPid = rs.getInt("pid");
		}
	}

	/**
	 * Opens a session on a connection of its own from {@code dataSource}; payloads above
	 * {@code maxPayloadBytes} are dead-lettered at claim time without being read.
	 */
	public static ConsumerSession open(DataSource dataSource, QueueSql sql, int namespace, int maxPayloadBytes) {
		Connection connection = null;
		try {
			connection = dataSource.getConnection();
			return new ConsumerSession(connection, sql, namespace, maxPayloadBytes);
		}
		catch (SQLException ex) {
			closeQuietly(connection, ex);
			throw new QueueException("Could not open a consumer session: " + ex.getMessage(), ex);
		}
	}

	/** The server process id of this session, as {@code pg_stat_activity} shows it. */
	public int backendPid() {
		return this.backendPid;
	}

	/** Whether a connection error ended this session; its messages are no longer held. */
	public boolean isLost() {
		return this.lost;
	}

	/**
	 * Whether the session is still there, as far as can be told without a round trip: reads what
	 * the server may have sent since the last statement, such as the error a terminated backend or
	 * a shutting-down server sends before it closes the connection. Marks the session lost if so.
	 * The driver may wait up to a millisecond for the socket, so the check runs at most once per
	 * {@value #ALIVE_CHECK_INTERVAL_MS} ms; in between, the session is taken to be alive.
	 */
	public boolean checkAlive() {
		if (this.lost) {
			return false;
		}
		long now = System.nanoTime();
		if (now - this.lastAliveCheck < ALIVE_CHECK_INTERVAL_MS * 1_000_000L) {
			return true;
		}
		this.lastAliveCheck = now;
		try {
			this.connection.unwrap(PGConnection.class).getNotifications();
			return true;
		}
		catch (SQLException ex) {
			markLost();
			return false;
		}
	}

	/** How many messages this session holds. */
	public int heldCount() {
		return this.held.size();
	}

	/**
	 * Claims up to {@code max} visible messages of {@code queue} in priority order, counting an
	 * attempt on each. Messages whose attempts are used up, or whose payload is above the limit, are
	 * dead-lettered here and not returned.
	 */
	public Claim claim(String queue, int max) {
		return claim(queue, max, true);
	}

	/**
	 * Claims like {@link #claim(String, int)}; with {@code mayTakeOpen} false it leaves alone the
	 * messages whose consumer died (as far as its snapshot shows), so that a process runs at most
	 * one of those at a time: if it is what kills the process, nothing else of that kind dies with
	 * it. When it takes such messages, it takes only those, to be handed out in turn
	 * ({@link Claim#inTurn()}).
	 */
	public Claim claim(String queue, int max, boolean mayTakeOpen) {
		return claim(queue, max, mayTakeOpen, null);
	}

	/**
	 * Claims like {@link #claim(String, int, boolean)}, only messages whose headers match
	 * {@code filter} (all when it is null). A message the filter rejects is not locked, not counted
	 * and not written.
	 */
	public Claim claim(String queue, int max, boolean mayTakeOpen, HeaderFilter filter) {
		return claim(queue, max, mayTakeOpen, filter, (TokenBucket.KeyGrants) null);
	}

	/**
	 * Claims like {@link #claim(String, int, boolean, HeaderFilter)}, of a queue limited per key at
	 * most the messages of each key that {@code grants} granted ({@link #takeKeyTokens}; null for a
	 * queue without such a limit), and gives back the tokens the claim did not use.
	 */
	public Claim claim(String queue, int max, boolean mayTakeOpen, HeaderFilter filter, TokenBucket.KeyGrants grants) {
		if (!this.held.isEmpty()) {
			throw new IllegalStateException("Session " + this.backendPid + " still holds " + this.held
					+ "; complete them before claiming more");
		}
		checkNotLost();
		this.claimedQueue = queue;
		Claim claim = null;
		// A claim whose rows the re-check all found gone (completed by other consumers after its
		// snapshot was taken) met a busy queue, not an empty one: it is made again, going on past them.
		if (grants != null || this.cursors.fairClaimDue(queue, this.keyed.computeIfAbsent(queue, this::readKeying))) {
			return claimFair(queue, max, mayTakeOpen, filter, grants);
		}
		for (int i = 0; i < RACED_CLAIM_ATTEMPTS && (claim == null || claim.racedOnly()); i++) {
			ClaimCursors.Next next = this.cursors.next(queue);
			claim = (next.after() != null) ? claim(queue, max, mayTakeOpen, filter, next) : null;
			if (claim == null || (!claim.found() && !claim.racedOnly())) {
				claim = claim(queue, max, mayTakeOpen, filter, this.cursors.fromHead(queue));
			}
		}
		return claim;
	}

	/** How {@code queue}'s claims treat its concurrency key, if it has one: some or all are fair ones. */
	private ClaimCursors.Keying readKeying(String queue) {
		try (PreparedStatement ps = this.sql.concurrencyKeyOf.prepare(this.connection, new QueueSql.Queue(queue));
				ResultSet rs = ps.executeQuery()) {
			return ClaimCursors.Keying.of(rs);
		}
		catch (SQLException ex) {
			throw claimFailure(queue, ex);
		}
	}

	/**
	 * A {@code claim_fair} of {@code queue}, after the key its last one served, from where the
	 * cursors say; keeps the cursor of a full claim as {@link #claim} does.
	 */
	private Claim claimFair(String queue, int max, boolean mayTakeOpen, HeaderFilter filter,
			TokenBucket.KeyGrants grants) {
		ClaimCursors.Next next = this.cursors.next(queue);
		ClaimCursor cursor = next.after();
		QueueSql.SessionFairClaim parameters = new QueueSql.SessionFairClaim(queue, mayTakeOpen,
				(filter != null) ? filter.documents() : null, this.namespace, this.sessionKey, this.maxPayloadBytes,
				this.fairCursors.getOrDefault(queue, ""), (cursor != null) ? cursor.priority() : null,
				(cursor != null) ? cursor.visibleAtMicros() : null, (cursor != null) ? cursor.id() : null,
				(grants != null) ? grants.argument(++this.claims) : null);
		try (PreparedStatement ps = this.sql.claimFair.variant(max, filter != null).prepare(this.connection, parameters)) {
			this.nextKey = null;
			this.walkFull = false;
			this.grantsLeft = null;
			this.readingFair = true;
			try {
				Claim claim = readClaim(queue, ps, true);
				if (grants != null) {
					// In autocommit, after the claim's own transaction: no bucket is locked while messages are held.
					TokenBucket.giveBackForKeys(this.connection, this.sql, queue, TokenBucket.KeyGrants.left(this.grantsLeft));
				}
				this.fairCursors.put(queue, (this.nextKey != null) ? this.nextKey : "");
				releaseSlotsOnceDone(); // slots of rows it locked but did not hand out
				if (this.walkFull || claim.messages().size() + claim.deadLettered() + claim.raced() == max) {
					// Filled by keys' heads alone, it walked nothing: the cursor stays where it was.
					this.cursors.full(queue, next, (claim.last() != null) ? claim.last() : cursor);
				}
				else {
					this.cursors.cameBackShort(queue);
				}
				return claim;
			}
			finally {
				this.readingFair = false;
			}
		}
		catch (SQLException ex) {
			throw claimFailure(queue, ex);
		}
	}


	/**
	 * The lock keys of the per-key slots (see {@code claim_fair}) the last claim took: released once
	 * the session holds no message any more.
	 */
	private final List<Long> slots = new ArrayList<>();

	/**
	 * The next_key and walk_full of the fair claim read last (see {@code claim_fair}), and whether
	 * {@link #readClaim} reads them.
	 */
	private String nextKey;

	private boolean walkFull;

	/** The grants_left of the fair claim read last: the tokens of its keys it did not use (JSON). */
	private String grantsLeft;

	/** How many claims with grants this session made: each one's id in its grants. */
	private long claims;

	private boolean readingFair;

	/** Claims from where {@code next} says; keeps the cursor of a full claim. */
	private Claim claim(String queue, int max, boolean mayTakeOpen, HeaderFilter filter, ClaimCursors.Next next) {
		ClaimCursor cursor = next.after();
		NamedStatement<QueueSql.SessionClaim> statement = (cursor != null) ? this.sql.claimWalkAfter
				: next.scanHeads() ? this.sql.claimScanningHeads : this.sql.claimWalk;
		QueueSql.SessionClaim parameters = new QueueSql.SessionClaim(queue, mayTakeOpen,
				(filter != null) ? filter.documents() : null, this.namespace, this.sessionKey, this.maxPayloadBytes,
				(cursor != null) ? cursor.priority() : null, (cursor != null) ? cursor.visibleAtMicros() : null,
				(cursor != null) ? cursor.id() : null);
		try (PreparedStatement ps = statement.variant(max, filter != null).prepare(this.connection, parameters)) {
			Claim claim = readClaim(queue, ps, true);
			if (claim.messages().size() + claim.deadLettered() + claim.raced() == max) {
				this.cursors.full(queue, next, claim.last());
			}
			else {
				this.cursors.cameBackShort(queue);
			}
			return claim;
		}
		catch (SQLException ex) {
			throw claimFailure(queue, ex);
		}
	}

	/**
	 * Takes up to {@code wanted} tokens of {@code queue}'s rate-limit bucket on this session's
	 * connection, before a claim (see {@link TokenBucket}); null if the queue has no limit.
	 */
	public TokenBucket.Grant takeTokens(String queue, int wanted) {
		checkNotLost();
		try {
			return TokenBucket.take(this.connection, this.sql, queue, wanted);
		}
		catch (SQLException ex) {
			throw failure("take tokens of queue '" + queue + "'", ex);
		}
	}

	/**
	 * Takes tokens of {@code queue}'s keys' buckets on this session's connection, before a claim:
	 * for the keys its next fair claim serves (see {@code take_key_tokens}).
	 */
	public TokenBucket.KeyGrants takeKeyTokens(String queue, int wanted) {
		checkNotLost();
		try {
			return TokenBucket.takeForKeys(this.connection, this.sql, queue, wanted,
					this.fairCursors.getOrDefault(queue, ""));
		}
		catch (SQLException ex) {
			throw failure("take tokens of the keys of queue '" + queue + "'", ex);
		}
	}

	/** Which of {@code queues} have a rate limit now, read on this session's connection. */
	public java.util.Map<String, TokenBucket.Limited> rateLimitedQueues(List<String> queues) {
		checkNotLost();
		try {
			return TokenBucket.limitedQueues(this.connection, this.sql, queues);
		}
		catch (SQLException ex) {
			throw failure("read the rate limits of queues " + queues, ex);
		}
	}

	/** Gives back {@code unused} tokens of a grant to {@code queue}'s bucket. */
	public void giveBackTokens(String queue, int unused) {
		checkNotLost();
		try {
			TokenBucket.giveBack(this.connection, this.sql, queue, unused);
		}
		catch (SQLException ex) {
			throw failure("give back tokens of queue '" + queue + "'", ex);
		}
	}

	/**
	 * Claims message {@code id} of transactional queue {@code queue} if it is a suspect: the last
	 * transaction that held it aborted, or its claim is open and nobody holds it. Counts the attempt
	 * the aborted transaction never wrote and this one, so that a message that kills its consumer
	 * is dead-lettered after its max attempts; the caller runs it alone.
	 */
	public Claim claimSuspect(String queue, long id) {
		return claimOne(this.sql.claimSuspect, queue, id);
	}

	/**
	 * Claims message {@code id} of {@code queue} if it is visible, free, in a FIFO group its group's
	 * head, and the queue is not paused; an empty claim otherwise (one that dead-lettered it if it
	 * was exhausted).
	 */
	public Claim claimById(String queue, long id) {
		return claimOne(this.sql.claimById, queue, id);
	}

	/** Runs a claim of one message by id; both statements take the same parameters. */
	private Claim claimOne(NamedStatement<QueueSql.ClaimOne> statement, String queue, long id) {
		if (!this.held.isEmpty()) {
			throw new IllegalStateException("Session " + this.backendPid + " still holds " + this.held
					+ "; complete them before claiming more");
		}
		checkNotLost();
		this.claimedQueue = queue;
		try (PreparedStatement ps = statement.prepare(this.connection,
				new QueueSql.ClaimOne(id, queue, this.namespace, this.sessionKey, this.maxPayloadBytes))) {
			return readClaim(queue, ps, false);
		}
		catch (SQLException ex) {
			throw claimFailure(queue, ex);
		}
	}

	/**
	 * Reads a claim's rows: holds what was claimed, dead-letters what is exhausted or oversized.
	 * With {@code placed} (the batch claims), the claim's last place is that of the furthest row
	 * it chose, claimed or found gone by the re-check; otherwise it has none.
	 */
	private Claim readClaim(String queue, PreparedStatement ps, boolean placed) throws SQLException {
		List<ClaimedMessage> deliverable = new ArrayList<>();
		List<DeadLetter> letters = new ArrayList<>();
		Duration nextVisible = null;
		boolean settled = false;
		ClaimCursor last = null;
		int raced = 0;
		boolean inTurn = false;
		try (ResultSet rs = ps.executeQuery()) {
			while (rs.next()) {
				String kind = rs.getString("kind");
				if (this.readingFair && !kind.equals("next_due") && this.nextKey == null) {
					this.nextKey = rs.getString("next_key");
					this.walkFull = rs.getBoolean("walk_full");
					String slotLocks = rs.getString("slot_locks");
					if (slotLocks != null) {
						for (String lockKey : slotLocks.split(",")) {
							if (!lockKey.isEmpty()) {
								this.slots.add(Long.parseLong(lockKey));
							}
						}
					}
				}
				if (this.readingFair && this.grantsLeft == null) {
					this.grantsLeft = rs.getString("grants_left"); // the same in every row
				}
				if (kind.equals("next_due")) {
					long ms = rs.getLong("next_due_ms");
					nextVisible = rs.wasNull() ? null : Duration.ofMillis(Math.max(0, ms));
					settled = true;
					continue;
				}
				ClaimCursor place = placed ? ClaimCursor.ofChosen(rs) : null;
				if (place != null && (last == null || place.isAfter(last))) {
					last = place;
				}
				if (kind.equals("gone")) {
					if (placed) {
						raced++; // chosen, found gone by the re-check, and already unlocked
					}
					continue;
				}
				if (kind.equals("left")) {
					continue; // locked and left (unlocked) because suspects were claimed alone
				}
				ClaimedMessage message = read(queue, rs);
				inTurn |= rs.getBoolean("in_turn");
				this.held.add(message.id());
				if (message.keeps()) {
					this.keeping.add(message.id());
				}
				String unusable = unusable(message, this.maxPayloadBytes);
				if (unusable != null) {
					letters.add(DeadLetter.of(message, unusable));
				}
				else {
					deliverable.add(message);
				}
			}
		}
		if (!letters.isEmpty()) {
			deadLetter(letters);
		}
		this.lastAliveCheck = System.nanoTime();
		return new Claim(deliverable, letters.size(), nextVisible, settled, last, raced, inTurn);
	}

	/**
	 * Why a claimed message goes to its dead-letter queue without a handler seeing it (its payload
	 * is above the limit, or its attempts are used up), or null if it is to be delivered.
	 */
	public static String unusable(ClaimedMessage message, int maxPayloadBytes) {
		if (message.oversized()) {
			return "Payload is " + message.payloadBytes() + " bytes, above the consumer's limit of " + maxPayloadBytes
					+ " bytes (pgqueue.max-payload-size); it was not read";
		}
		if (message.exhausted()) {
			return "Dead-lettered after " + message.maxAttempts() + " attempts; the last one ended without an ack, "
					+ "retry or reject (its consumer died, its session or transaction ended, or it released the "
					+ "message)" + ((message.lastError() != null) ? "; last error: " + message.lastError() : "");
		}
		return null;
	}

	/**
	 * Advisory locks are not undone with the statement that took them: a claim that failed for a
	 * reason other than a lost connection (a timeout or cancel while its re-check waited on a row
	 * lock, out of shared memory) may still hold locks of rows it never returned. This session
	 * held nothing before the claim (see the invariants), so all its advisory locks go.
	 */
	private RuntimeException claimFailure(String queue, SQLException ex) {
		RuntimeException failure = failure("claim from queue '" + queue + "'", ex);
		if (this.lost) {
			return failure;
		}
		if (!this.held.isEmpty()) {
			// Rows were already read as held when the statement failed: treat it as a completion.
			return completionFailure(failure);
		}
		try (PreparedStatement ps = this.sql.unlockAll.prepare(this.connection, new QueueSql.None())) {
			ps.execute();
		}
		catch (SQLException unlockFailure) {
			failure.addSuppressed(unlockFailure);
			markLost();
		}
		return failure;
	}

	/** The claimed message at the current row of a claim's result (any claim: they share these columns). */
	public static ClaimedMessage read(String queue, ResultSet rs) throws SQLException {
		String dlq = rs.getString("dead_letter_queue");
		return new ClaimedMessage(rs.getLong("id"), queue, rs.getString("payload"), rs.getString("headers"),
				rs.getInt("priority"), rs.getInt("attempt"), rs.getTimestamp("created_at").toInstant(),
				rs.getInt("max_attempts"), (dlq != null) ? dlq : QueueNames.defaultDeadLetterQueue(queue),
				rs.getLong("backoff_initial_ms"), rs.getDouble("backoff_multiplier"), rs.getLong("backoff_max_ms"),
				rs.getString("last_error"), rs.getInt("payload_bytes"), rs.getBoolean("keeps"));
	}

	/** Deletes the messages and releases them, in one statement. */
	public void ack(Collection<Long> ids) {
		if (ids.isEmpty()) {
			return;
		}
		checkHeld(ids);
		boolean keeps = !this.keeping.isEmpty() && ids.stream().anyMatch(this.keeping::contains);
		try (PreparedStatement ps = (keeps ? this.sql.ackKeeping : this.sql.ack).prepare(this.connection,
				new QueueSql.Ack(ids.toArray(new Long[0]),
				this.claimedQueue, this.backendPid, this.namespace, this.sessionKey))) {
			completed(ids, ps, "ack");
		}
		catch (SQLException ex) {
			throw completionFailure(failure("ack " + ids, ex));
		}
	}

	/** Makes the messages visible again after their delay, records the error, and releases them. */
	public void retry(List<Retry> retries) {
		if (retries.isEmpty()) {
			return;
		}
		List<Long> ids = new ArrayList<>(retries.size());
		Long[] delays = new Long[retries.size()];
		String[] errors = new String[retries.size()];
		for (int i = 0; i < retries.size(); i++) {
			Retry retry = retries.get(i);
			ids.add(retry.id());
			delays[i] = Math.max(0, retry.delay().toMillis());
			errors[i] = retry.error();
		}
		checkHeld(ids);
		try (PreparedStatement ps = this.sql.retry.prepare(this.connection, new QueueSql.Retry(ids.toArray(new Long[0]),
				delays, errors, this.backendPid, this.namespace, this.sessionKey, this.sql.channel()))) {
			completed(ids, ps, "retry");
		}
		catch (SQLException ex) {
			throw completionFailure(failure("retry " + ids, ex));
		}
	}

	/** Moves the messages to their dead-letter queues with the error, and releases them. */
	public void deadLetter(List<DeadLetter> letters) {
		if (letters.isEmpty()) {
			return;
		}
		List<Long> ids = new ArrayList<>(letters.size());
		String[] queues = new String[letters.size()];
		String[] errors = new String[letters.size()];
		for (int i = 0; i < letters.size(); i++) {
			ids.add(letters.get(i).id());
			queues[i] = letters.get(i).deadLetterQueue();
			errors[i] = letters.get(i).error();
		}
		checkHeld(ids);
		try (PreparedStatement ps = this.sql.deadLetter.prepare(this.connection, new QueueSql.DeadLetter(
				ids.toArray(new Long[0]), queues, errors, this.backendPid, this.namespace, this.sessionKey,
				this.sql.channel()))) {
			completed(ids, ps, "dead-letter");
		}
		catch (SQLException ex) {
			throw completionFailure(failure("dead-letter " + ids, ex));
		}
	}

	/**
	 * Releases the messages: they are visible to every consumer at once. With {@code attemptEnded}
	 * their attempt counts, as for messages a handler saw and did not complete; without, it does
	 * not: messages claimed but never handed to a handler (a poller stopping mid-batch), or that a
	 * transaction completed while this session held them.
	 */
	public void release(Collection<Long> ids, boolean attemptEnded) {
		if (ids.isEmpty()) {
			return;
		}
		checkNotLost();
		try (PreparedStatement ps = this.sql.release.prepare(this.connection,
				new QueueSql.Release(attemptEnded, ids.toArray(new Long[0]), this.namespace, this.sessionKey))) {
			try (ResultSet rs = ps.executeQuery()) {
				while (rs.next()) {
					long id = rs.getLong("id");
					this.held.remove(id);
					this.keeping.remove(id);
				}
			}
			releaseSlotsOnceDone();
		}
		catch (SQLException ex) {
			throw completionFailure(failure("release " + ids, ex));
		}
	}

	/**
	 * Reads which rows a completing statement changed and unlocked. Rows that vanished under our
	 * lock (deleted by hand, say) are unlocked at once; nothing returned at all while the
	 * connection is fine means the pid guard failed: a different session answered.
	 */
	private void completed(Collection<Long> ids, PreparedStatement ps, String action) throws SQLException {
		Set<Long> done = new LinkedHashSet<>();
		try (ResultSet rs = ps.executeQuery()) {
			while (rs.next()) {
				done.add(rs.getLong("id"));
			}
		}
		this.held.removeAll(done);
		this.keeping.removeAll(done);
		releaseSlotsOnceDone();
		if (done.size() == ids.size()) {
			return;
		}
		if (done.isEmpty() && currentBackendPid() != this.backendPid) {
			markLost();
			throw new LeaseLostException("Cannot " + action + " " + ids + ": the session (backend pid "
					+ this.backendPid + ") that claimed them has ended; they will be delivered again");
		}
		List<Long> vanished = new ArrayList<>(ids);
		vanished.removeAll(done);
		logger.warn("Messages {} were deleted or moved to another queue by someone else while this consumer held "
				+ "them; releasing them", vanished);
		release(vanished, false);
	}

	/** Releases the per-key slots the last claim took once this session holds no message any more. */
	private void releaseSlotsOnceDone() throws SQLException {
		if (!this.held.isEmpty() || this.slots.isEmpty()) {
			return;
		}
		try (PreparedStatement ps = this.sql.releaseSlots.prepare(this.connection,
				new QueueSql.SlotLocks(this.slots.toArray(new Long[0])));
				ResultSet rs = ps.executeQuery()) {
			this.slots.clear();
		}
	}

	private int currentBackendPid() throws SQLException {
		try (PreparedStatement ps = this.sql.backendPid.prepare(this.connection, new QueueSql.None());
				ResultSet rs = ps.executeQuery()) {
			rs.next();
			return rs.getInt("pid");
		}
	}

	private void checkHeld(Collection<Long> ids) {
		checkNotLost();
		for (Long id : ids) {
			if (!this.held.contains(id)) {
				throw new IllegalStateException("Message " + id + " is not held by session " + this.backendPid
						+ " (already completed, or never claimed here)");
			}
		}
	}

	private void checkNotLost() {
		if (this.lost) {
			throw new LeaseLostException("The session (backend pid " + this.backendPid
					+ ") has ended; its messages will be delivered again");
		}
	}

	/**
	 * A completing statement that failed may have unlocked some of its rows before it failed, and
	 * its changes are undone: which of the held messages are still locked is unknown, so none may
	 * be touched again. The session is given up; ending it releases whatever it still held, and
	 * those messages count as held by a consumer that died.
	 */
	private RuntimeException completionFailure(RuntimeException failure) {
		if (!this.lost) {
			logger.warn("A statement completing messages {} failed on session {}; ending the session so that they are "
					+ "delivered again", this.held, this.backendPid);
			markLost();
		}
		return failure;
	}

	private RuntimeException failure(String action, SQLException ex) {
		if (isConnectionError(ex)) {
			Set<Long> dropped = new LinkedHashSet<>(this.held);
			markLost();
			return new LeaseLostException("Cannot " + action + ": the session (backend pid " + this.backendPid
					+ ") has ended (" + ex.getMessage() + ")"
					+ (dropped.isEmpty() ? "" : "; messages " + dropped + " will be delivered again"), ex);
		}
		return new QueueException("Could not " + action + ": " + ex.getMessage(), ex);
	}

	private void markLost() {
		this.lost = true;
		this.held.clear();
		this.keeping.clear();
	}

	private boolean isConnectionError(SQLException ex) {
		String state = ex.getSQLState();
		if (state != null && (state.startsWith("08") || state.startsWith("57P"))) {
			return true;
		}
		try {
			return this.connection.isClosed() || !this.connection.isValid(2);
		}
		catch (SQLException notValid) {
			return true;
		}
	}

	/** Releases what is still held (unless the session is lost) and returns the connection. */
	@Override
	public void close() {
		try {
			if (!this.lost && !this.held.isEmpty()) {
				release(new ArrayList<>(this.held), true);
			}
		}
		catch (RuntimeException ex) {
			logger.warn("Could not release messages of session {} before closing it; closing the connection ends "
					+ "the session and releases them", this.backendPid, ex);
		}
		finally {
			try {
				if (this.lost || !this.held.isEmpty() || !endCleanly()) {
					// A pool must not hand out a session that may still hold locks: end it.
					this.connection.abort(Runnable::run);
				}
				this.connection.close();
			}
			catch (SQLException ex) {
				logger.debug("Closing the connection of session {} failed: it is already gone", this.backendPid, ex);
			}
		}
	}

	/**
	 * Deletes this session's holding row and gives the connection its own isolation and planner
	 * settings back, for the pool's next borrower; false if that failed.
	 */
	private boolean endCleanly() {
		try (PreparedStatement ps = this.sql.closeSession.prepare(this.connection,
				new QueueSql.CloseSession(this.sessionKey, this.defaultIsolation));
				Statement statement = this.connection.createStatement()) {
			ps.execute();
			statement.execute(QueueSql.DEFAULT_PLANS);
			return true;
		}
		catch (SQLException ex) {
			logger.debug("Could not end session {} cleanly; ending its connection", this.backendPid, ex);
			return false;
		}
	}

	private static void closeQuietly(Connection connection, SQLException cause) {
		if (connection != null) {
			try {
				connection.close();
			}
			catch (SQLException ex) {
				cause.addSuppressed(ex);
			}
		}
	}

	/**
	 * The outcome of a claim: the messages to deliver, how many were dead-lettered instead, how long
	 * until the queue's next delayed message becomes visible (null when none is waiting or it is
	 * unknown), whether the claim was settled (it said so: nothing more that a claim right after it
	 * could find, and the next due time known; see the claim's comment), where the furthest row a
	 * batch claim chose is in the claim index (null when it chose none), how many rows it chose that
	 * the re-check found gone, and whether the messages are to be handed out in turn.
	 * <p>
	 * In turn: they were held by consumers that died, and the caller hands them to handlers one at
	 * a time, in this order, and completes each (ack, retry, dead letter or release) before it
	 * hands over the next. The session's holding row lists them in that order; if the session dies,
	 * only the first one still listed, the one a handler had, has its attempt counted, so that a
	 * message that kills its consumer costs the others nothing. Handed out together, the others
	 * would be counted with it at each death.
	 */
	public record Claim(List<ClaimedMessage> messages, int deadLettered, Duration nextVisibleIn, boolean settled,
			ClaimCursor last, int raced, boolean inTurn) {

		/**
		 * Whether the claim locked rows but the re-check skipped them all: they were being
		 * completed by other consumers (see the claim's comment in {@link QueueSql}).
		 */
		public boolean racedOnly() {
			return this.raced > 0 && !found();
		}

		/** Whether the claim took any message, to deliver or dead-lettered. */
		public boolean found() {
			return !this.messages.isEmpty() || this.deadLettered > 0;
		}

	}

	/** A failed message to make visible again after {@code delay}. */
	public record Retry(long id, Duration delay, String error) {
	}

	/** A message to move to {@code deadLetterQueue}. */
	public record DeadLetter(long id, String deadLetterQueue, String error) {

		public static DeadLetter of(ClaimedMessage message, String error) {
			return new DeadLetter(message.id(), message.deadLetterQueue(), error);
		}

	}

}
