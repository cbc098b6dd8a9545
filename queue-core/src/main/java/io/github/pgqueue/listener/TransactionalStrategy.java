package io.github.pgqueue.listener;

import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Savepoint;
import java.sql.Statement;
import java.time.Duration;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.Deque;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.function.BooleanSupplier;
import java.util.function.Supplier;
import javax.sql.DataSource;

import io.github.pgqueue.QueueContext;
import io.github.pgqueue.QueueException;
import io.github.pgqueue.internal.ClaimCursor;
import io.github.pgqueue.internal.ClaimCursors;
import io.github.pgqueue.internal.ClaimedMessage;
import io.github.pgqueue.internal.ConsumerSession;
import io.github.pgqueue.internal.HeaderFilter;
import io.github.pgqueue.internal.ListenerMetrics.Outcome;
import io.github.pgqueue.internal.ListenerMetrics;
import io.github.pgqueue.internal.NamedStatement;
import io.github.pgqueue.internal.QueueSql;
import io.github.pgqueue.internal.QueueSql.TransactionalClaim;
import io.github.pgqueue.internal.RecordedRemovals;
import io.github.pgqueue.internal.TokenBucket;
import io.github.pgqueue.listener.Dispatcher.Completion;
import io.github.pgqueue.listener.Dispatcher.Delivery;
import io.micrometer.core.instrument.Timer;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import org.springframework.jdbc.datasource.DataSourceUtils;
import org.springframework.transaction.PlatformTransactionManager;
import org.springframework.transaction.TransactionStatus;
import org.springframework.transaction.support.TransactionTemplate;

/**
 * Transactional mode (the advisory-lock-free queue of the SKIP LOCKED articles): one transaction of
 * the application's transaction manager claims a batch with {@code FOR UPDATE SKIP LOCKED}, runs
 * each handler under a savepoint, and deletes, retries or dead-letters the messages, so that a
 * handler's own writes and its message's removal commit together. Nothing is written before the
 * handlers run: one commit per batch.
 * <p>
 * The claim sets a savepoint in its own round trip, and the handlers run without one of their own
 * while they succeed: a batch costs the claim, one completing statement and the commit. When a
 * handler throws, the transaction is rolled back to the claim's savepoint, which undoes that
 * handler's writes and its predecessors' in the batch (those that ran under a savepoint of their
 * own too); its failure is recorded and those predecessors run again (the batch is split at the
 * failure), each under a savepoint of its own,
 * as every handler of this poller does until {@value #GUARDED_AFTER_FAILURE} messages in a row
 * succeed. So a failure costs the handlers before it one more run, never a message or an attempt,
 * and a run of failures costs a savepoint per message, not a re-run per failure. A consumer that dies leaves no write at all, only
 * its aborted transaction in the rows' lock marker ({@code xmax}); a later claim sees that, skips
 * the message, and hands it to {@link ConsumerSession#claimSuspect}, which writes the lost attempt
 * (so a message that kills its consumer still reaches its dead-letter queue) and holds it with a
 * session lock while it runs alone here. A transaction that outlives its timeout is rolled back to
 * before the first handler, and every message it handled fails that attempt.
 */
final class TransactionalStrategy implements ConsumptionStrategy {

	private static final Logger logger = LoggerFactory.getLogger(TransactionalStrategy.class);

	/** After a failure, how many messages in a row must succeed before handlers run without savepoints. */
	static final int GUARDED_AFTER_FAILURE = 100;

	/** The savepoint the claim sets: the state before any handler of the batch ran. */
	private static final String CLAIMED = "pgqueue_claimed";

	/** How long a suspect whose key has no free slot waits before it tries again. */
	private static final Duration SLOT_WAIT = Duration.ofMillis(10);

	private final Dispatcher dispatcher;

	private final QueueSql sql;

	private final DataSource dataSource;

	private final TransactionTemplate transactions;

	private final Supplier<ConsumerSession> sessions;

	private final ListenerMetrics metrics;

	private final int batchSize;

	private final int namespace;

	private final int maxPayloadBytes;

	private final Duration timeout;

	private final BooleanSupplier running;

	/** The listener's header filter; null when it takes every message. */
	private final HeaderFilter filter;

	/** The session that counts and holds suspects; opened at the first one. */
	private ConsumerSession session;

	/** How many more messages run under a savepoint each, after a failure; 0 when handlers run without. */
	private int guarded;

	/** The claims of a whole batch. */
	private final Claims claims;

	/**
	 * The claims of fewer messages, by how many: a rate-limited queue's claim takes at most its
	 * grant, which is a whole batch or the bucket's burst if that is smaller (see {@link RateLimiter}).
	 */
	private final Map<Integer, Claims> smallerClaims = new HashMap<>();

	/** Tokens of rate-limited queues, taken on a connection of the application's pool outside any transaction. */
	private final RateLimiter.Tokens tokens;

	/** The rate-limit buckets, taken from and given back to on connections of the pool, in autocommit. */
	private final TokenBucket bucket;

	private final RateLimiter limiter;

	/**
	 * The completing statements, each between its planner settings (see {@link QueueSql#withIndexPlans});
	 * the first of a batch's releases the claim's savepoint first (see {@link #topLevel}).
	 */
	private final Completions completions;

	private final Completions completionsReleasingClaim;

	/** The row lock of a suspect, the first statement of its transaction. */
	private final NamedStatement<QueueSql.LockClaimed> lockClaimed;

	/**
	 * Where each queue's next claim starts: after the last full batch, or after the last row of a
	 * window its last claim walked to the end; and whether its heads are scarce (a whole window
	 * walked without filling the batch, and no batch filled since).
	 */
	private final ClaimCursors cursors = new ClaimCursors();

	/** The queues whose claims found messages since the last claim from the head. */
	private final Set<String> foundSinceHead = new HashSet<>();


	TransactionalStrategy(Dispatcher dispatcher, QueueContext context, QueueSql sql,
			PlatformTransactionManager transactionManager, Supplier<ConsumerSession> sessions, ListenerMetrics metrics,
			QueueListenerEndpoint endpoint, BooleanSupplier running) {
		this.dispatcher = dispatcher;
		this.sql = sql;
		this.dataSource = context.dataSource();
		this.namespace = context.lockNamespace();
		this.maxPayloadBytes = context.maxPayloadBytes();
		this.sessions = sessions;
		this.metrics = metrics;
		this.batchSize = endpoint.containerProperties().batchSize();
		this.timeout = endpoint.containerProperties().transactionTimeout();
		this.running = running;
		this.filter = endpoint.headerFilter();
		this.transactions = new TransactionTemplate(transactionManager);
		this.transactions.setName("pgqueue-" + endpoint.id());
		this.transactions.setTimeout((int) Math.max(1, (this.timeout.toMillis() + 999) / 1000));
		this.claims = claims(this.batchSize);
		this.limiter = new RateLimiter(() -> TokenBucket.limitedQueues(this.dataSource, sql,
				endpoint.containerProperties().queues()), metrics);
		this.bucket = TokenBucket.onDataSource(this.dataSource, sql);
		TokenBucket bucket = this.bucket;
		this.tokens = new RateLimiter.Tokens() {

			@Override
			public TokenBucket.Grant take(String queue, int wanted) {
				return bucket.take(queue, wanted);
			}

			@Override
			public void giveBack(String queue, int unused) {
				bucket.giveBack(queue, unused);
			}

			@Override
			public TokenBucket.KeyGrants takeForKeys(String queue, int wanted) {
				return bucket.takeForKeys(queue, wanted,
						TransactionalStrategy.this.fairCursors.getOrDefault(queue, ""));
			}

		};
		this.completions = new Completions(this.sql, "");
		this.completionsReleasingClaim = new Completions(this.sql, "RELEASE SAVEPOINT " + CLAIMED);
		this.lockClaimed = this.sql.lockClaimed.between(QueueSql.READ_COMMITTED_TRANSACTION, "");
	}

	/**
	 * A claim's round trip: READ COMMITTED for the transaction (it is its first statement), the
	 * claim and the savepoint before the handlers.
	 */
	private <P extends Record> NamedStatement<P> claimThenSavepoint(NamedStatement<P> claim, int max) {
		return QueueSql.withIndexPlans(QueueSql.READ_COMMITTED_TRANSACTION,
				claim.variant(max, this.filter != null), "SAVEPOINT " + CLAIMED);
	}

	/** The four claims of at most {@code max} messages. */
	private Claims claims(int max) {
		return new Claims(claimThenSavepoint(this.sql.transactionalClaimWalk, max),
				claimThenSavepoint(this.sql.transactionalClaimWalkAfter, max),
				claimThenSavepoint(this.sql.transactionalClaimScanningHeads, max),
				claimThenSavepoint(this.sql.transactionalClaimScanningHeadsAfter, max),
				claimThenSavepoint(this.sql.transactionalClaimFair, max));
	}

	/**
	 * A claim's four variants, each followed by the savepoint before the handlers in its round trip.
	 * @param walk from the head
	 * @param walkAfter going on from a cursor
	 * @param scanning, scanningAfter the two above, finding FIFO groups' heads through the group index
	 * @param fair the claim of a queue whose definition names a concurrency key
	 */
	private record Claims(NamedStatement<TransactionalClaim> walk, NamedStatement<TransactionalClaim> walkAfter,
			NamedStatement<TransactionalClaim> scanning, NamedStatement<TransactionalClaim> scanningAfter,
			NamedStatement<QueueSql.TransactionalFairClaim> fair) {
	}

	/**
	 * Per queue, whether its definition names a concurrency key (read at its first claim, on a
	 * connection of its own), and of those the last key a fair claim served ("" before the first).
	 */
	private final java.util.Map<String, ClaimCursors.Keying> keyed = new java.util.HashMap<>();

	private final java.util.Map<String, String> fairCursors = new java.util.HashMap<>();

	/** How many claims with grants of keys' tokens this poller made: each one's id in its grants. */
	private long claimsWithGrants;

	/**
	 * How {@code queue}'s claims treat its concurrency key, read on a connection of its own: the
	 * claim's transaction must begin with its isolation level, so nothing may be read in it first.
	 */
	private ClaimCursors.Keying readKeying(String queue) {
		try (Connection connection = this.dataSource.getConnection();
				PreparedStatement ps = this.sql.concurrencyKeyOf.prepare(connection, new QueueSql.Queue(queue));
				ResultSet rs = ps.executeQuery()) {
			return ClaimCursors.Keying.of(rs);
		}
		catch (SQLException ex) {
			throw new QueueException("Could not read the concurrency key of queue '" + queue + "': " + ex.getMessage(),
					ex);
		}
	}

	/** The completing statements of a transaction, each after {@code before} in its round trip. */
	private record Completions(NamedStatement<QueueSql.TransactionalAck> ack,
			NamedStatement<QueueSql.TransactionalAck> ackKeeping, NamedStatement<QueueSql.TransactionalRetry> retry,
			NamedStatement<QueueSql.TransactionalDeadLetter> deadLetter) {

		Completions(QueueSql sql, String before) {
			this(QueueSql.withIndexPlans(before, sql.transactionalAck, ""),
					QueueSql.withIndexPlans(before, sql.transactionalAckKeeping, ""),
					QueueSql.withIndexPlans(before, sql.transactionalRetry, ""),
					QueueSql.withIndexPlans(before, sql.transactionalDeadLetter, ""));
		}

	}

	@Override
	public Polled poll(String queue, boolean mayTakeSuspects) {
		RateLimiter.Permit permit = this.limiter.take(queue, this.batchSize, this.tokens);
		if (permit.max() == 0) {
			return new Polled(0, false, true, permit.waitFor());
		}
		Timer timer = this.metrics.timer(queue);
		this.keyed.computeIfAbsent(queue, this::readKeying); // before the transaction, which begins with its isolation
		Batch batch = this.transactions.execute((status) -> runBatch(queue, permit, status, timer));
		if (permit.keyGrants() != null) {
			// After the transaction, on a connection of its own: its keys' tokens it did not use.
			this.bucket.giveBackForKeys(queue, TokenBucket.KeyGrants.left(batch.grantsLeft));
		}
		// Suspects count as used whether this poller may run them or not: the upper bound holds.
		this.limiter.used(queue, permit, batch.claimed + batch.suspects.size(), this.tokens);
		batch.counted(this.metrics, queue);
		if (batch.fatal != null) {
			throw new HandlerFatalError(batch.fatal);
		}
		int handled = batch.handled;
		if (mayTakeSuspects) {
			for (long id : batch.suspects) {
				if (!this.running.getAsBoolean()) {
					break;
				}
				handled += runSuspect(queue, id, timer);
			}
		}
		return new Polled(handled, claimAgain(queue, batch, permit.max()), batch.settled, batch.nextVisibleIn);
	}

	/**
	 * Whether the poller is to claim from {@code queue} again at once, whatever {@code batch}
	 * handed out: it was full; or its walk ended at the end of its window without filling it, so
	 * the next claim goes on after the window (rows of FIFO groups whose heads are held or failing
	 * can fill a window, and the groups behind them must still be reached); or it went on from a
	 * cursor, came back short and claims since the last one from the head found messages, so the
	 * head may hold more (rows released behind the cursor). A claim from the head that comes back
	 * short without filling its window ends the run: the poller waits.
	 */
	private boolean claimAgain(String queue, Batch batch, int max) {
		if (!batch.fromCursor) {
			this.foundSinceHead.remove(queue);
		}
		if (batch.claimed > 0) {
			this.foundSinceHead.add(queue);
		}
		return batch.claimed == max || batch.windowEnd != null
				|| (batch.fromCursor && this.foundSinceHead.contains(queue));
	}

	private Batch runBatch(String queue, RateLimiter.Permit permit, TransactionStatus status, Timer timer) {
		Connection connection = DataSourceUtils.getConnection(this.dataSource);
		return RecordedRemovals.asConsumer(connection, () -> runBatch(queue, permit, connection, timer));
	}

	private Batch runBatch(String queue, RateLimiter.Permit permit, Connection connection, Timer timer) {
		long deadline = System.nanoTime() + this.timeout.toNanos();
		int max = permit.max();
		Batch batch = claim(queue, max, permit.keyGrants(), connection);
		List<Delivery> deliveries = new ArrayList<>(batch.messages.size());
		List<ClaimedMessage> usable = new ArrayList<>(batch.messages.size());
		for (ClaimedMessage message : batch.messages) {
			String unusable = ConsumerSession.unusable(message, this.maxPayloadBytes);
			if (unusable != null) {
				Delivery delivery = new Delivery(message);
				delivery.deadLetter(unusable);
				deliveries.add(delivery);
			}
			else {
				usable.add(message);
			}
		}
		List<Delivery> handled = this.dispatcher.isBatch() ? handleBatch(connection, usable, batch, deadline, timer)
				: handleEach(connection, usable, batch, deadline, timer);
		if (System.nanoTime() - deadline > 0 && !handled.isEmpty()) {
			handled = timedOut(connection, handled);
		}
		deliveries.addAll(handled);
		boolean interrupted = Thread.interrupted();
		try {
			complete(connection, queue, deliveries, batch, true);
		}
		finally {
			if (interrupted) {
				Thread.currentThread().interrupt();
			}
		}
		return batch;
	}

	/**
	 * Runs each message's handler, without a savepoint while handlers succeed (see the class
	 * comment); what became of the messages handled. A message left unseen (the poller stops, a
	 * fatal error, the deadline) is not in the result: its lock goes with the commit and nothing of
	 * it was written.
	 */
	private List<Delivery> handleEach(Connection connection, List<ClaimedMessage> messages, Batch batch, long deadline,
			Timer timer) {
		List<Delivery> handled = new ArrayList<>(messages.size());
		// The deliveries whose handlers' writes are in the transaction, with a savepoint of their own
		// or not: a rollback to the claim's savepoint undoes all of them, so none may keep its
		// completion then.
		List<Delivery> kept = new ArrayList<>();
		Deque<ClaimedMessage> pending = new ArrayDeque<>(messages);
		while (!pending.isEmpty() && batch.fatal == null && !mustStop(deadline)) {
			ClaimedMessage message = pending.poll();
			Savepoint savepoint = (this.guarded > 0) ? savepoint(connection) : null;
			Delivery delivery = this.dispatcher.deliver(message, timer);
			batch.handled++;
			batch.fatal = delivery.fatal;
			boolean undo = delivery.thrown || delivery.completion == Completion.GIVE_BACK;
			if (undo && savepoint == null) {
				// Undoes this handler's writes and those of every handler before it in the batch whose
				// writes were kept, guarded or not: they run again, guarded, before the rest, or are
				// released with the rest if the poller must stop. (A handler that failed earlier in the
				// batch keeps its failure: its writes were rolled back already.)
				rollbackToClaim(connection);
				for (int i = kept.size() - 1; i >= 0; i--) {
					pending.addFirst(kept.get(i).message);
				}
				handled.removeAll(kept);
				kept.clear();
			}
			else if (undo) {
				rollbackTo(connection, savepoint);
			}
			if (delivery.thrown) {
				this.guarded = GUARDED_AFTER_FAILURE;
			}
			else if (this.guarded > 0 && savepoint != null) {
				this.guarded--;
			}
			if (delivery.completion != Completion.GIVE_BACK) {
				handled.add(delivery);
				if (!undo) {
					kept.add(delivery);
				}
			}
		}
		return handled;
	}

	/**
	 * Runs a batch listener on every message at once: if it throws, all its writes are rolled back
	 * to the claim's savepoint (so no message of the batch is acked, see
	 * {@link Dispatcher#deliverBatch}). What became of the messages; empty if the listener did not run.
	 */
	private List<Delivery> handleBatch(Connection connection, List<ClaimedMessage> messages, Batch batch,
			long deadline, Timer timer) {
		List<Delivery> handled = new ArrayList<>(messages.size());
		if (messages.isEmpty() || mustStop(deadline)) {
			return handled;
		}
		List<Delivery> delivered = this.dispatcher.deliverBatch(messages, timer, false);
		batch.handled += messages.size();
		if (delivered.stream().anyMatch((delivery) -> delivery.thrown)) {
			rollbackToClaim(connection);
		}
		for (Delivery delivery : delivered) {
			batch.fatal = (batch.fatal != null) ? batch.fatal : delivery.fatal;
			if (delivery.completion != Completion.GIVE_BACK) {
				handled.add(delivery);
			}
		}
		return handled;
	}

	private boolean mustStop(long deadline) {
		return !this.running.getAsBoolean() || Thread.currentThread().isInterrupted() || System.nanoTime() - deadline > 0;
	}

	/**
	 * Releases the handlers' savepoints (the first one releases the ones after it), so that the
	 * completing statements run in the transaction itself. A row locked by a transaction and then
	 * deleted by one of its subtransactions gets a MultiXact as its deleter, and PostgreSQL never
	 * marks the index entries of such a row dead from a scan (only VACUUM removes them): the next
	 * claims would walk every message deleted since the last vacuum.
	 */
	private static void topLevel(Connection connection, Savepoint first) {
		try {
			connection.releaseSavepoint(first);
		}
		catch (SQLException ex) {
			throw new QueueException("Could not release the handlers' savepoints: " + ex.getMessage(), ex);
		}
	}

	/** Undoes every handler's writes since the claim; its savepoint stays. */
	private static void rollbackToClaim(Connection connection) {
		try (Statement statement = connection.createStatement()) {
			statement.execute("ROLLBACK TO SAVEPOINT " + CLAIMED);
		}
		catch (SQLException ex) {
			throw new QueueException("Could not roll a failed handler's writes back: " + ex.getMessage(), ex);
		}
	}

	/**
	 * A savepoint of the transaction's JDBC connection, whatever the transaction manager (JPA's
	 * refuses Spring's nested transactions, yet exposes its connection).
	 */
	private static Savepoint savepoint(Connection connection) {
		try {
			return connection.setSavepoint();
		}
		catch (SQLException ex) {
			throw new QueueException("Could not set a savepoint before a handler: " + ex.getMessage(), ex);
		}
	}

	private static void rollbackTo(Connection connection, Savepoint savepoint) {
		try {
			connection.rollback(savepoint);
		}
		catch (SQLException ex) {
			throw new QueueException("Could not roll a failed handler's writes back: " + ex.getMessage(), ex);
		}
	}

	/**
	 * The transaction outlived its timeout: everything the handlers wrote is rolled back, and every
	 * message handed out fails this attempt (a message dead-lettered unread stays so).
	 */
	private List<Delivery> timedOut(Connection connection, List<Delivery> deliveries) {
		rollbackToClaim(connection);
		return failAll(deliveries);
	}

	private List<Delivery> failAll(List<Delivery> deliveries) {
		QueueException error = timeoutError();
		logger.warn("{}; failing the attempt of the {} messages it handled", error.getMessage(), deliveries.size());
		List<Delivery> failed = new ArrayList<>(deliveries.size());
		for (Delivery delivery : deliveries) {
			boolean unread = delivery.completion == Completion.DEAD_LETTER && !delivery.thrown
					&& ConsumerSession.unusable(delivery.message, this.maxPayloadBytes) != null;
			failed.add(unread ? delivery : this.dispatcher.failed(delivery.message, error));
		}
		return failed;
	}

	private QueueException timeoutError() {
		return new QueueException("The transaction of listener '" + this.dispatcher.listenerId()
				+ "' took longer than its timeout of " + this.timeout.toMillis()
				+ " ms; its handlers' writes were rolled back");
	}

	/** Makes a message visible again at once with the attempt it had before this one. */
	private static Delivery giveBack(ClaimedMessage message) {
		Delivery giveBack = new Delivery(new ClaimedMessage(message.id(), message.queue(), null, null,
				message.priority(), message.attempt() - 1, message.createdAt(), message.maxAttempts(),
				message.deadLetterQueue(), 0, 1, 0, null, 0, message.keeps()));
		giveBack.retry(Duration.ZERO, null);
		return giveBack;
	}

	/**
	 * Claims a batch, only messages whose headers match the listener's filter if it has one: from
	 * where this poller's last full batch ended, as a session poller does (see
	 * {@link ConsumerSession}), or from the head.
	 */
	private Batch claim(String queue, int max, TokenBucket.KeyGrants grants, Connection connection) {
		Batch batch = new Batch();
		Claims claims = (max == this.batchSize) ? this.claims : this.smallerClaims.computeIfAbsent(max, this::claims);
		ClaimCursors.Next next = this.cursors.next(queue);
		ClaimCursor cursor = next.after();
		batch.fromCursor = cursor != null;
		ClaimCursor last = null;
		boolean fair = grants != null
				|| this.cursors.fairClaimDue(queue, this.keyed.computeIfAbsent(queue, this::readKeying));
		String nextKey = null;
		boolean walkFull = false;
		NamedStatement<TransactionalClaim> statement = next.scanHeads()
				? ((cursor != null) ? claims.scanningAfter() : claims.scanning())
				: ((cursor != null) ? claims.walkAfter() : claims.walk());
		TransactionalClaim parameters = new TransactionalClaim(queue,
				(this.filter != null) ? this.filter.documents() : null, this.namespace, this.maxPayloadBytes,
				(cursor != null) ? cursor.priority() : null, (cursor != null) ? cursor.visibleAtMicros() : null,
				(cursor != null) ? cursor.id() : null);
		try (PreparedStatement ps = fair
				? claims.fair().prepare(connection, new QueueSql.TransactionalFairClaim(queue,
						(this.filter != null) ? this.filter.documents() : null, this.namespace, this.maxPayloadBytes,
						this.fairCursors.getOrDefault(queue, ""), parameters.afterPriority(),
						parameters.afterVisibleAtUs(), parameters.afterId(),
						(grants != null) ? grants.argument(++this.claimsWithGrants) : null))
				: statement.prepare(connection, parameters)) {
			boolean rows = ps.execute();
			while (!rows && ps.getUpdateCount() != -1) {
				rows = ps.getMoreResults(); // past the settings before the claim
			}
			try (ResultSet rs = ps.getResultSet()) {
				while (rs.next()) {
					if (grants != null && batch.grantsLeft == null) {
						batch.grantsLeft = rs.getString("grants_left"); // the same in every row
					}
					if (fair && !rs.getString("kind").equals("next_due") && nextKey == null) {
						nextKey = rs.getString("next_key");
						walkFull = rs.getBoolean("walk_full");
					}
					switch (rs.getString("kind")) {
						case "claimed" -> {
							batch.messages.add(ConsumerSession.read(queue, rs));
							if (!fair || !rs.getBoolean("head")) {
								last = ClaimCursor.of(rs); // a fair claim's cursor goes on after its walk
							}
						}
						case "suspect" -> batch.suspects.add(rs.getLong("id"));
						case "window_end" -> {
							batch.windowEnd = ClaimCursor.of(rs);
							int groups = rs.getInt("groups_scanned");
							batch.groupsScanned = rs.wasNull() ? -1 : groups;
						}
						case "next_due" -> {
							long ms = rs.getLong("next_due_ms");
							batch.nextVisibleIn = rs.wasNull() ? null : Duration.ofMillis(Math.max(0, ms));
							batch.settled = true;
						}
						default -> throw new IllegalStateException("Unknown row of a claim: " + rs.getString("kind"));
					}
				}
			}
		}
		catch (SQLException ex) {
			throw new QueueException("Could not claim from queue '" + queue + "'"
					+ ((this.filter != null) ? " (filter '" + this.filter + "')" : "") + " in a transaction: "
					+ ex.getMessage(), ex);
		}
		batch.claimed = batch.messages.size();
		if (fair) {
			this.fairCursors.put(queue, (nextKey != null) ? nextKey : "");
		}
		if (batch.claimed == max || walkFull) {
			// Filled by keys' heads alone, a fair claim walked nothing: the cursor stays where it was.
			this.cursors.full(queue, next, (last != null) ? last : cursor);
		}
		else if (batch.windowEnd != null) {
			this.cursors.windowEnded(queue, batch.windowEnd, batch.groupsScanned);
		}
		return batch;
	}

	/**
	 * Deletes, retries and dead-letters the batch's messages in its transaction: at most three
	 * statements, the first of which releases the claim's savepoint first if {@code releaseClaim}
	 * (see {@link #topLevel}), in the same round trip.
	 */
	private void complete(Connection connection, String queue, List<Delivery> deliveries, Batch batch,
			boolean releaseClaim) {
		List<Long> acks = new ArrayList<>();
		List<Delivery> retries = new ArrayList<>();
		List<Delivery> deadLetters = new ArrayList<>();
		boolean keeps = false;
		for (Delivery delivery : deliveries) {
			switch (delivery.completion) {
				case ACK -> {
					acks.add(delivery.message.id());
					keeps |= delivery.message.keeps();
				}
				case RETRY -> retries.add(delivery);
				case DEAD_LETTER -> deadLetters.add(delivery);
				case GIVE_BACK -> {
				}
			}
		}
		Completions statements = releaseClaim ? this.completionsReleasingClaim : this.completions;
		try {
			if (!acks.isEmpty()) {
				try (PreparedStatement ps = (keeps ? statements.ackKeeping() : statements.ack()).prepare(connection,
						new QueueSql.TransactionalAck(acks.toArray(new Long[0]), queue))) {
					ps.execute();
				}
				statements = this.completions;
			}
			if (!retries.isEmpty()) {
				try (PreparedStatement ps = statements.retry().prepare(connection, new QueueSql.TransactionalRetry(
						ids(retries), attempts(retries),
						retries.stream().map((d) -> Math.max(0, d.delay.toMillis())).toArray(Long[]::new),
						retries.stream().map((d) -> d.error).toArray(String[]::new), this.sql.channel()))) {
					ps.execute();
				}
				statements = this.completions;
			}
			if (!deadLetters.isEmpty()) {
				try (PreparedStatement ps = statements.deadLetter().prepare(connection,
						new QueueSql.TransactionalDeadLetter(ids(deadLetters), attempts(deadLetters),
								deadLetters.stream().map((d) -> d.message.deadLetterQueue()).toArray(String[]::new),
								deadLetters.stream().map((d) -> d.error).toArray(String[]::new), this.sql.channel()))) {
					ps.execute();
				}
				statements = this.completions;
			}
		}
		catch (SQLException ex) {
			throw new QueueException("Could not complete " + deliveries.size() + " messages of queue '" + queue
					+ "' in their transaction: " + ex.getMessage(), ex);
		}
		batch.acked = acks.size();
		batch.retried = retries.size();
		batch.deadLettered = deadLetters.size();
	}

	private static Long[] ids(List<Delivery> deliveries) {
		return deliveries.stream().map((d) -> d.message.id()).toArray(Long[]::new);
	}

	private static Integer[] attempts(List<Delivery> deliveries) {
		return deliveries.stream().map((d) -> d.message.attempt()).toArray(Integer[]::new);
	}

	/**
	 * Runs one message whose consumer died, alone: a session claim writes the attempt that was
	 * lost and holds the message with its advisory lock, then a transaction locks the row, runs the
	 * handler and completes it; the session lock goes once that has committed. How many messages
	 * were handed to the listener (0 or 1).
	 */
	private int runSuspect(String queue, long id, Timer timer) {
		if (this.session == null) {
			this.session = this.sessions.get();
		}
		ConsumerSession.Claim claim = this.session.claimSuspect(queue, id);
		this.metrics.processed(queue, Outcome.DEAD, claim.deadLettered());
		if (claim.messages().isEmpty()) {
			return 0;
		}
		ClaimedMessage message = claim.messages().get(0);
		logger.info("Listener '{}': message {} of queue '{}' was held by a consumer that died or a transaction that "
				+ "was rolled back; running it alone (attempt {} of {})", this.dispatcher.listenerId(), id, queue,
				message.attempt(), message.maxAttempts());
		Batch batch;
		while (true) {
			try {
				batch = this.transactions.execute((status) -> runAlone(queue, message, status, timer));
			}
			catch (RuntimeException | Error ex) {
				// Rolled back: the claim stays open with its attempt written; ending the session frees it.
				closeSession();
				throw ex;
			}
			if (!batch.waitingForSlot) {
				break;
			}
			if (!this.running.getAsBoolean()) {
				this.session.release(List.of(message.id()), false);
				return 0;
			}
			// Its key has no free slot (max in flight per key): the suspect waits, held by the
			// session, until a transaction of another consumer ends.
			try {
				Thread.sleep(SLOT_WAIT.toMillis());
			}
			catch (InterruptedException ex) {
				Thread.currentThread().interrupt();
				this.session.release(List.of(message.id()), false);
				return 0;
			}
		}
		this.session.release(List.of(message.id()), false);
		batch.counted(this.metrics, queue);
		if (batch.fatal != null) {
			throw new HandlerFatalError(batch.fatal);
		}
		return batch.handled;
	}

	private Batch runAlone(String queue, ClaimedMessage message, TransactionStatus status, Timer timer) {
		Connection connection = DataSourceUtils.getConnection(this.dataSource);
		return RecordedRemovals.asConsumer(connection, () -> runAlone(queue, message, connection, timer));
	}

	private Batch runAlone(String queue, ClaimedMessage message, Connection connection, Timer timer) {
		long deadline = System.nanoTime() + this.timeout.toNanos();
		Batch batch = new Batch();
		try (PreparedStatement ps = this.lockClaimed.prepare(connection,
				new QueueSql.LockClaimed(message.id(), queue, this.namespace))) {
			boolean rows = ps.execute();
			while (!rows && ps.getUpdateCount() != -1) {
				rows = ps.getMoreResults(); // past the isolation
			}
			try (ResultSet rs = ps.getResultSet()) {
				if (!rs.next()) {
					return batch; // deleted or moved by hand meanwhile
				}
				if (!rs.getBoolean("slotted")) {
					batch.waitingForSlot = true;
					return batch;
				}
			}
		}
		catch (SQLException ex) {
			throw new QueueException("Could not lock message " + message.id() + " of queue '" + queue + "': "
					+ ex.getMessage(), ex);
		}
		Savepoint savepoint = savepoint(connection);
		Delivery delivery = this.dispatcher.isBatch() ? this.dispatcher.deliverBatch(List.of(message), timer, false).get(0)
				: this.dispatcher.deliver(message, timer);
		batch.handled = 1;
		batch.fatal = delivery.fatal;
		boolean late = System.nanoTime() - deadline > 0;
		if (delivery.thrown || delivery.completion == Completion.GIVE_BACK) {
			rollbackTo(connection, savepoint);
		}
		List<Delivery> deliveries = List.of(delivery);
		if (late) {
			rollbackTo(connection, savepoint);
			deliveries = failAll(deliveries);
		}
		topLevel(connection, savepoint);
		if (delivery.completion == Completion.GIVE_BACK) {
			// Its attempt was written by the claim: give it back, as a stopping session poller does.
			deliveries = List.of(giveBack(message));
		}
		complete(connection, queue, deliveries, batch, false);
		if (delivery.completion == Completion.GIVE_BACK) {
			batch.retried = 0;
		}
		return batch;
	}

	private void closeSession() {
		if (this.session != null) {
			try {
				this.session.close();
			}
			finally {
				this.session = null;
			}
		}
	}

	@Override
	public void close() {
		closeSession();
	}

	/** One transaction's claim and what became of it. */
	private static final class Batch {

		final List<ClaimedMessage> messages = new ArrayList<>();

		final List<Long> suspects = new ArrayList<>();

		/** Whether the claim went on from a cursor rather than from the head. */
		boolean fromCursor;

		/** Whether a suspect was not run because its key had no free slot (max in flight per key). */
		boolean waitingForSlot;

		/** The last row of the claim's window when it walked all of it and came back short; else null. */
		ClaimCursor windowEnd;

		/** How many FIFO groups a claim that found heads through the group index saw; else -1. */
		int groupsScanned = -1;

		Duration nextVisibleIn;

		/** Whether the claim said it found all a claim right after it could (see {@link Polled#settled()}). */
		boolean settled;

		/** Of a claim with grants of its keys' tokens, the tokens it did not use (grants_left, JSON). */
		String grantsLeft;

		int claimed;

		int handled;

		int acked;

		int retried;

		int deadLettered;

		VirtualMachineError fatal;

		/** Counts the outcomes once the transaction has committed. */
		void counted(ListenerMetrics metrics, String queue) {
			metrics.processed(queue, Outcome.SUCCESS, this.acked);
			metrics.processed(queue, Outcome.RETRY, this.retried);
			metrics.processed(queue, Outcome.DEAD, this.deadLettered);
		}

	}

}
