package io.github.pgqueue;

import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;

import io.github.pgqueue.internal.QueueSql;
import io.github.pgqueue.internal.RecordedRemovals;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import org.springframework.jdbc.core.JdbcTemplate;
import org.springframework.jdbc.core.ResultSetExtractor;
import org.springframework.jdbc.datasource.DataSourceTransactionManager;
import org.springframework.transaction.support.TransactionTemplate;

/**
 * Queue administration at runtime, for every JVM that shares the database: declare, create, alter
 * and drop queues, declare exchanges, purge queues, pause and resume their consumption, list them
 * with their stats, redrive their dead letters, and create, alter, pause, resume, remove and list
 * recurring messages (schedules). Usable with or without Spring: {@code new QueueAdmin(context)}, on the
 * {@link QueueContext} its template and listeners share.
 * <p>
 * Nothing here touches a message a consumer holds: a purge skips them, and a drop that would
 * have to delete one fails.
 */
public final class QueueAdmin {

	private static final Logger logger = LoggerFactory.getLogger(QueueAdmin.class);

	/** Rows a purge deletes per transaction (each deleted row takes a lock for its transaction). */
	private static final int PURGE_CHUNK = 1000;

	/** How many dead letters a redrive looks at beyond {@code max}, for those consumers hold. */
	private static final int REDRIVE_WINDOW = 1000;

	private final QueueContext context;

	/** Reads the stats of {@link #list()}. */
	private final QueueTemplate template;

	private final JdbcTemplate jdbc;

	private final QueueSql sql;

	private final RecordedRemovals removals;

	private final Schedules schedules;

	/** Runs a revoke's statements in one transaction (joining the caller's, if any). */
	private final TransactionTemplate accessChange;

	/** Administration of the queues of {@code context}'s schema. */
	public QueueAdmin(QueueContext context) {
		this.context = context;
		this.template = new QueueTemplate(context);
		this.jdbc = new JdbcTemplate(context.dataSource());
		this.sql = context.sql();
		this.removals = context.removals();
		this.schedules = new Schedules(context);
		this.accessChange = new TransactionTemplate(new DataSourceTransactionManager(context.dataSource()));
	}

	/**
	 * Creates a queue with {@code definition}'s policy.
	 * @throws IllegalStateException if it exists (change it with {@link #alter})
	 */
	public void create(QueueDefinition definition) {
		checkNoDeadLetterCycle(definition);
		int inserted = this.jdbc.update(this.sql.createQueue.with(definition(definition)));
		if (inserted == 0) {
			throw new IllegalStateException("Queue '" + definition.name() + "' already exists; change it with alter");
		}
		if (definition.retention() != null) {
			upkeepArchive();
		}
	}

	/**
	 * Changes the policy of an existing queue; consumers apply it from their next claim.
	 * @throws IllegalStateException if it does not exist (create it with {@link #create})
	 */
	public void alter(QueueDefinition definition) {
		checkNoDeadLetterCycle(definition);
		int updated = this.jdbc.update(this.sql.alterQueue.with(definition(definition)));
		if (updated == 0) {
			throw new IllegalStateException("Queue '" + definition.name() + "' does not exist; create it first");
		}
		if (definition.retention() != null) {
			upkeepArchive();
		}
	}

	/**
	 * Drops a queue's definition. A queue that holds messages is dropped only if {@code force}, and
	 * then its messages are deleted first; a queue bound to an exchange is not dropped.
	 * @throws IllegalStateException if the queue does not exist, is bound, holds messages and
	 * {@code force} is false, or holds messages a consumer is handling right now
	 */
	public void drop(String queue, boolean force) {
		requireDeclared(queue);
		List<String> exchanges = this.jdbc.query(this.sql.boundExchanges.with(new QueueSql.Queue(queue)),
				(rs, row) -> rs.getString("exchange"));
		if (!exchanges.isEmpty()) {
			throw new IllegalStateException("Queue '" + queue + "' is bound to exchange(s) " + exchanges
					+ "; remove those bindings before dropping it");
		}
		long held = count(queue);
		if (held > 0 && !force) {
			throw new IllegalStateException("Queue '" + queue + "' holds " + held + " message(s); purge it first, "
					+ "or drop it with force to delete them");
		}
		if (held > 0) {
			purge(queue, Purge.ALL);
			long left = count(queue);
			if (left > 0) {
				throw new IllegalStateException("Queue '" + queue + "' still holds " + left + " message(s) that "
						+ "consumers are handling right now; try again once they are done");
			}
		}
		this.jdbc.update(this.sql.dropQueue.with(new QueueSql.Queue(queue)));
	}

	/** What a purge deletes. */
	public enum Purge {

		/** The messages visible now: neither delayed, backing off nor held. */
		READY,

		/** Every message not held by a consumer, delayed ones included. */
		ALL

	}

	/**
	 * Deletes messages of {@code queue}, never one a consumer holds; returns how many. Works in
	 * chunks, each its own transaction, so a large purge holds few locks at a time.
	 */
	public long purge(String queue, Purge scope) {
		QueueNames.requireQueue(queue);
		long after = 0;
		long deleted = 0;
		int ns = namespace();
		while (true) {
			long from = after;
			long[] chunk = this.removals.run((connection) -> {
				try (PreparedStatement ps = this.sql.purgeChunk.prepare(connection,
						new QueueSql.PurgeChunk(queue, from, scope == Purge.ALL, PURGE_CHUNK, ns));
						ResultSet rs = ps.executeQuery()) {
					rs.next();
					return new long[] { rs.getLong("last_id"), rs.getLong("looked"), rs.getLong("deleted") };
				}
			});
			deleted += chunk[2];
			if (chunk[1] < PURGE_CHUNK) {
				return deleted;
			}
			after = chunk[0];
		}
	}

	/**
	 * Pauses consumption of {@code queue} for every consumer in every JVM: from their next claim
	 * (within one poll interval), listeners and {@code receive} take nothing from it. Sends still go
	 * in; messages being handled finish normally.
	 * @throws IllegalStateException if the queue does not exist
	 */
	public void pause(String queue) {
		setPaused(queue, true);
	}

	/** Resumes consumption of a paused queue: idle listeners are woken at once. */
	public void resume(String queue) {
		setPaused(queue, false);
	}

	private void setPaused(String queue, boolean paused) {
		QueueNames.requireQueue(queue);
		if (this.jdbc.update(this.sql.setPaused.with(new QueueSql.SetPaused(queue, paused))) == 0) {
			throw new IllegalStateException("Queue '" + queue + "' does not exist; declare it before "
					+ (paused ? "pausing" : "resuming") + " it");
		}
		if (!paused) {
			this.jdbc.query(this.sql.wake.with(new QueueSql.Wake(this.sql.channel(), queue)),
					(ResultSetExtractor<Void>) (rs) -> null);
		}
	}

	/** Whether consumption of {@code queue} is paused. */
	public boolean isPaused(String queue) {
		QueueNames.requireQueue(queue);
		return this.jdbc.query(this.sql.isPaused.with(new QueueSql.Queue(queue)), (rs, row) -> rs.getBoolean("paused"))
			.get(0);
	}

	/**
	 * The declared queues, by name, with their policy, whether they are paused, and their stats now.
	 */
	public List<QueueInfo> list() {
		List<QueueInfo> queues = this.jdbc.query(this.sql.queues.with(new QueueSql.None()), (rs, row) -> new QueueInfo(
				new QueueDefinition(rs.getString("name"), rs.getInt("max_attempts"),
						Duration.ofMillis(rs.getLong("backoff_initial_ms")), rs.getDouble("backoff_multiplier"),
						Duration.ofMillis(rs.getLong("backoff_max_ms")), rs.getString("dead_letter_queue"),
						duration(rs, "deduplication_window_ms"), duration(rs, "retention_ms"), rateLimit(rs),
						concurrencyKey(rs)),
				rs.getBoolean("paused"), null));
		// stats after the rows are read: each is a statement of its own on the template
		return queues.stream().map((info) -> info.withStats(this.template.stats(info.definition().name()))).toList();
	}

	/**
	 * Every queue with a rate limit: its limit, the tokens its bucket holds now, and how many of its
	 * ready messages wait for the limit (those beyond what the bucket could hand out at once).
	 */
	public List<RateLimitState> rateLimits() {
		List<RateLimitState> limits = this.jdbc.query(this.sql.rateLimits.with(new QueueSql.None()),
				(rs, row) -> new RateLimitState(rs.getString("name"), rateLimit(rs), rs.getDouble("tokens"), 0));
		// stats after the rows are read: each is a statement of its own on the template
		return limits.stream().map((state) -> state.waiting(this.template.stats(state.queue()).ready())).toList();
	}

	/**
	 * Every queue with a limit per key, of messages in flight or of their rate: its concurrency key's
	 * header, the limits, and how many of its messages wait for them (per key, the visible messages
	 * beyond what the limits let out now, those in flight included, summed over the keys).
	 */
	public List<KeyLimitState> keyLimits() {
		return this.jdbc.query(this.sql.keyLimits.with(new QueueSql.None()),
				(rs, row) -> new KeyLimitState(rs.getString("name"), rs.getString("concurrency_key"),
						(Integer) rs.getObject("max_in_flight_per_key"),
						rateLimit(rs, "rate_limit_per_key_permits", "rate_limit_per_key_period_ms"), rs.getLong("waiting")));
	}

	private static RateLimit rateLimit(ResultSet rs) throws java.sql.SQLException {
		return rateLimit(rs, "rate_limit_permits", "rate_limit_period_ms");
	}

	private static RateLimit rateLimit(ResultSet rs, String permitsColumn, String periodColumn)
			throws java.sql.SQLException {
		int permits = rs.getInt(permitsColumn);
		return rs.wasNull() ? null : new RateLimit(permits, Duration.ofMillis(rs.getInt(periodColumn)));
	}

	private static QueueDefinition.ConcurrencyKey concurrencyKey(ResultSet rs) throws java.sql.SQLException {
		String header = rs.getString("concurrency_key");
		return (header != null)
				? new QueueDefinition.ConcurrencyKey(header, (Integer) rs.getObject("max_in_flight_per_key"),
						rateLimit(rs, "rate_limit_per_key_permits", "rate_limit_per_key_period_ms"))
				: null;
	}

	/** What a role may do with a queue. */
	public enum Access {

		/** Insert messages into the queue (send, publish, a plain SQL {@code INSERT}). */
		SEND,

		/** Claim, ack, retry and dead-letter the queue's messages (listeners, receive, SQL). */
		CONSUME

	}

	/**
	 * Grants PostgreSQL role {@code role} {@code access} to {@code queue}, enforced by the database
	 * itself (row-level security on the message table), so that a plain SQL client logged in with
	 * that role is held to the same rules: it sees, claims and deletes only messages of queues it
	 * may consume, and inserts only into queues it may send to. Also grants the role the table
	 * privileges pgqueue's statements need (row-level security then narrows them), and, with
	 * {@link Access#CONSUME}, the right to send to the queue's dead-letter queue, where its failed
	 * messages go. The owner of pgqueue's tables (normally the application's role) and superusers
	 * are not restricted.
	 * @throws IllegalArgumentException if the role does not exist
	 */
	public void grant(String role, String queue, Access... access) {
		QueueNames.requireQueue(queue);
		requireRole(role);
		boolean send = List.of(access).contains(Access.SEND);
		boolean consume = List.of(access).contains(Access.CONSUME);
		for (String statement : this.jdbc.query(
				this.sql.tablePrivileges.with(new QueueSql.TablePrivileges(this.context.schema(), role)),
				(rs, row) -> rs.getString("statement"))) {
			try {
				this.jdbc.execute(statement);
			}
			catch (org.springframework.dao.DataAccessException ex) {
				throw new IllegalStateException("Could not give role '" + role + "' the table privileges pgqueue's "
						+ "statements need (" + statement + "); grant queue access as the owner of pgqueue's tables: "
						+ ex.getMostSpecificCause().getMessage(), ex);
			}
		}
		this.jdbc.update(this.sql.grantAccess.with(new QueueSql.Access(queue, role, send, consume)));
		if (consume) {
			String deadLetters = this.jdbc.query(this.sql.deadLetterQueueOf.with(new QueueSql.Queue(queue)),
					(rs, row) -> rs.getString("dead_letter_queue")).get(0);
			this.jdbc.update(this.sql.grantAccess.with(new QueueSql.Access(deadLetters, role, true, false)));
		}
		logger.info("Granted role '{}' {} on queue '{}'", role, List.of(access), queue);
	}

	/**
	 * Revokes {@code access} to {@code queue} from role {@code role}; its next statements are held
	 * to it (a message it holds now stays held until it completes it). Also deletes the access rows
	 * that grant nothing any more (of any role, and of roles that were dropped), but for a role's
	 * last one: that one keeps the role restricted to its grants, which are none then.
	 */
	public void revoke(String role, String queue, Access... access) {
		QueueNames.requireQueue(queue);
		requireRole(role);
		this.accessChange.executeWithoutResult((status) -> {
			this.jdbc.update(this.sql.lockAccess.with(new QueueSql.None()));
			this.jdbc.update(this.sql.revokeAccess.with(new QueueSql.Access(queue, role,
					List.of(access).contains(Access.SEND), List.of(access).contains(Access.CONSUME))));
			this.jdbc.update(this.sql.forgetAccess.with(new QueueSql.None()));
		});
		logger.info("Revoked {} on queue '{}' from role '{}'", List.of(access), queue, role);
	}

	private void requireRole(String role) {
		if (role == null || !this.jdbc.query(this.sql.roleExists.with(new QueueSql.Role(role)),
				(rs, row) -> rs.getBoolean("found")).get(0)) {
			throw new IllegalArgumentException("PostgreSQL role '" + role + "' does not exist; create it first "
					+ "(CREATE ROLE ... LOGIN)");
		}
	}

	/** Creates or updates the definition of a queue (as {@code pgqueue.queues} does at startup). */
	public void declare(QueueDefinition definition) {
		checkNoDeadLetterCycle(definition);
		RateLimit limit = definition.rateLimit();
		QueueDefinition.ConcurrencyKey key = definition.concurrencyKey();
		this.jdbc.update(this.sql.upsertQueue.with(new QueueSql.UpsertQueue(definition.name(), definition.maxAttempts(),
				definition.backoffInitial().toMillis(), definition.backoffMultiplier(),
				definition.backoffMax().toMillis(), definition.deadLetterQueue(),
				millis(definition.deduplicationWindow()), millis(definition.retention()),
				(limit != null) ? limit.permits() : null, (limit != null) ? (int) limit.period().toMillis() : null,
				(key != null) ? key.header() : null, (key != null) ? key.maxInFlight() : null,
				perKeyPermits(key), perKeyPeriodMs(key))));
		if (definition.retention() != null) {
			upkeepArchive();
		}
	}

	/** Creates or updates an exchange; its bindings become exactly the ones given. */
	public void declare(ExchangeDefinition definition) {
		int n = definition.bindings().size();
		String[] queues = new String[n];
		String[] keys = new String[n];
		String[] regexes = new String[n];
		for (int i = 0; i < n; i++) {
			ExchangeDefinition.Binding binding = definition.bindings().get(i);
			queues[i] = binding.queue();
			keys[i] = (definition.type() == ExchangeDefinition.Type.FANOUT) ? "" : binding.routingKey();
			regexes[i] = binding.keyRegex(definition.type(), definition.name());
		}
		String type = definition.type().name().toLowerCase(java.util.Locale.ROOT);
		this.jdbc.update(this.sql.declareExchange.with(new QueueSql.DeclareExchange(definition.name(), type,
				definition.unroutable().name().toLowerCase(java.util.Locale.ROOT), queues, keys, regexes)));
	}

	/**
	 * Adds {@code binding} to {@code exchange} and leaves its other bindings as they are (unlike
	 * {@link #declare(ExchangeDefinition)}, which replaces them all). An exchange not declared yet
	 * is declared first as a {@link ExchangeDefinition.Type#TOPIC topic} exchange that drops what
	 * matches no binding; a declared one keeps its type and policy. Runs in the caller's
	 * transaction, if any. For code that binds queues one at a time, such as a messaging binder.
	 * @return the type of the exchange, which says how the binding's key is matched
	 * @throws IllegalArgumentException if a name is not valid, or the key is not a valid pattern
	 * for the exchange's type
	 */
	public ExchangeDefinition.Type bind(String exchange, ExchangeDefinition.Binding binding) {
		ExchangeDefinition.Type type = declareIfAbsent(exchange);
		String key = (type == ExchangeDefinition.Type.FANOUT) ? "" : binding.routingKey();
		this.jdbc.update(this.sql.bindQueue.with(new QueueSql.BindQueue(exchange, binding.queue(), key,
				binding.keyRegex(type, exchange))));
		return type;
	}

	/**
	 * Declares {@code exchange} as a {@link ExchangeDefinition.Type#TOPIC topic} exchange without
	 * bindings that drops what matches none, unless it is declared; a declared one is left as it is.
	 * @return the type of the exchange
	 * @throws IllegalArgumentException if the name is not valid
	 */
	public ExchangeDefinition.Type declareIfAbsent(String exchange) {
		QueueNames.requireQueue(exchange);
		return ExchangeDefinition.Type.valueOf(this.jdbc
			.query(this.sql.ensureExchange.with(new QueueSql.Exchange(exchange)), (rs, row) -> rs.getString("type"))
			.get(0)
			.toUpperCase(java.util.Locale.ROOT));
	}

	/**
	 * Removes {@code binding} from {@code exchange}, leaving its other bindings.
	 * @return whether there was such a binding
	 */
	public boolean unbind(String exchange, ExchangeDefinition.Binding binding) {
		QueueNames.requireQueue(exchange);
		return this.jdbc.update(this.sql.unbindQueue.with(new QueueSql.UnbindQueue(exchange, binding.queue(),
				binding.routingKey()))) > 0;
	}

	/**
	 * Moves up to {@code max} messages from the dead-letter queue of {@code queue} back to it, with
	 * their attempts reset, and returns how many moved.
	 */
	public int redrive(String queue, int max) {
		QueueNames.requireQueue(queue);
		if (max < 1) {
			throw new IllegalArgumentException("Redrive max must be at least 1, was " + max);
		}
		String deadLetterQueue = deadLetterQueueOf(queue);
		int ns = namespace();
		return this.removals.run((connection) -> {
			try (PreparedStatement ps = this.sql.redrive.prepare(connection, new QueueSql.Redrive(queue,
					deadLetterQueue, max + REDRIVE_WINDOW, ns, max, this.sql.channel()));
					ResultSet rs = ps.executeQuery()) {
				return rs.next() ? (int) rs.getLong("moved") : 0;
			}
		});
	}

	/** The queues declared in the database, and their dead-letter queues. */
	public java.util.Set<String> declaredQueues() {
		return new java.util.TreeSet<>(this.jdbc.query(this.sql.declaredQueues.with(new QueueSql.None()),
				(rs, row) -> rs.getString("name")));
	}

	/** The dead-letter queue of {@code queue}: its definition's, else {@code <queue>.dlq}. */
	public String deadLetterQueueOf(String queue) {
		List<String> configured = this.jdbc.query(this.sql.deadLetterQueue.with(new QueueSql.Queue(queue)),
				(rs, row) -> rs.getString("dead_letter_queue"));
		return (configured.isEmpty() || configured.get(0) == null) ? QueueNames.defaultDeadLetterQueue(queue)
				: configured.get(0);
	}

	/**
	 * Moves the chosen dead letters back to the queues they came from, each with its attempts reset
	 * (a grouped one outside its group, its group kept in the {@code pgqueue-group} header); ids
	 * that are not dead letters, or that a consumer holds, are left where they are. Runs in the
	 * caller's transaction, if any.
	 * @return the ids moved
	 */
	public List<Long> redrive(List<Long> deadLetterIds) {
		int ns = namespace();
		return this.removals.run((connection) -> {
			List<Long> moved = new java.util.ArrayList<>();
			try (PreparedStatement ps = this.sql.redriveIds.prepare(connection,
					new QueueSql.RedriveIds(deadLetterIds.toArray(new Long[0]), ns, this.sql.channel()));
					ResultSet rs = ps.executeQuery()) {
				while (rs.next()) {
					moved.add(rs.getLong("id"));
				}
			}
			return moved;
		});
	}

	/**
	 * Creates a recurring message (see {@link ScheduleDefinition}); its first tick is the first after
	 * now. Every JVM that runs a {@link ScheduleRunner} on this schema sends its ticks, each once.
	 * @throws IllegalStateException if a schedule of that name exists (change it with
	 * {@link #alterSchedule}), or its queue or exchange is not declared
	 */
	public void createSchedule(ScheduleDefinition definition) {
		this.schedules.create(definition);
	}

	/**
	 * Changes a schedule. If its cron expression or zone changed, its next tick is the new
	 * definition's first after now; otherwise the tick due stays due (with the new target, payload
	 * and headers). A paused schedule stays paused.
	 * @throws IllegalStateException if it does not exist, or its queue or exchange is not declared
	 */
	public void alterSchedule(ScheduleDefinition definition) {
		this.schedules.alter(definition);
	}

	/**
	 * Creates a schedule or changes it, as {@link #createSchedule} or {@link #alterSchedule} would (as
	 * {@code pgqueue.schedules} does at startup): declaring the same definition again changes nothing.
	 * @throws IllegalStateException if its queue or exchange is not declared
	 */
	public void declareSchedule(ScheduleDefinition definition) {
		this.schedules.declare(definition);
	}

	/**
	 * Pauses a schedule in every JVM: it sends nothing until it is resumed, and the ticks of the pause
	 * are not made up for.
	 * @throws IllegalStateException if it does not exist
	 */
	public void pauseSchedule(String name) {
		this.schedules.pause(name);
	}

	/**
	 * Resumes a paused schedule from its first tick after now; a schedule that is not paused is left
	 * as it is.
	 * @throws IllegalStateException if it does not exist
	 */
	public void resumeSchedule(String name) {
		this.schedules.resume(name);
	}

	/**
	 * Removes a schedule: no JVM sends a tick of it after this commits. (One declared under
	 * {@code pgqueue.schedules} comes back at the next start of an application that declares it.)
	 * @return whether there was one
	 */
	public boolean removeSchedule(String name) {
		return this.schedules.remove(name);
	}

	/** Every schedule by name, with whether it is paused, its next tick and what it has sent. */
	public List<ScheduleInfo> schedules() {
		return this.schedules.list();
	}

	/** The schedule named {@code name}, if there is one. */
	public java.util.Optional<ScheduleInfo> schedule(String name) {
		return this.schedules.find(name);
	}

	/**
	 * Rejects a definition whose dead letters would come back to it: a queue that is its own
	 * dead-letter queue, or a chain of declared queues that leads back to it.
	 */
	private void checkNoDeadLetterCycle(QueueDefinition definition) {
		List<String> chain = new ArrayList<>(List.of(definition.name()));
		String next = definition.effectiveDeadLetterQueue();
		while (next != null && !chain.contains(next)) {
			chain.add(next);
			List<String> declared = this.jdbc.query(this.sql.deadLetterQueueOfDeclared.with(new QueueSql.Queue(next)),
					(rs, row) -> rs.getString("dead_letter_queue"));
			next = declared.isEmpty() ? null : declared.get(0);
		}
		if (next == null) {
			return;
		}
		if (next.equals(definition.name()) && chain.size() == 1) {
			throw new IllegalArgumentException("Queue '" + definition.name() + "' cannot be its own dead-letter queue; "
					+ "name another queue, or leave it out for '" + QueueNames.defaultDeadLetterQueue(definition.name())
					+ "'");
		}
		chain.add(next);
		throw new IllegalArgumentException("Queue '" + definition.name() + "' would dead-letter in a cycle ("
				+ String.join(" -> ", chain) + "); point one of these queues at a dead-letter queue outside the cycle");
	}

	private int namespace() {
		return this.context.lockNamespace();
	}

	private static QueueSql.QueueDefinition definition(QueueDefinition definition) {
		RateLimit limit = definition.rateLimit();
		QueueDefinition.ConcurrencyKey key = definition.concurrencyKey();
		return new QueueSql.QueueDefinition(definition.name(), definition.maxAttempts(),
				definition.backoffInitial().toMillis(), definition.backoffMultiplier(), definition.backoffMax().toMillis(),
				definition.deadLetterQueue(), millis(definition.deduplicationWindow()), millis(definition.retention()),
				(limit != null) ? limit.permits() : null, (limit != null) ? (int) limit.period().toMillis() : null,
				(key != null) ? key.header() : null, (key != null) ? key.maxInFlight() : null, perKeyPermits(key),
				perKeyPeriodMs(key));
	}

	private static Integer perKeyPermits(QueueDefinition.ConcurrencyKey key) {
		return (key != null && key.rateLimit() != null) ? key.rateLimit().permits() : null;
	}

	private static Integer perKeyPeriodMs(QueueDefinition.ConcurrencyKey key) {
		return (key != null && key.rateLimit() != null) ? (int) key.rateLimit().period().toMillis() : null;
	}

	private static Long millis(Duration duration) {
		return (duration != null) ? duration.toMillis() : null;
	}

	/**
	 * Creates the archive's partitions for the retentions now declared, so that archived messages
	 * land in their day's partition from the first one on, and drops the expired ones.
	 */
	private void upkeepArchive() {
		try {
			new MessageArchive(this.context).upkeep();
		}
		catch (org.springframework.dao.DataAccessException ex) {
			// The definition is stored: a declaration (at startup, say) must not fail because a drop
			// of an expired partition waited for acks. Nothing is lost meanwhile.
			logger.warn("Could not create the archive's partitions ahead now; archived messages go to its default "
					+ "partition until the listeners' hourly upkeep creates them", ex);
		}
	}

	private static Duration duration(java.sql.ResultSet rs, String column) throws java.sql.SQLException {
		long millis = rs.getLong(column);
		return rs.wasNull() ? null : Duration.ofMillis(millis);
	}

	private void requireDeclared(String queue) {
		QueueNames.requireQueue(queue);
		if (!this.jdbc.query(this.sql.isDeclared.with(new QueueSql.Queue(queue)), (rs, row) -> rs.getBoolean("declared"))
			.get(0)) {
			throw new IllegalStateException("Queue '" + queue + "' does not exist");
		}
	}

	private long count(String queue) {
		return this.jdbc.query(this.sql.messageCount.with(new QueueSql.Queue(queue)), (rs, row) -> rs.getLong("messages"))
			.get(0);
	}

	/**
	 * A rate-limited queue now.
	 * @param queue the queue
	 * @param limit its limit
	 * @param tokens how many messages its bucket could hand out at once (refilled to now, at most
	 * {@link RateLimit#burst()})
	 * @param waiting its ready messages beyond {@code floor(tokens)}: they wait for the limit
	 */
	public record RateLimitState(String queue, RateLimit limit, double tokens, long waiting) {

		RateLimitState waiting(long ready) {
			return new RateLimitState(this.queue, this.limit, this.tokens, Math.max(0, ready - (long) Math.floor(this.tokens)));
		}

	}

	/**
	 * A queue with a limit per key, now.
	 * @param queue the queue
	 * @param concurrencyKey the header whose value is each message's key (null if the queue names
	 * none: then only messages given a key by SQL are held to the limits)
	 * @param maxInFlightPerKey the most messages of one key in flight at once; null for no such limit
	 * @param rateLimitPerKey the rate at which each key's messages are handed out; null for no such limit
	 * @param waiting its messages that wait for the limits: per key, the visible messages (in flight
	 * or ready) beyond {@code maxInFlightPerKey} or beyond the whole tokens of the key's bucket now,
	 * whichever is fewer, summed over the keys; messages without a key never wait for them
	 */
	public record KeyLimitState(String queue, String concurrencyKey, Integer maxInFlightPerKey,
			RateLimit rateLimitPerKey, long waiting) {
	}

	/**
	 * A declared queue.
	 * @param definition its policy
	 * @param paused whether its consumption is paused
	 * @param stats its messages now
	 */
	public record QueueInfo(QueueDefinition definition, boolean paused, QueueStats stats) {

		QueueInfo withStats(QueueStats stats) {
			return new QueueInfo(this.definition, this.paused, stats);
		}

	}

}
