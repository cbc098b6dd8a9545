package io.github.pgqueue.internal;

import java.time.Instant;

import io.github.pgqueue.QueueNames;

/**
 * Every statement pgqueue runs, for one schema: the named statements of the {@code .sql}
 * resources beside this class (see {@link NamedStatement}), each with the record of its parameters.
 * The statements' comments there say what each does and why; the settings a consumer's connection
 * runs them under are here.
 */
public final class QueueSql {

	/**
	 * Run on a consumer's connection before its statements are planned: one generic plan per
	 * statement, and one that walks indexes whatever the size of the message table when it is
	 * planned. The driver prepares a statement run often; PostgreSQL would then plan the claim
	 * again on every call (its generic plan is estimated dearer than a custom one, though it runs
	 * faster), and planning a claim costs several times running it. Planned while the table is empty, as it is when an application
	 * starts, every plan scans the whole table (and the claim's hash-joins one more scan of it); once
	 * a backlog builds, each statement would read all of it and the backlog build faster. No
	 * statement of a consumer ever needs a sequential scan.
	 */
	public static final String INDEX_PLANS = "SET enable_seqscan = off; SET plan_cache_mode = force_generic_plan";

	/** Undoes {@link #INDEX_PLANS} on a connection that goes back to a pool. */
	public static final String DEFAULT_PLANS = "RESET enable_seqscan; RESET plan_cache_mode";

	/**
	 * Run on a consumer session's connection before its statements: they run in READ COMMITTED
	 * whatever the default isolation of the database, the role or the pool. The protocol depends on
	 * it: a claim's re-check and the suspect tests read rows as they are now, each query of
	 * listed_by_the_dead (V14) must see what committed before it, and under REPEATABLE READ or
	 * SERIALIZABLE claims and completions fail on rows other consumers changed. Returns the default
	 * it replaced, given back when the session closes.
	 */
	public static final String READ_COMMITTED = "SELECT current_setting('default_transaction_isolation'), "
			+ "set_config('default_transaction_isolation', 'read committed', false)";

	/**
	 * The first statement of a transactional consumer's transaction, in the claim's round trip:
	 * READ COMMITTED for that transaction, as {@link #READ_COMMITTED} for a session; the handlers
	 * run in it too. PostgreSQL refuses it only after a query in a transaction of another level.
	 */
	public static final String READ_COMMITTED_TRANSACTION = "SET TRANSACTION ISOLATION LEVEL READ COMMITTED";

	/**
	 * {@code statement} planned as {@link #INDEX_PLANS} says, in a transaction that runs other code
	 * (a transactional consumer's handlers): the settings are the transaction's only while the
	 * statement is planned, then back to the connection's defaults, all in one round trip with
	 * {@code before} (statements without parameters, or empty) and {@code after} (or empty).
	 */
	public static <P extends Record> NamedStatement<P> withIndexPlans(String before, NamedStatement<P> statement,
			String after) {
		return statement.between(
				(before.isEmpty() ? "" : before + ";\n") + "SET LOCAL enable_seqscan = off;\nSET LOCAL plan_cache_mode = force_generic_plan",
				"SET LOCAL enable_seqscan TO DEFAULT;\nSET LOCAL plan_cache_mode TO DEFAULT" + (after.isEmpty() ? "" : ";\n" + after));
	}

	/**
	 * How many candidates of one priority a claim looks at, beyond its batch, before it gives up on
	 * that priority: written in the claims' text as {@code {batch} + 1000} (a test holds the two
	 * together).
	 */
	public static final int CLAIM_WINDOW = 1000;

	/**
	 * How many FIFO groups with messages a queue has at least when its heads are not scarce: a
	 * transactional claim that found heads through the group index and saw this many groups goes
	 * back to walking the claim index. The scan costs an index descent per group, and where
	 * consumers take heads fast its snapshot's heads are mostly taken by the time it tries them.
	 */
	public static final int SCARCE_GROUPS = CLAIM_WINDOW / 2;


	/** A statement without parameters. */
	public record None() {
	}

	// session.sql

	/** Parameters of session claims: {@code claim_walk}, {@code claim_walk_after}, {@code claim_scanning_heads}. */
	public record SessionClaim(String queue, boolean mayTakeSuspects, String[] filter, int namespace, long session,
			int payloadLimit, Integer afterPriority, Long afterVisibleAtUs, Long afterId) {
	}

	/**
	 * Parameters of {@code claim_fair}: a session claim that goes on after the key {@code afterKey}
	 * ("" for the first), and from the head or, with the last three, from a cursor.
	 */
	public record SessionFairClaim(String queue, boolean mayTakeSuspects, String[] filter, int namespace, long session,
			int payloadLimit, String afterKey, Integer afterPriority, Long afterVisibleAtUs, Long afterId,
			String grants) {
	}

	/** Parameters of {@code release_slots}: the lock keys of the per-key slots a fair claim took. */
	public record SlotLocks(Long[] lockKeys) {
	}

	/** Parameters of {@code claim_by_id} and {@code claim_suspect}. */
	public record ClaimOne(long id, String queue, int namespace, long session, int payloadLimit) {
	}

	/** Parameters of a session's {@code ack}. */
	public record Ack(Long[] ids, String queue, int pid, int namespace, long session) {
	}

	/** Parameters of a session's {@code retry}. */
	public record Retry(Long[] ids, Long[] delaysMs, String[] errors, int pid, int namespace, long session,
			String channel) {
	}

	/** Parameters of a session's {@code dead_letter}. */
	public record DeadLetter(Long[] ids, String[] deadLetterQueues, String[] errors, int pid, int namespace,
			long session, String channel) {
	}

	/** Parameters of {@code release}. */
	public record Release(boolean attemptEnded, Long[] ids, int namespace, long session) {
	}

	/** Parameters of {@code close_session}. */
	public record CloseSession(long session, String defaultIsolation) {
	}

	/** Parameters of {@code queues_with_visible_messages}. */
	public record Queues(String[] queues) {
	}

	public final NamedStatement<None> namespace;

	public final NamedStatement<None> openSession;

	public final NamedStatement<CloseSession> closeSession;

	public final NamedStatement<None> backendPid;

	public final NamedStatement<None> unlockAll;

	/** Takes a batch size and filter: {@link NamedStatement#variant}. */
	public final NamedStatement<SessionClaim> claimWalk;

	public final NamedStatement<SessionClaim> claimWalkAfter;

	/** Takes a batch size and filter: {@link NamedStatement#variant}. */
	public final NamedStatement<SessionFairClaim> claimFair;

	public final NamedStatement<Queue> concurrencyKeyOf;

	public final NamedStatement<SlotLocks> releaseSlots;

	public final NamedStatement<SessionClaim> claimScanningHeads;

	public final NamedStatement<ClaimOne> claimById;

	public final NamedStatement<ClaimOne> claimSuspect;

	public final NamedStatement<Ack> ack;

	public final NamedStatement<Ack> ackKeeping;

	public final NamedStatement<Retry> retry;

	public final NamedStatement<DeadLetter> deadLetter;

	public final NamedStatement<Release> release;

	public final NamedStatement<Queues> queuesWithVisibleMessages;

	// transactional.sql

	/** Parameters of transactional claims (the four {@code claim_*} of transactional.sql). */
	public record TransactionalClaim(String queue, String[] filter, int namespace, int payloadLimit,
			Integer afterPriority, Long afterVisibleAtUs, Long afterId) {
	}

	/** Parameters of the transactional {@code claim_fair}: it goes on after the key {@code afterKey} ("" for the first). */
	public record TransactionalFairClaim(String queue, String[] filter, int namespace, int payloadLimit,
			String afterKey, Integer afterPriority, Long afterVisibleAtUs, Long afterId, String grants) {
	}

	/** Parameters of a transaction's {@code ack}. */
	public record TransactionalAck(Long[] ids, String queue) {
	}

	/** Parameters of a transaction's {@code retry}. */
	public record TransactionalRetry(Long[] ids, Integer[] attempts, Long[] delaysMs, String[] errors,
			String channel) {
	}

	/** Parameters of a transaction's {@code dead_letter}. */
	public record TransactionalDeadLetter(Long[] ids, Integer[] attempts, String[] deadLetterQueues, String[] errors,
			String channel) {
	}

	/** Parameters of {@code lock_claimed}. */
	public record LockClaimed(long id, String queue, int namespace) {
	}

	public final NamedStatement<TransactionalClaim> transactionalClaimWalk;

	/** Takes a batch size and filter: {@link NamedStatement#variant}. */
	public final NamedStatement<TransactionalFairClaim> transactionalClaimFair;

	public final NamedStatement<TransactionalClaim> transactionalClaimWalkAfter;

	public final NamedStatement<TransactionalClaim> transactionalClaimScanningHeads;

	public final NamedStatement<TransactionalClaim> transactionalClaimScanningHeadsAfter;

	public final NamedStatement<TransactionalAck> transactionalAck;

	public final NamedStatement<TransactionalAck> transactionalAckKeeping;

	public final NamedStatement<TransactionalRetry> transactionalRetry;

	public final NamedStatement<TransactionalDeadLetter> transactionalDeadLetter;

	public final NamedStatement<LockClaimed> lockClaimed;

	// send.sql

	/** Parameters of {@code send} and {@code send_deduplicated} (which alone reads the key). */
	public record Send(String queue, String payload, String headers, int priority, Instant notBefore, long delayMs,
			Integer maxAttempts, String groupKey, String deduplicationKey) {
	}

	/** Parameters of {@code send_plain}. */
	public record SendPlain(String queue, String payload) {
	}

	/** Parameters of {@code send_batch} and {@code send_grouped_batch}. */
	public record SendBatch(String queue, String headers, int priority, Instant notBefore, long delayMs,
			Integer maxAttempts, String groupKey, String[] payloads) {
	}

	/** Parameters of {@code publish}. */
	public record Publish(String exchange, String routingKey, String payload, String headers, int priority,
			Instant notBefore, long delayMs, Integer maxAttempts, String deduplicationKey, String groupKey) {
	}

	/** A statement about one exchange: {@code unroutable_policy}, {@code ensure_exchange}. */
	public record Exchange(String exchange) {
	}

	public final NamedStatement<Send> send;

	public final NamedStatement<SendPlain> sendPlain;

	public final NamedStatement<Send> sendDeduplicated;

	public final NamedStatement<SendBatch> sendBatch;

	public final NamedStatement<SendBatch> sendGroupedBatch;

	public final NamedStatement<Publish> publish;

	public final NamedStatement<Exchange> unroutablePolicy;

	// admin.sql

	/** Parameters of {@code cancel}. */
	public record Cancel(long id, String queue, int namespace) {
	}

	/** Parameters of {@code exists}. */
	public record Exists(long id, String queue) {
	}

	/** Parameters of {@code stats}. */
	public record Stats(String queue, int namespace) {
	}

	/** Parameters of {@code upsert_queue}. */
	public record UpsertQueue(String name, int maxAttempts, long backoffInitialMs, double backoffMultiplier,
			long backoffMaxMs, String deadLetterQueue,
			Long deduplicationWindowMs, Long retentionMs, Integer rateLimitPermits, Integer rateLimitPeriodMs,
			String concurrencyKey, Integer maxInFlightPerKey, Integer rateLimitPerKeyPermits,
			Integer rateLimitPerKeyPeriodMs) {
	}

	/** Parameters of {@code redrive}. */
	public record Redrive(String queue, String deadLetterQueue, int window, int namespace, int max, String channel) {
	}

	/** Parameters of {@code declare_exchange}. */
	public record DeclareExchange(String exchange, String type, String unroutable, String[] queues,
			String[] routingKeys, String[] keyRegexes) {
	}

	/** A statement about one queue. */
	public record Queue(String queue) {
	}

	/** One binding of an exchange, with the regular expression its routing key is matched by. */
	public record BindQueue(String exchange, String queue, String routingKey, String keyRegex) {
	}

	/** One binding of an exchange. */
	public record UnbindQueue(String exchange, String queue, String routingKey) {
	}

	public final NamedStatement<Cancel> cancel;

	public final NamedStatement<Exists> exists;

	public final NamedStatement<Stats> stats;

	public final NamedStatement<UpsertQueue> upsertQueue;

	public final NamedStatement<Redrive> redrive;

	public final NamedStatement<DeclareExchange> declareExchange;

	public final NamedStatement<Exchange> ensureExchange;

	public final NamedStatement<BindQueue> bindQueue;

	public final NamedStatement<UnbindQueue> unbindQueue;

	public final NamedStatement<Queue> deadLetterQueue;

	public final NamedStatement<Queue> deadLetterQueueOfDeclared;

	public final NamedStatement<None> declaredQueues;

	/** Parameters of {@code create_queue} and {@code alter_queue}. */
	public record QueueDefinition(String name, int maxAttempts, long backoffInitialMs, double backoffMultiplier,
			long backoffMaxMs, String deadLetterQueue,
			Long deduplicationWindowMs, Long retentionMs, Integer rateLimitPermits, Integer rateLimitPeriodMs,
			String concurrencyKey, Integer maxInFlightPerKey, Integer rateLimitPerKeyPermits,
			Integer rateLimitPerKeyPeriodMs) {
	}

	/** Parameters of {@code set_paused}. */
	public record SetPaused(String queue, boolean paused) {
	}

	/** Parameters of {@code wake}. */
	public record Wake(String channel, String queue) {
	}

	/** Parameters of {@code purge_chunk}. */
	public record PurgeChunk(String queue, long afterId, boolean everything, int chunk, int namespace) {
	}

	/** Parameters of {@code redrive_ids}. */
	public record RedriveIds(Long[] ids, int namespace, String channel) {
	}

	/** A statement about one role. */
	public record Role(String role) {
	}

	/** Parameters of {@code table_privileges}. */
	public record TablePrivileges(String schema, String role) {
	}

	/** Parameters of {@code grant_access} and {@code revoke_access}. */
	public record Access(String queue, String role, boolean send, boolean consume) {
	}

	/** Parameters of {@code record_removal}. */
	public record RecordRemoval(String removal) {
	}

	public final NamedStatement<QueueDefinition> createQueue;

	public final NamedStatement<QueueDefinition> alterQueue;

	/** Parameters of {@code archived}: null for a condition not asked. */
	public record Archived(String queue, Long id, String headerName, String headerValue, java.time.Instant completedFrom,
			java.time.Instant completedBefore, int max) {
	}

	/** Parameters of {@code resend_archived}. */
	public record ResendArchived(String queue, long id) {
	}

	public final NamedStatement<None> archiveUpkeep;

	public final NamedStatement<Archived> archived;

	public final NamedStatement<ResendArchived> resendArchived;

	public final NamedStatement<Queue> dropQueue;

	public final NamedStatement<SetPaused> setPaused;

	public final NamedStatement<Wake> wake;

	public final NamedStatement<Queue> isPaused;

	public final NamedStatement<Queue> isDeclared;

	public final NamedStatement<None> queues;

	public final NamedStatement<Queue> messageCount;

	public final NamedStatement<Queue> boundExchanges;

	public final NamedStatement<PurgeChunk> purgeChunk;

	public final NamedStatement<RedriveIds> redriveIds;

	public final NamedStatement<Queue> deadLetterQueueOf;

	public final NamedStatement<Role> roleExists;

	public final NamedStatement<TablePrivileges> tablePrivileges;

	public final NamedStatement<Access> grantAccess;

	public final NamedStatement<None> lockAccess;

	public final NamedStatement<Access> revokeAccess;

	public final NamedStatement<None> forgetAccess;

	public final NamedStatement<RecordRemoval> recordRemoval;

	public final NamedStatement<None> currentTransaction;

	// schedule.sql

	/** A statement about one schedule; {@code schedules} takes a null name for all of them. */
	public record ScheduleName(String name) {
	}

	/** Parameters of {@code due_schedules}. */
	public record DueSchedules(long horizonMs, int limit) {
	}

	/** Parameters of {@code fire_schedule}: the compare-and-set of one tick. */
	public record FireSchedule(String name, Instant due, Instant nextFireAt, boolean send, Instant tick, String cron,
			String zone, String missed) {
	}

	/** Parameters of {@code create_schedule} and {@code alter_schedule}; payload and headers are JSON. */
	public record ScheduleDefinition(String name, String cron, String zone, String queue, String exchange,
			String routingKey, String payload, String headers, String missed, Instant nextFireAt) {
	}

	/** Parameters of {@code resume_schedule}. */
	public record ResumeSchedule(String name, String cron, String zone, Instant nextFireAt) {
	}

	/** Parameters of {@code target_declared}: one of the two is null. */
	public record ScheduleTarget(String queue, String exchange) {
	}

	public final NamedStatement<None> databaseNow;

	public final NamedStatement<DueSchedules> dueSchedules;

	public final NamedStatement<FireSchedule> fireSchedule;

	public final NamedStatement<ScheduleDefinition> createSchedule;

	public final NamedStatement<ScheduleDefinition> alterSchedule;

	public final NamedStatement<ScheduleName> pauseSchedule;

	public final NamedStatement<ResumeSchedule> resumeSchedule;

	public final NamedStatement<ScheduleName> removeSchedule;

	public final NamedStatement<ScheduleName> schedules;

	public final NamedStatement<ScheduleTarget> targetDeclared;

	// limits.sql

	/** Parameters of {@code take_tokens}. */
	public record TakeTokens(String queue, int wanted) {
	}

	/** Parameters of {@code give_back_tokens}. */
	public record GiveBackTokens(String queue, int unused) {
	}

	/** Parameters of {@code take_key_tokens}. */
	public record TakeKeyTokens(String queue, int wanted, String afterKey) {
	}

	/** Parameters of {@code give_back_key_tokens}: keys and their unused tokens, side by side. */
	public record GiveBackKeyTokens(String queue, String[] keys, Integer[] unused) {
	}

	public final NamedStatement<TakeTokens> takeTokens;

	public final NamedStatement<TakeKeyTokens> takeKeyTokens;

	public final NamedStatement<GiveBackKeyTokens> giveBackKeyTokens;

	public final NamedStatement<GiveBackTokens> giveBackTokens;

	public final NamedStatement<Queues> rateLimitedQueues;

	public final NamedStatement<None> rateLimits;

	public final NamedStatement<None> keyLimits;

	private final String schema;

	private static final java.util.Map<String, QueueSql> BY_SCHEMA = new java.util.concurrent.ConcurrentHashMap<>();

	/**
	 * The statements of {@code schema}: one instance per schema in a JVM, so that a context and the
	 * listener containers built on it share statements and their claim variants.
	 */
	public static QueueSql of(String schema) {
		return BY_SCHEMA.computeIfAbsent(QueueNames.requireSchema(schema), QueueSql::new);
	}

	private QueueSql(String schema) {
		this.schema = QueueNames.requireSchema(schema);
		String s = this.schema;
		this.namespace = NamedStatement.load(s, "session", "namespace", None.class);
		this.openSession = NamedStatement.load(s, "session", "open_session", None.class);
		this.closeSession = NamedStatement.load(s, "session", "close_session", CloseSession.class);
		this.backendPid = NamedStatement.load(s, "session", "backend_pid", None.class);
		this.unlockAll = NamedStatement.load(s, "session", "unlock_all", None.class);
		this.claimWalk = NamedStatement.load(s, "session", "claim_walk", SessionClaim.class);
		this.claimWalkAfter = NamedStatement.load(s, "session", "claim_walk_after", SessionClaim.class);
		this.claimFair = NamedStatement.load(s, "session", "claim_fair", SessionFairClaim.class);
		this.concurrencyKeyOf = NamedStatement.load(s, "session", "concurrency_key_of", Queue.class);
		this.releaseSlots = NamedStatement.load(s, "session", "release_slots", SlotLocks.class);
		this.claimScanningHeads = NamedStatement.load(s, "session", "claim_scanning_heads", SessionClaim.class);
		this.claimById = NamedStatement.load(s, "session", "claim_by_id", ClaimOne.class);
		this.claimSuspect = NamedStatement.load(s, "session", "claim_suspect", ClaimOne.class);
		this.ack = NamedStatement.load(s, "session", "ack", Ack.class);
		this.ackKeeping = NamedStatement.load(s, "session", "ack_keeping", Ack.class);
		this.retry = NamedStatement.load(s, "session", "retry", Retry.class);
		this.deadLetter = NamedStatement.load(s, "session", "dead_letter", DeadLetter.class);
		this.release = NamedStatement.load(s, "session", "release", Release.class);
		this.queuesWithVisibleMessages = NamedStatement.load(s, "session", "queues_with_visible_messages", Queues.class);
		this.transactionalClaimWalk = NamedStatement.load(s, "transactional", "claim_walk", TransactionalClaim.class);
		this.transactionalClaimFair = NamedStatement.load(s, "transactional", "claim_fair",
				TransactionalFairClaim.class);
		this.transactionalClaimWalkAfter = NamedStatement.load(s, "transactional", "claim_walk_after",
				TransactionalClaim.class);
		this.transactionalClaimScanningHeads = NamedStatement.load(s, "transactional", "claim_scanning_heads",
				TransactionalClaim.class);
		this.transactionalClaimScanningHeadsAfter = NamedStatement.load(s, "transactional",
				"claim_scanning_heads_after", TransactionalClaim.class);
		this.transactionalAck = NamedStatement.load(s, "transactional", "ack", TransactionalAck.class);
		this.transactionalAckKeeping = NamedStatement.load(s, "transactional", "ack_keeping", TransactionalAck.class);
		this.transactionalRetry = NamedStatement.load(s, "transactional", "retry", TransactionalRetry.class);
		this.transactionalDeadLetter = NamedStatement.load(s, "transactional", "dead_letter",
				TransactionalDeadLetter.class);
		this.lockClaimed = NamedStatement.load(s, "transactional", "lock_claimed", LockClaimed.class);
		this.send = NamedStatement.load(s, "send", "send", Send.class);
		this.sendPlain = NamedStatement.load(s, "send", "send_plain", SendPlain.class);
		this.sendDeduplicated = NamedStatement.load(s, "send", "send_deduplicated", Send.class);
		this.sendBatch = NamedStatement.load(s, "send", "send_batch", SendBatch.class);
		this.sendGroupedBatch = NamedStatement.load(s, "send", "send_grouped_batch", SendBatch.class);
		this.publish = NamedStatement.load(s, "send", "publish", Publish.class);
		this.unroutablePolicy = NamedStatement.load(s, "send", "unroutable_policy", Exchange.class);
		this.cancel = NamedStatement.load(s, "admin", "cancel", Cancel.class);
		this.exists = NamedStatement.load(s, "admin", "exists", Exists.class);
		this.stats = NamedStatement.load(s, "admin", "stats", Stats.class);
		this.upsertQueue = NamedStatement.load(s, "admin", "upsert_queue", UpsertQueue.class);
		this.redrive = NamedStatement.load(s, "admin", "redrive", Redrive.class);
		this.declareExchange = NamedStatement.load(s, "admin", "declare_exchange", DeclareExchange.class);
		this.ensureExchange = NamedStatement.load(s, "admin", "ensure_exchange", Exchange.class);
		this.bindQueue = NamedStatement.load(s, "admin", "bind_queue", BindQueue.class);
		this.unbindQueue = NamedStatement.load(s, "admin", "unbind_queue", UnbindQueue.class);
		this.deadLetterQueue = NamedStatement.load(s, "admin", "dead_letter_queue", Queue.class);
		this.deadLetterQueueOfDeclared = NamedStatement.load(s, "admin", "dead_letter_queue_of_declared", Queue.class);
		this.declaredQueues = NamedStatement.load(s, "admin", "declared_queues", None.class);
		this.createQueue = NamedStatement.load(s, "admin", "create_queue", QueueDefinition.class);
		this.alterQueue = NamedStatement.load(s, "admin", "alter_queue", QueueDefinition.class);
		this.archiveUpkeep = NamedStatement.load(s, "admin", "archive_upkeep", None.class);
		this.archived = NamedStatement.load(s, "admin", "archived", Archived.class);
		this.resendArchived = NamedStatement.load(s, "admin", "resend_archived", ResendArchived.class);
		this.dropQueue = NamedStatement.load(s, "admin", "drop_queue", Queue.class);
		this.setPaused = NamedStatement.load(s, "admin", "set_paused", SetPaused.class);
		this.wake = NamedStatement.load(s, "admin", "wake", Wake.class);
		this.isPaused = NamedStatement.load(s, "admin", "is_paused", Queue.class);
		this.isDeclared = NamedStatement.load(s, "admin", "is_declared", Queue.class);
		this.queues = NamedStatement.load(s, "admin", "queues", None.class);
		this.messageCount = NamedStatement.load(s, "admin", "message_count", Queue.class);
		this.boundExchanges = NamedStatement.load(s, "admin", "bound_exchanges", Queue.class);
		this.purgeChunk = NamedStatement.load(s, "admin", "purge_chunk", PurgeChunk.class);
		this.redriveIds = NamedStatement.load(s, "admin", "redrive_ids", RedriveIds.class);
		this.deadLetterQueueOf = NamedStatement.load(s, "admin", "dead_letter_queue_of", Queue.class);
		this.roleExists = NamedStatement.load(s, "admin", "role_exists", Role.class);
		this.tablePrivileges = NamedStatement.load(s, "admin", "table_privileges", TablePrivileges.class);
		this.grantAccess = NamedStatement.load(s, "admin", "grant_access", Access.class);
		this.lockAccess = NamedStatement.load(s, "admin", "lock_access", None.class);
		this.revokeAccess = NamedStatement.load(s, "admin", "revoke_access", Access.class);
		this.forgetAccess = NamedStatement.load(s, "admin", "forget_access", None.class);
		this.recordRemoval = NamedStatement.load(s, "admin", "record_removal", RecordRemoval.class);
		this.currentTransaction = NamedStatement.load(s, "admin", "current_transaction", None.class);
		this.databaseNow = NamedStatement.load(s, "schedule", "database_now", None.class);
		this.dueSchedules = NamedStatement.load(s, "schedule", "due_schedules", DueSchedules.class);
		this.fireSchedule = NamedStatement.load(s, "schedule", "fire_schedule", FireSchedule.class);
		this.createSchedule = NamedStatement.load(s, "schedule", "create_schedule", ScheduleDefinition.class);
		this.alterSchedule = NamedStatement.load(s, "schedule", "alter_schedule", ScheduleDefinition.class);
		this.pauseSchedule = NamedStatement.load(s, "schedule", "pause_schedule", ScheduleName.class);
		this.resumeSchedule = NamedStatement.load(s, "schedule", "resume_schedule", ResumeSchedule.class);
		this.removeSchedule = NamedStatement.load(s, "schedule", "remove_schedule", ScheduleName.class);
		this.schedules = NamedStatement.load(s, "schedule", "schedules", ScheduleName.class);
		this.targetDeclared = NamedStatement.load(s, "schedule", "target_declared", ScheduleTarget.class);

		this.takeTokens = NamedStatement.load(s, "limits", "take_tokens", TakeTokens.class);
		this.giveBackTokens = NamedStatement.load(s, "limits", "give_back_tokens", GiveBackTokens.class);
		this.takeKeyTokens = NamedStatement.load(s, "limits", "take_key_tokens", TakeKeyTokens.class);
		this.giveBackKeyTokens = NamedStatement.load(s, "limits", "give_back_key_tokens", GiveBackKeyTokens.class);
		this.rateLimitedQueues = NamedStatement.load(s, "limits", "rate_limited_queues", Queues.class);
		this.rateLimits = NamedStatement.load(s, "limits", "rate_limits", None.class);
		this.keyLimits = NamedStatement.load(s, "limits", "key_limits", None.class);
	}

	/** The validated schema name. */
	public String schema() {
		return this.schema;
	}

	/** The NOTIFY channel: named like the schema, so that two pgqueue schemas do not wake each other. */
	public String channel() {
		return this.schema;
	}

}
