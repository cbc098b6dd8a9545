package io.github.pgqueue.internal;

import io.github.pgqueue.QueueNames;

/**
 * Every statement pgqueue runs, for one schema. Parameters are positional; the comment above
 * each statement lists them. The lock key of a message is {@code (namespace, id::bit(32)::int4)}:
 * the two-int4 form, whose key space is separate from the single-bigint advisory locks other
 * applications usually take, with the id folded to its low 32 bits (Java: {@code (int) id}).
 * <p>
 * A statement that finds messages by id tests their queue as {@code (queue = ?) IS TRUE}: the
 * planner cannot make that an index condition, so it looks the ids up by primary key. With a plain
 * {@code queue = ?}, statistics that take the queue for a rare one make it walk the claim index over
 * every message of the queue (and every dead entry at its head) to find a handful of ids.
 */
public final class QueueSql {

	/**
	 * Run on a consumer's connection before its statements are planned: one generic plan per
	 * statement, and one that walks indexes whatever the size of the message table when it is
	 * planned. The driver prepares a statement run often; PostgreSQL would then plan the claim
	 * again on every call (its generic plan is estimated dearer than a custom one, though it runs
	 * faster): measured, planning took 480 µs of a 10-message claim that ran in 135 µs, most of a
	 * transactional batch's time. Planned while the table is empty, as it is when an application
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
	 * statement is planned, then back to the connection's defaults, all in one round trip. The
	 * statement's results follow two update counts.
	 */
	public static String withIndexPlans(String statement) {
		return "SET LOCAL enable_seqscan = off;\nSET LOCAL plan_cache_mode = force_generic_plan;\n" + statement
				+ ";\nSET LOCAL enable_seqscan TO DEFAULT;\nSET LOCAL plan_cache_mode TO DEFAULT";
	}

	/** How many candidates of one priority a claim looks at before it gives up on that priority. */
	public static final int CLAIM_WINDOW = 1000;

	/**
	 * How many FIFO groups with messages a queue has at least when its heads are not scarce: a
	 * transactional claim that found heads through the group index and saw this many groups goes
	 * back to walking the claim index. The scan costs an index descent per group, and where
	 * consumers take heads fast its snapshot's heads are mostly taken by the time it tries them.
	 */
	public static final int SCARCE_GROUPS = CLAIM_WINDOW / 2;

	/**
	 * The loose index scan over the priorities of a queue (1 queue, 2 queue), lowest first: a CTE
	 * of the claims, which walk each priority's visible messages in turn.
	 */
	private static final String PRIORITIES = """
			WITH RECURSIVE priorities AS (
			    (SELECT priority FROM %1$s.message
			      WHERE queue = ? AND NOT EXISTS (SELECT 1 FROM %1$s.queue WHERE name = ? AND paused)
			      ORDER BY priority LIMIT 1)
			    UNION ALL
			    SELECT (SELECT m.priority FROM %1$s.message m
			             WHERE m.queue = ? AND m.priority > p.priority
			             ORDER BY m.priority LIMIT 1)
			      FROM priorities p
			     WHERE p.priority IS NOT NULL
			),
			""";

	/**
	 * The claims' CTE of priorities when they go on from where the poller's last full claim ended
	 * (1 that claim's last priority, 2 queue, 3 queue (paused?)): that priority alone, and only if
	 * the queue holds no message of a lower one, visible or not. Its parameters take the places of
	 * {@link #PRIORITIES}'s.
	 */
	private static final String CURSOR_PRIORITY = """
			WITH RECURSIVE cursor AS (SELECT ?::int AS priority),
			priorities AS (
			    SELECT c.priority FROM cursor c
			     WHERE NOT EXISTS (SELECT 1 FROM %1$s.message WHERE queue = ? AND priority < c.priority)
			       AND NOT EXISTS (SELECT 1 FROM %1$s.queue WHERE name = ? AND paused)
			),
			""";

	/**
	 * The start of a claim's candidates m when it goes on from a cursor (1 the last claimed row's
	 * visible_at in microseconds since the epoch, 2 its id): after that row in the claim index, so
	 * the scan descends to it rather than stepping over every entry before it. Those are mostly the
	 * dead entries of messages acked since the last vacuum, which every claim from the head walks.
	 */
	private static final String AFTER_CURSOR = """
			               AND (m.visible_at, m.id) > ('epoch'::timestamptz + ? * interval '1 microsecond', ?)
			""";

	/**
	 * The head test of row {@code row} of a FIFO group (no parameter; formatted with the schema):
	 * its group's next older message in the queue, null if there is none (the row is its group's
	 * head). It looks backwards from the row through the group index, no lower than the row's
	 * previous_id (see V15__previous_in_group.sql).
	 */
	private static String olderInGroup(String row) {
		return """
				(SELECT o.id FROM %1$s.message o
				  WHERE o.queue = {row}.queue AND o.group_key = {row}.group_key AND o.id < {row}.id
				    AND o.id >= COALESCE({row}.previous_id, 0)
				  ORDER BY o.id DESC LIMIT 1)""".replace("{row}", row);
	}

	/**
	 * The condition of a claim's candidate m (no parameter): outside any FIFO group, or its group's
	 * head: no older message of its group is in the queue. The test looks for the group's next older
	 * message backwards from the row (as the transactional walk's): for a row behind its head that
	 * is the entry just before it; a forward search would step over every acked, not yet vacuumed
	 * entry of the group first. It looks no lower than the row's previous_id, the group's newest
	 * message when the row was inserted: a head does not step over those entries either (see
	 * V15__previous_in_group.sql).
	 */
	private static final String GROUP_HEAD = "               AND (m.group_key IS NULL OR " + olderInGroup("m") + " IS NULL)\n";

	/**
	 * How many times its window of candidates a session claim walks at most: it counts the rows
	 * that pass its tests (a FIFO group's later messages do not), and gives up after this many
	 * windows' worth of rows, so that a backlog of a few groups' later messages is not walked to
	 * its end by every claim (the next claims of the poller then find heads through the group
	 * index, see ConsumerSession).
	 */
	static final int SESSION_WALK_WINDOWS = 10;

	/**
	 * Whether candidate w of a transactional claim (with its xmax) was written or locked by a
	 * transaction that had not ended when the statement's snapshot was taken (no parameter): one
	 * running then (in the snapshot's list) or begun since (at or past its xmax). With several
	 * consumers the head of a queue is where the others are completing their batches; once such a
	 * completion commits, its keys are free again while this statement's snapshot still shows its
	 * rows, and a claim that took those keys found the rows gone when it locked them: its batch came
	 * back short, and with four transactional consumers a fifth of the claims came back empty, each
	 * at a full claim's cost. Skipping these rows before their key is tried fills the batch from rows
	 * the claim can deliver, and tries no key of a row being completed. A row skipped here is skipped
	 * by this statement only: the next snapshot sees the writer's end (a row that is still there,
	 * such as one whose locker aborted since, is claimed or found a suspect then). xmax has no epoch:
	 * the snapshot's list and xmax are read once per statement and compared by their low 32 bits,
	 * modulo 2^32, as PostgreSQL compares xids. An xmax that is a MultiXact (several lockers at once)
	 * is read as an xid too; pgqueue's own statements leave none on message rows (see
	 * TransactionalConsumption's savepoints). The session claim does not use it: there a row being
	 * written goes to the re-check, which waits for its writer, and that wait is where a claim's
	 * statement timeout or cancel is met and tested.
	 * <p>
	 * Rows of FIFO groups are skipped too, before their head test: a head being completed, or held
	 * by another consumer's claim, costs no look for older messages of its group. (Skipping a head
	 * does not make its group's next message a head: this snapshot still shows the head.)
	 */
	private static final String WRITTEN_SINCE_SNAPSHOT = """
			(w.xmax <> '0'::xid
			  AND (w.xmax::text::bigint = ANY (ARRAY(SELECT x::text::bigint & 4294967295
			                                           FROM pg_snapshot_xip(pg_current_snapshot()) x))
			       OR ((w.xmax::text::bigint - (SELECT pg_snapshot_xmax(pg_current_snapshot())::text::bigint))
			           & 4294967295) < 2147483648))""";

	/**
	 * The CTEs that find FIFO groups' heads through the group index rather than the claim index, for
	 * a transactional claim made where heads are scarce (see TransactionalConsumption): 1 queue, 2
	 * queue. heads steps from group to group (a loose index scan, one descent per group) and gives
	 * each group's first message in the statement's snapshot: its head. scanned keeps the first
	 * {window} groups in key order; covered says up to which group key that is, null when it is
	 * every group of the queue. Formatted with the schema.
	 */
	private static final String SCANNED_HEADS = """
			heads AS (
			    (SELECT m.group_key, m.id FROM %1$s.message m
			      WHERE m.queue = ? AND m.group_key IS NOT NULL
			      ORDER BY m.group_key, m.id LIMIT 1)
			    UNION ALL
			    SELECT n.group_key, n.id
			      FROM heads h
			     CROSS JOIN LATERAL (
			            SELECT m.group_key, m.id FROM %1$s.message m
			             WHERE m.queue = ? AND m.group_key > h.group_key
			             ORDER BY m.group_key, m.id LIMIT 1) n
			),
			scanned AS MATERIALIZED (
			    SELECT h.group_key, h.id FROM heads h LIMIT {window}
			),
			covered AS MATERIALIZED (
			    SELECT CASE WHEN count(*) = {window} THEN max(s.group_key) END AS last FROM scanned s
			),
			""";

	/**
	 * Whether walked row {row} is of a group that SCANNED_HEADS covered (no parameter): the walk
	 * skips it, as its group's head, if it is one, comes from the scan.
	 */
	private static final String SCANNED_GROUP = "{row}.group_key <= COALESCE((SELECT last FROM covered), {row}.group_key)";

	/**
	 * The heads that SCANNED_HEADS found, as candidates of the claim after those of its walk (1 the
	 * filter, if any, 2 namespace): visible, in a priority the claim may take, not written since
	 * the statement's snapshot, tried in the claim index's order once sorted, up to what the walk
	 * left of the batch. candidates is every row the claim took, from either. Formatted with the
	 * schema.
	 */
	private static final String TAKEN_HEADS = """
			headed AS MATERIALIZED (
			    SELECT m.id, m.priority, m.visible_at,
			           {held_by_the_dead}
			           OR CASE WHEN m.xmax = '0'::xid OR NOT %1$s.locker_aborted(m.xmax) THEN false ELSE %1$s.consumer_aborted(m.xmax) END AS suspect
			      FROM %1$s.message m
			     WHERE m.id = ANY (ARRAY(SELECT id FROM scanned))
			       AND m.visible_at <= now() AND m.priority IN (SELECT priority FROM priorities)
			{filter}       AND NOT {written_since_snapshot}
			     ORDER BY m.priority, m.visible_at, m.id
			),
			taken_heads AS MATERIALIZED (
			    SELECT h.id, h.suspect FROM headed h
			     WHERE pg_try_advisory_xact_lock(?, h.id::bit(32)::int4)
			     LIMIT greatest(0, {batch} - (SELECT count(*) FROM walked WHERE taken))
			),
			candidates AS (
			    SELECT id, suspect FROM walked WHERE taken
			    UNION ALL
			    SELECT id, suspect FROM taken_heads
			),
			""";

	/**
	 * A session claim's candidates m in one priority p, in the claim index's order, up to {limit}
	 * rows: 1 queue, 2 whether it may take messages of dead holders, the filter, the cursor.
	 */
	private static final String SESSION_CANDIDATES = """
			SELECT m.id, m.queue, m.group_key, m.previous_id, {held_open} AS suspect, m.xmin AS seen, m.priority,
			       m.visible_at
			  FROM %1$s.message m
			 WHERE m.queue = ? AND m.priority = p.priority AND m.visible_at <= now()
			   AND (? OR NOT {held_by_the_dead})
			{filter}{after} ORDER BY m.visible_at, m.id
			 LIMIT {limit}""";

	/**
	 * The session claim's candidates, locked (see the claim): 1 queue, 2 whether it may take
	 * messages of dead holders, the filter, the cursor, then the namespace. The walk counts the rows
	 * that pass its tests, up to SESSION_WALK_WINDOWS windows of rows walked.
	 */
	private static final String SESSION_LOCKED = """
			locked AS (
			    SELECT c.id, c.suspect, c.seen, c.priority, c.visible_at, row_number() OVER () AS n
			      FROM priorities p
			     CROSS JOIN LATERAL (
			            SELECT m.id, m.suspect, m.seen, m.priority, m.visible_at
			              FROM (""" + SESSION_CANDIDATES.replace("{limit}", "{walk}") + ") m" + """

			             WHERE true
			""" + GROUP_HEAD + """
			             LIMIT {window}) c
			     WHERE pg_try_advisory_lock(?, c.id::bit(32)::int4)
			     LIMIT {batch}
			),
			""";

	/**
	 * The same for a session claim made where heads are scarce (see ConsumerSession), after
	 * SCANNED_HEADS: the walk counts every row it walks, skips the rows of the groups the scan
	 * covered and tests the others' for being heads; the scanned heads come after the walk's
	 * candidates, in the claim index's order, up to what the walk left of the batch. 1 queue, 2
	 * whether it may take messages of dead holders, the filter, the cursor, the namespace; then
	 * again 2, the filter and the namespace.
	 */
	private static final String SCANNING_SESSION_LOCKED = """
			walk_locked AS (
			    SELECT c.id, c.suspect, c.seen, c.priority, c.visible_at, row_number() OVER () AS n
			      FROM priorities p
			     CROSS JOIN LATERAL (""" + SESSION_CANDIDATES.replace("{limit}", "{window}") + ") c" + """

			     WHERE CASE WHEN {scanned_group} THEN false
			                WHEN c.group_key IS NOT NULL AND""" + " " + olderInGroup("c") + " IS NOT NULL THEN false\n" + """
			                ELSE pg_try_advisory_lock(?, c.id::bit(32)::int4) END
			     LIMIT {batch}
			),
			headed AS MATERIALIZED (
			    SELECT m.id, {held_open} AS suspect, m.xmin AS seen, m.priority, m.visible_at
			      FROM %1$s.message m
			     WHERE m.id = ANY (ARRAY(SELECT id FROM scanned))
			       AND m.visible_at <= now() AND m.priority IN (SELECT priority FROM priorities)
			       AND (? OR NOT {held_by_the_dead})
			{filter}     ORDER BY m.priority, m.visible_at, m.id
			),
			head_locked AS MATERIALIZED (
			    SELECT h.id, h.suspect, h.seen, h.priority, h.visible_at FROM headed h
			     WHERE pg_try_advisory_lock(?, h.id::bit(32)::int4)
			     LIMIT greatest(0, {batch} - (SELECT count(*) FROM walk_locked))
			),
			locked AS (
			    SELECT id, suspect, seen, priority, visible_at, n FROM walk_locked
			    UNION ALL
			    SELECT id, suspect, seen, priority, visible_at,
			           (SELECT count(*) FROM walk_locked) + row_number() OVER (ORDER BY priority, visible_at, id)
			      FROM head_locked
			),
			""";

	/**
	 * Whether row m's claim is open (no parameter): a session claimed it alone as a suspect (a
	 * claim by id: a receive by id, or a transactional consumer's suspect) and has not completed
	 * it, since the server last started. Once a claim holds m's key, its newest version
	 * saying so means that session died: a live one closes the claim before its key is free.
	 */
	private static final String HELD_OPEN = "(m.claim_open AND m.claimed_at > pg_postmaster_start_time())";

	/**
	 * The ids of holding row h whose attempt is counted if its session died: all of them, or the
	 * first only when the session hands them out in turn (a claim of messages whose consumer died).
	 */
	private static final String HOLDING_COUNTED = "CASE WHEN h.in_turn THEN h.ids[1:1] ELSE h.ids END";

	/**
	 * Whether claimable row m was held by a consumer that died (no parameter): a session that held
	 * it again after such a death and died too left claim_open, or a session that died still lists
	 * it in its row of the holding table (a live session lists only what it holds, so a row a
	 * claim could lock and that is still listed there is a dead session's). Neither counts when
	 * it dates from before the server last started: that restart ended every session at once. Of
	 * a row whose messages were handed out in turn, only the first listed counts: the others were
	 * never handed to a handler (V18__orphans_in_turn_and_role_oids.sql).
	 */
	private static final String HELD_BY_THE_DEAD = "(" + HELD_OPEN + """
			  OR m.id IN (SELECT unnest(""" + HOLDING_COUNTED + """
			) FROM %1$s.holding h WHERE h.opened_at > pg_postmaster_start_time()))""";

	/**
	 * The CTE listed (no parameter), formatted with the CTE of the rows a claim locked (an id
	 * column): its one row holds which of them a session that died still lists in the holding
	 * table, asked of V14__listed_by_the_dead.sql once every key is taken, on a snapshot of then;
	 * no row when nothing was locked (an idle poll calls nothing). HELD_BY_THE_DEAD, tested in the
	 * walk, reads the statement's snapshot, taken before it: a holder that claimed a row, handed it
	 * out and died since then is not in it, and its attempt went uncounted.
	 */
	private static final String LISTED = """
			listed AS MATERIALIZED (
			    SELECT %%1$s.listed_by_the_dead(ARRAY(SELECT id FROM %1$s)) AS ids WHERE EXISTS (SELECT 1 FROM %1$s)
			),
			""";

	/** Whether locked row l is one of {@link #LISTED}'s (no parameter). */
	private static final String IS_LISTED = "COALESCE(l.id = ANY ((SELECT ids FROM listed)::bigint[]), false)";

	/**
	 * Whether a claim's UPDATE of row m, chosen as l (l.suspect and l.seen judged on the scan's
	 * snapshot, l.listed after the locks), counts the attempt of a holder that died (no
	 * parameter): a suspect whose row is still the version the scan saw (a live holder that
	 * completed it since wrote it), a row a dead session lists, or a row whose newest version
	 * still has its claim open (the session that claimed it as a suspect died after the scan's
	 * snapshot; a live one closes it before its key is free).
	 */
	private static final String LOST_ATTEMPT = "((l.suspect AND m.xmin = l.seen) OR l.listed OR " + HELD_OPEN + ")";

	/**
	 * The CTEs that take claimed suspects out of the holding rows of the dead sessions that listed
	 * them (unlisted, no parameter), formatted with the CTE of the claimed rows (id, suspect,
	 * priority, visible_at), and list those of a claim in its own session's row (recorded, 1 session
	 * key): the rows {listed} (a condition on them), in the order they are handed out, and whether
	 * they are handed out in turn ({in_turn}, see V18__orphans_in_turn_and_role_oids.sql). A role
	 * writes only its own session's row (row-level security); the rows of dead sessions are changed
	 * by unlist, which runs as the table's owner, checks that the role may consume what it takes
	 * out, and empties a row of messages handed out in turn whose first is claimed: the others were
	 * never handed to a handler, and must not become its first (V19__own_holding_rows_and_undone_removals.sql).
	 * unlisted is one row, called only when there are suspects; the claim's final select joins it,
	 * so that it runs. The list is written only when it changes: an idle poll writes nothing.
	 */
	private static final String HOLDING_OF_A_CLAIM = """
			unlisted AS MATERIALIZED (
			    SELECT CASE WHEN EXISTS (SELECT 1 FROM %1$s WHERE suspect)
			                THEN %%1$s.unlist(ARRAY(SELECT id FROM %1$s WHERE suspect), current_user) END AS changed
			),
			recorded AS (
			    UPDATE %%1$s.holding h
			       SET ids = ARRAY(SELECT id FROM %1$s WHERE {listed} ORDER BY priority, visible_at, id),
			           in_turn = {in_turn}
			     WHERE h.session = ? AND (cardinality(h.ids) > 0 OR EXISTS (SELECT 1 FROM %1$s WHERE {listed}))
			)
			""";

	/**
	 * The statement (1 session key) that takes the ids a completing statement returned (its CTE,
	 * with an id column) out of its session's holding row, keeping the others in their order (the
	 * first of messages handed out in turn is the one a handler has).
	 */
	private static final String UNHOLD = """
			unheld AS (
			    UPDATE %%1$s.holding h SET ids = ARRAY(SELECT i FROM unnest(h.ids) WITH ORDINALITY AS t(i, n)
			                                            WHERE i NOT IN (SELECT id FROM %1$s) ORDER BY n)
			     WHERE h.session = ? AND EXISTS (SELECT 1 FROM %1$s)
			)
			""";

	/**
	 * The header filter of a claim's candidate m (1 the filter's alternatives, jsonb[]): its headers
	 * contain one of them. Inside the ordered, limited subquery of the candidates, so it is tested
	 * before the lock taken outside it: a message the filter rejects is never locked. A filter
	 * names at least one header, so a message without headers never matches: saying so lets the
	 * planner use the headers index, which leaves such messages out (most sends pay nothing for it).
	 */
	private static final String HEADER_FILTER = """
			               AND m.headers @> ANY (?::jsonb[]) AND m.headers <> '{}'::jsonb
			""";

	/**
	 * Columns 3 to 15 of a claim's rows, from claimed row c, its payload text p and its queue q
	 * (1 payload limit); formatted with the attempt's expression. Column 15 is the row's visible_at
	 * in microseconds since the epoch: with its priority and id, where a claim that goes on from it
	 * starts.
	 */
	private static final String CLAIMED_COLUMNS = """
			       CASE WHEN octet_length(p.text) <= ? THEN p.text END, c.headers::text, c.priority,
			       %s, c.created_at,
			       COALESCE(c.max_attempts, q.max_attempts, 5),
			       q.dead_letter_queue,
			       COALESCE(q.backoff_initial_ms, 1000),
			       COALESCE(q.backoff_multiplier, 2.0),
			       COALESCE(q.backoff_max_ms, 600000),
			       c.last_error,
			       octet_length(p.text),
			       (extract(epoch FROM c.visible_at) * 1000000)::bigint
			""";

	/** The payload text p and queue policy q of a claimed row c. */
	private static final String POLICY_JOINS = """
			  LEFT JOIN LATERAL (SELECT c.payload::text AS text) p ON true
			  LEFT JOIN %1$s.queue q ON q.name = c.queue
			""";

	/**
	 * The row a claim adds when it found no candidate (1 queue): in how many milliseconds the
	 * queue's next delayed message becomes visible; formatted with the null columns the claim has
	 * after that one (text such as {@code ", NULL"}, or empty) and the CTE of the candidates.
	 */
	private static final String NEXT_DUE = """
			UNION ALL
			SELECT NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL,
			       (SELECT ceil(extract(epoch FROM min(n.visible_at) - now()) * 1000)::bigint
			          FROM priorities p
			         CROSS JOIN LATERAL (
			                SELECT m.visible_at FROM %%1$s.message m
			                 WHERE m.queue = ? AND m.priority = p.priority
			                   AND m.visible_at > now() AND m.visible_at < 'infinity'
			                 ORDER BY m.visible_at LIMIT 1) n)%s
			 WHERE NOT EXISTS (SELECT 1 FROM %s)""";

	/**
	 * The SET clause of a dead-letter move of row m by row d (d.dlq, d.error, d.park), formatted
	 * with the expression of the attempts it failed: into its dead-letter queue with a fresh count
	 * and where it came from in its headers, or parked where it is when it already is a dead letter.
	 */
	private static final String DEAD_LETTER_MOVE = """
				       SET queue = CASE WHEN d.park THEN m.queue ELSE d.dlq END,
				           attempts = CASE WHEN d.park THEN %1$s ELSE 0 END,
				           visible_at = CASE WHEN d.park THEN 'infinity' ELSE now() END,
				           last_error = d.error, claim_open = false,
				           deduplication_key = CASE WHEN d.park THEN m.deduplication_key END,
				           group_key = CASE WHEN d.park THEN m.group_key END,
				           headers = CASE WHEN d.park THEN m.headers ELSE m.headers || jsonb_strip_nulls(jsonb_build_object(
				               'pgqueue-group', m.group_key)) || jsonb_build_object(
				               'pgqueue-dead-lettered-from', m.queue,
				               'pgqueue-dead-lettered-attempts', %1$s::text) END
				""";

	private final String namespace;

	private final String send;

	private final String sendBatch;

	private final String sendGroupedBatch;

	private final String sendPlain;

	private final String sendDeduplicated;

	private final String claim;

	private final String ack;

	private final String retry;

	private final String deadLetter;

	private final String unlock;

	private final String cancel;

	private final String exists;

	private final String stats;

	private final String upsertQueue;

	private final String redrive;

	private final String backendPid;

	private final String openSession;

	private final String closeSession;

	private final String deadLetterQueue;

	private final String declaredQueues;

	private final String deadLetterQueueOfDeclared;

	private final String publish;

	private final String exchangeExists;

	private final String declareExchange;

	private final String transactionalClaim;

	private final String transactionalAck;

	private final String transactionalRetry;

	private final String transactionalDeadLetter;

	private final String lockClaimed;

	private final String claimSuspect;

	private final String claimById;

	private final java.util.Map<Integer, String> claimsBySize = new java.util.concurrent.ConcurrentHashMap<>();

	/** The session claim's candidates: SESSION_LOCKED, or SCANNED_HEADS and SCANNING_SESSION_LOCKED. */
	private final String sessionLocked;

	private final String scanningSessionLocked;

	private final java.util.Map<Integer, String> transactionalClaimsBySize = new java.util.concurrent.ConcurrentHashMap<>();


	private final String schema;

	public QueueSql(String schema) {
		this.schema = QueueNames.requireSchema(schema);
		String s = "\"" + this.schema + "\"";

		// The namespace stored when the schema was created (by default the message table's oid, as in
		// the advisory-lock queue articles, so two pgqueue schemas in one database never share keys).
		this.namespace = "SELECT lock_namespace FROM %s.setting".formatted(s);

		// 1 queue, 2 payload, 3 headers, 4 priority, 5 not-before (or null), 6 delay ms,
		// 7 max attempts (or null), 8 group (or null). The delay is added on the server so clocks do
		// not matter.
		this.send = """
				INSERT INTO %s.message (queue, payload, headers, priority, visible_at, max_attempts, group_key)
				VALUES (?, ?::jsonb, ?::jsonb, ?, COALESCE(?, now() + ? * interval '1 millisecond'), ?, ?)
				RETURNING id""".formatted(s);

		// 1 queue, 2 payload. The send without options: the column defaults apply.
		this.sendPlain = "INSERT INTO %s.message (queue, payload) VALUES (?, ?::jsonb) RETURNING id".formatted(s);

		// 1 queue, 2 payload, 3 headers, 4 priority, 5 not-before, 6 delay ms, 7 max attempts,
		// 8 group, 9 deduplication key, 10 queue, 11 deduplication key. Inserts unless a message with the key
		// is in the queue, and returns the id with whether it was inserted. A message with the key
		// committed by another transaction after this statement's snapshot conflicts but is not
		// seen: no row comes back, and the caller runs the statement again.
		this.sendDeduplicated = """
				WITH inserted AS (
				    INSERT INTO %1$s.message (queue, payload, headers, priority, visible_at, max_attempts,
				                              group_key, deduplication_key)
				    VALUES (?, ?::jsonb, ?::jsonb, ?, COALESCE(?, now() + ? * interval '1 millisecond'), ?, ?, ?)
				    ON CONFLICT (queue, deduplication_key) WHERE deduplication_key IS NOT NULL DO NOTHING
				    RETURNING id)
				SELECT id, true FROM inserted
				UNION ALL
				SELECT m.id, false FROM %1$s.message m
				 WHERE m.queue = ? AND m.deduplication_key = ? AND NOT EXISTS (SELECT 1 FROM inserted)""".formatted(s);

		// 1 queue, 2 headers, 3 priority, 4 not-before, 5 delay ms, 6 max attempts, 7 group,
		// 8 payloads text[]. One statement per batch; ids come from one sequence, so sorted ids follow
		// input order.
		this.sendBatch = """
				INSERT INTO %s.message (queue, payload, headers, priority, visible_at, max_attempts, group_key)
				SELECT ?, p.payload::jsonb, ?::jsonb, ?, COALESCE(?, now() + ? * interval '1 millisecond'), ?, ?
				  FROM unnest(?::text[]) WITH ORDINALITY AS p(payload, n)
				 ORDER BY p.n
				RETURNING id""".formatted(s);

		// sendBatch's parameters, for a FIFO group (7): the batch's rows come with their
		// previous_id, ordered once per batch rather than by the insert trigger once per row (see
		// V16__group_removals.sql).
		this.sendGroupedBatch = "SELECT b.id FROM %s.send_batch_to_group(?, ?::jsonb, ?, ?, ?, ?, ?, ?::text[]) AS b(id)"
			.formatted(s);

		// 1 queue, 2 queue (paused?), 3 queue, 4 queue, 5 may take a message whose consumer died,
		// 6 namespace, 7 queue, 8 queue, 9 queue, 10 session key, 11 namespace, 12 payload limit in
		// bytes, 13 queue; the batch size and
		// the window are written into the text (see claim(int)). A paused queue has no priorities:
		// nothing is claimed, and no next due time.
		//
		// locked: walks the claim index priority by priority (a loose index scan, so a priority that
		// only holds delayed messages costs one probe), tests queue and visibility before the lock,
		// and tries the lock one candidate at a time outside the ordered subquery: the LIMIT stops
		// the walk, so only the rows returned are locked. (ORDER BY next to the lock would sort
		// first and lock every row the sort visits.) A message of a FIFO group is a candidate only as
		// its group's head, tested before the lock too: no older message of its group is in the queue.
		// The window counts the rows that pass these tests, so a long run of one group's messages does
		// not hide the other groups' heads behind it; the walk stops after SESSION_WALK_WINDOWS
		// windows' worth of rows all the same. A claim made where heads are scarce takes them from
		// the group index instead (SCANNING_SESSION_LOCKED, see ConsumerSession).
		//
		// listed, judged and chosen: a locked row held by a consumer that died (every row a live
		// consumer holds is locked, so not here) is a suspect: its claim is open on the scan's
		// snapshot, or a dead session lists it on a snapshot taken after the locks (LISTED: the
		// scan's can predate the holder's claim and death). If there are any, they are claimed
		// without the other rows, and handed out in turn (column 2 true): the session completes each
		// before it hands over the next, and its holding row lists them in that order with in_turn
		// set, so that if it dies only the one a handler had is counted again (see HOLDING_COUNTED):
		// a message that kills its consumer then burns its own attempts, not its neighbours'. (One
		// suspect per claim did that too, but cost a claim per message: 10 000 of them took 26 s.)
		// The walk leaves out what HELD_BY_THE_DEAD shows on its snapshot when this poller may not
		// take such messages; one it could not see there is still taken (in turn) and counted.
		//
		// fresh and written: the re-check. The scan's snapshot can still show a row that another
		// consumer acked, retried or dead-lettered a moment ago (its completion committed, and so
		// released the row's key, after this statement's snapshot was taken), so the lock succeeds
		// on it. Such a completion wrote the row, so the row's xmax is no longer 0 when it is read
		// again here, after every lock was taken. A row whose xmax is 0 was not written since it was
		// sent or last retried: it is claimed as it is, with nothing written (fresh). Every other row
		// (a suspect, or one written since: a completion that committed after the snapshot, a
		// transactional consumer's lock)
		// goes through an UPDATE (written), which does not trust the snapshot: PostgreSQL waits for
		// the changing transaction and re-evaluates the WHERE clause on the row's newest version
		// (EvalPlanQual), skipping it if it is gone, moved to another queue or no longer visible.
		// A dead holder's lost attempt is counted there (LOST_ATTEMPT): a suspect whose row is still
		// the version the scan saw, a row a dead session lists, or one whose newest version has its
		// claim open (read by the UPDATE, so a suspect claimer that died after the scan's snapshot is
		// seen). The claim is closed (claim_open false): this holder's attempt is counted through its
		// holding row, which lists the suspects in turn. An open claim on the scan's
		// snapshot can be one a live session has just closed (retried or released the row and
		// unlocked it); that session wrote the row, so its xmin has changed, and the row is then
		// claimed as any other.
		//
		// Row-level security lets a role that may only send to a queue read its messages (see
		// V10__queue_access.sql); the UPDATE policy is what keeps it from claiming them, so fresh,
		// which writes nothing, asks the same question once per claim.
		//
		// unlisted and recorded: the suspects leave the dead sessions' holding rows; the rows claimed
		// are listed in this session's, in the order they are returned (in turn when they are
		// suspects), so that if it dies, the next claim of each (of the first, in turn) counts its
		// attempt. The attempt shown to a handler is attempts + 1: stored only
		// when it fails (retry, dead letter, release after a handler saw it) or its consumer dies.
		//
		// The final select unlocks at once every locked row not claimed, and returns the
		// claimed rows with their queue's policy; a payload above the limit is not sent (its text is
		// null and its size says why). Columns 16 and 17 give the place in the claim index (priority,
		// visible_at in microseconds) of every chosen row, claimed or found gone by the re-check
		// (null for rows left because suspects were chosen without them): a poller goes on after the last,
		// past rows found gone. When nothing could be locked, one row with a null id says in
		// how many milliseconds the queue's next delayed message becomes visible (null: none), so
		// an idle poller sleeps until then and not a whole poll interval: in the same statement, so
		// an idle poll still costs one.
		this.sessionLocked = SESSION_LOCKED.replace("{held_by_the_dead}", HELD_BY_THE_DEAD)
			.replace("{held_open}", HELD_OPEN)
			.formatted(s);
		this.scanningSessionLocked = (SCANNED_HEADS + SCANNING_SESSION_LOCKED)
			.replace("{scanned_group}", SCANNED_GROUP.replace("{row}", "c"))
			.replace("{held_by_the_dead}", HELD_BY_THE_DEAD)
			.replace("{held_open}", HELD_OPEN)
			.formatted(s);
		this.claim = ("""
				{priorities}{locked}""" + LISTED.formatted("locked") + """
				judged AS (
				    SELECT l.id, l.seen, l.n, l.suspect, {listed} AS listed FROM locked l
				),
				chosen AS (
				    SELECT id, false AS suspect, false AS listed, seen FROM judged
				     WHERE NOT EXISTS (SELECT 1 FROM judged WHERE suspect OR listed)
				    UNION ALL
				    SELECT id, true, listed, seen FROM judged WHERE suspect OR listed
				),
				fresh AS (
				    SELECT m.id, m.queue, m.payload, m.headers, m.priority, m.visible_at, m.attempts,
				           m.max_attempts, m.created_at, m.last_error, false AS suspect
				      FROM %1$s.message m
				     WHERE m.id = ANY (ARRAY(SELECT id FROM chosen WHERE NOT suspect))
				       AND m.xmax = '0'::xid AND (m.queue = ?) IS TRUE AND m.visible_at <= now()
				       AND (SELECT NOT row_security_active('%1$s.message') OR %1$s.queue_allowed(?, true, current_user))
				),
				written AS (
				    UPDATE %1$s.message m
				       SET attempts = m.attempts + CASE WHEN {lost_attempt} THEN 1 ELSE 0 END,
				           claim_open = false, claimed_at = now()
				      FROM chosen l
				     WHERE m.id = ANY (ARRAY(SELECT id FROM chosen WHERE id NOT IN (SELECT id FROM fresh)))
				       AND m.id = l.id AND (m.queue = ?) IS TRUE AND m.visible_at <= now()
				    RETURNING m.id, m.queue, m.payload, m.headers, m.priority, m.visible_at, m.attempts,
				              m.max_attempts, m.created_at, m.last_error, l.suspect
				),
				claimed AS (
				    SELECT * FROM fresh UNION ALL SELECT * FROM written
				),
				""" + HOLDING_OF_A_CLAIM.formatted("claimed").replace("{listed}", "true")
					.replace("{in_turn}", "EXISTS (SELECT 1 FROM claimed WHERE suspect)") + """
				(SELECT l.id,
				       CASE WHEN c.id IS NULL THEN pg_advisory_unlock(?, l.id::bit(32)::int4) ELSE c.suspect END,
				""" + CLAIMED_COLUMNS.formatted("c.attempts + 1") + """
				       , CASE WHEN l.id IN (SELECT id FROM chosen) THEN l.priority END,
				       CASE WHEN l.id IN (SELECT id FROM chosen) THEN (extract(epoch FROM l.visible_at) * 1000000)::bigint END
				  FROM locked l
				  LEFT JOIN claimed c ON c.id = l.id
				 CROSS JOIN unlisted
				""" + POLICY_JOINS + """
				 ORDER BY c.priority, c.visible_at, l.id)
				""" + NEXT_DUE.formatted(", NULL, NULL", "locked")).replace("{held_by_the_dead}", HELD_BY_THE_DEAD)
			.replace("{held_open}", HELD_OPEN)
			.replace("{listed}", IS_LISTED)
			.replace("{lost_attempt}", LOST_ATTEMPT)
			.formatted(s);

		// 1 ids, 2 the queue they were claimed from, 3 backend pid of the claiming session,
		// 4 namespace, 5 session key (its holding row loses the ids deleted). The pid guard fences a lease whose session died: on any other session the
		// statement deletes nothing. The queue guard leaves a row that was moved while held (by
		// hand, say): it is released instead. Each deleted row's session lock is handed over to a
		// transaction lock (unlock_at_commit, V13__unlock_at_commit.sql), so no claim can lock the
		// row before the delete commits; a claim whose snapshot was taken before that commit can still
		// lock it after, and its re-check then finds the row gone.
		this.ack = ("""
				WITH acked AS (
				    DELETE FROM %1$s.message
				     WHERE id = ANY(?) AND (queue = ?) IS TRUE AND pg_backend_pid() = ?
				    RETURNING id, %1$s.unlock_at_commit(?, id::bit(32)::int4) AS unlocked
				),
				""" + UNHOLD.formatted("acked") + """
				SELECT id, unlocked FROM acked""").formatted(s);

		// 1 ids, 2 delays ms, 3 errors (text[], null entries keep last_error), 4 pid, 5 namespace,
		// 6 session key, 7 channel. Counts the failed attempt. Wakes the queue's pollers in every
		// process (one notification per queue: equal ones are folded at commit), so that they learn
		// when the retry is due and wake then.
		this.retry = ("""
				WITH r AS (SELECT * FROM unnest(?::bigint[], ?::bigint[], ?::text[]) AS r(id, delay_ms, error)),
				retried AS (
				    UPDATE %1$s.message m
				       SET attempts = m.attempts + 1, visible_at = now() + r.delay_ms * interval '1 millisecond',
				           last_error = COALESCE(r.error, m.last_error), claim_open = false
				      FROM r
				     WHERE m.id = ANY (ARRAY(SELECT id FROM r)) AND m.id = r.id AND pg_backend_pid() = ?
				    RETURNING m.id, m.queue, %1$s.unlock_at_commit(?, m.id::bit(32)::int4) AS unlocked),
				""" + UNHOLD.formatted("retried") + """
				SELECT id, unlocked, pg_notify(?, queue) FROM retried""").formatted(s);

		// 1 ids, 2 dead-letter queues, 3 errors, 4 pid, 5 namespace, 6 session key, 7 channel. Moves
		// messages to
		// their dead-letter queue with a fresh attempt count, keeps where they came from in the
		// headers, and wakes the dead-letter queue's listeners. A message that already is a dead
		// letter (or whose dead-letter queue is its own queue) is parked instead: it stays where it
		// is, invisible until a redrive, so no configuration can move it on and on.
		this.deadLetter = ("""
				WITH n AS (SELECT * FROM unnest(?::bigint[], ?::text[], ?::text[]) AS n(id, dlq, error)),
				moved AS (
				    UPDATE %1$s.message m
""" + DEAD_LETTER_MOVE.formatted("(m.attempts + 1)") + """
				      FROM (SELECT n.id, n.dlq, n.error, jsonb_exists(o.headers, 'pgqueue-dead-lettered-from') OR n.dlq = o.queue
				              FROM n JOIN %1$s.message o ON o.id = n.id
				             WHERE o.id = ANY (ARRAY(SELECT id FROM n))) AS d(id, dlq, error, park)
				     WHERE m.id = ANY (ARRAY(SELECT id FROM n)) AND m.id = d.id AND pg_backend_pid() = ?
				    RETURNING m.id, m.queue, d.park, %1$s.unlock_at_commit(?, m.id::bit(32)::int4) AS unlocked),
				""" + UNHOLD.formatted("moved") + """
				SELECT id, unlocked, CASE WHEN NOT park THEN pg_notify(?, queue) END FROM moved""").formatted(s);

		// 1 whether the attempt ended (a handler saw them), 2 ids, 3 namespace, 4 ids, 5 session key,
		// 6 ids, 7 namespace. Releases messages unchanged but for claim_open, and the attempt when a
		// handler saw them (not for a stopping poller's rest of a batch, nor for a message a
		// transaction completed), takes them out of the session's holding row, and unlocks ids
		// whose rows are gone (deleted by hand under our lock).
		this.unlock = """
				WITH released AS (
				    UPDATE %1$s.message m
				       SET claim_open = false, attempts = m.attempts + CASE WHEN ? THEN 1 ELSE 0 END
				     WHERE m.id = ANY(?)
				    RETURNING m.id, %1$s.unlock_at_commit(?, m.id::bit(32)::int4)),
				unheld AS (
				    UPDATE %1$s.holding h SET ids = ARRAY(SELECT i FROM unnest(h.ids) WITH ORDINALITY AS t(i, n)
				                                            WHERE i <> ALL (?::bigint[]) ORDER BY n)
				     WHERE h.session = ?
				)
				SELECT id FROM released
				UNION ALL
				SELECT t.id FROM unnest(?::bigint[]) AS t(id)
				 WHERE CASE WHEN t.id NOT IN (SELECT id FROM released)
				            THEN pg_advisory_unlock(?, t.id::bit(32)::int4) ELSE false END""".formatted(s);

		// 1 id, 2 queue, 3 namespace. Seed 000's cancel: deletes the message only if no consumer
		// holds it. The lock is transaction-scoped: the DELETE may wait on the row a concurrent change
		// holds and then find it moved, or evaluate the lock twice (re-checking the row); the
		// lock must go with the transaction whatever happened (and it keeps consumers off the row
		// until a caller's transaction that cancelled it commits or rolls back). A message of a FIFO
		// group is deleted under its group's lock, and the group's head test mended (see
		// V16__group_removals.sql). Whether it was deleted.
		this.cancel = "SELECT %s.cancel_message(?, ?, ?)".formatted(s);

		// 1 id, 2 queue.
		this.exists = "SELECT EXISTS (SELECT 1 FROM %s.message WHERE id = ? AND (queue = ?) IS TRUE)".formatted(s);

		// 1 queue, 2 namespace, 3 queue, 4 queue, 5 queue, 6 queue, 7 queue. The dead-letter queue
		// is the queue's configured one, else <queue>.dlq, as QueueNames derives it. In flight = held right now by
		// an advisory lock of our namespace. The held ids are found from pg_locks (a handful of
		// rows) through the primary key: every id whose fold is a held key, so the cost does not
		// grow with the queue. The counts themselves read the queue's part of the claim index.
		this.stats = """
				WITH held AS (
				    SELECT m.id FROM %1$s.message m
				     WHERE m.queue = ? AND m.id IN (
				           SELECT l.objid::bigint + s.n * 4294967296
				             FROM pg_locks l
				            CROSS JOIN generate_series(0, COALESCE((SELECT max(id) FROM %1$s.message), 0) >> 32) AS s(n)
				            WHERE l.locktype = 'advisory' AND l.objsubid = 2 AND l.granted
				              AND l.database = (SELECT oid FROM pg_database WHERE datname = current_database())
				              AND l.classid = ?::int4::oid))
				SELECT (SELECT count(*) FROM %1$s.message WHERE queue = ? AND visible_at <= now())
				           - (SELECT count(*) FROM held),
				       (SELECT count(*) FROM %1$s.message WHERE queue = ? AND visible_at > now()),
				       (SELECT count(*) FROM held),
				       (SELECT count(*) FROM %1$s.message
				         WHERE queue = COALESCE((SELECT q.dead_letter_queue FROM %1$s.queue q WHERE q.name = ?),
				                                %1$s.default_dead_letter_queue(?))),
				       (SELECT extract(epoch FROM now() - min(m.created_at)) FROM %1$s.message m
				         WHERE m.queue = ? AND m.visible_at <= now() AND m.id NOT IN (SELECT id FROM held))""".formatted(s);

		// 1 name, 2 max attempts, 3 backoff initial ms, 4 multiplier, 5 backoff max ms, 6 dlq.
		this.upsertQueue = """
				INSERT INTO %s.queue AS q (name, max_attempts, backoff_initial_ms, backoff_multiplier,
				                           backoff_max_ms, dead_letter_queue)
				VALUES (?, ?, ?, ?, ?, ?)
				ON CONFLICT (name) DO UPDATE
				   SET max_attempts = excluded.max_attempts,
				       backoff_initial_ms = excluded.backoff_initial_ms,
				       backoff_multiplier = excluded.backoff_multiplier,
				       backoff_max_ms = excluded.backoff_max_ms,
				       dead_letter_queue = excluded.dead_letter_queue,
				       updated_at = now()""".formatted(s);

		// 1 target queue, 2 dead-letter queue, 3 window, 4 namespace, 5 limit, 6 channel. Moves back
		// the dead letters that came from the target queue (others sharing the dead-letter queue stay),
		// parked ones included, as ordinary messages outside any FIFO group, keeping their ids (see
		// V16__group_removals.sql). Each is locked as a consumer would lock it, but for the
		// transaction only: a message a consumer holds is skipped, and no consumer can claim one
		// between the check and the move.
		this.redrive = "SELECT %s.redrive_dead_letters(?, ?, ?, ?, ?, ?)".formatted(s);

		// 1 payload, 2 headers, 3 priority, 4 not-before, 5 delay ms, 6 max attempts, 7 deduplication
		// key (or null), 8 group (or null), 9 exchange, 10 routing key, 11 routing key. A queue that already holds a message
		// with the key gets none (and is not counted). One message per matching queue, in one statement; every
		// binding's key is stored as a regular expression over the key's words, each with a '.'
		// before it: '.' || key, but '' for the empty key, which has no word (fanout: the empty one).
		this.publish = """
				INSERT INTO %1$s.message (queue, payload, headers, priority, visible_at, max_attempts, deduplication_key,
				                          group_key)
				SELECT q.queue, ?::jsonb, ?::jsonb, ?, COALESCE(?, now() + ? * interval '1 millisecond'), ?, ?, ?
				  FROM (SELECT DISTINCT b.queue FROM %1$s.binding b
				         WHERE b.exchange = ? AND (CASE WHEN ? = '' THEN '' ELSE '.' || ? END) ~ b.key_regex) q
				ON CONFLICT (queue, deduplication_key) WHERE deduplication_key IS NOT NULL DO NOTHING
				RETURNING id, queue""".formatted(s);

		// 1 exchange.
		// 1 exchange: its unroutable policy, no row if it is not declared.
		this.exchangeExists = "SELECT unroutable FROM %s.exchange WHERE name = ?".formatted(s);

		// 1 exchange, 2 type, 3 unroutable, 4 exchange, 5 queues, 6 keys, 7 regexes, 8 exchange,
		// 9 queues, 10 keys.
		// Upserts the exchange and its bindings and deletes the bindings no longer declared, in one
		// statement (the foreign key is checked at its end, after the exchange row exists).
		this.declareExchange = """
				WITH exchange AS (
				    INSERT INTO %1$s.exchange AS e (name, type, unroutable) VALUES (?, ?, ?)
				    ON CONFLICT (name) DO UPDATE
				       SET type = excluded.type, unroutable = excluded.unroutable, updated_at = now()
				    RETURNING e.name),
				bound AS (
				    INSERT INTO %1$s.binding AS b (exchange, queue, routing_key, key_regex)
				    SELECT ?, n.queue, n.routing_key, n.key_regex
				      FROM unnest(?::text[], ?::text[], ?::text[]) AS n(queue, routing_key, key_regex)
				    ON CONFLICT (exchange, queue, routing_key) DO UPDATE SET key_regex = excluded.key_regex
				    RETURNING b.queue)
				DELETE FROM %1$s.binding o
				 WHERE o.exchange = ?
				   AND (o.queue, o.routing_key) NOT IN (SELECT * FROM unnest(?::text[], ?::text[]))""".formatted(s);

		// Transactional mode. 1 queue, 2 queue, 3 queue, 4 queue, 5 namespace, 6 queue, 7 payload
		// limit, 8 queue; the batch size and the window are written into the text (see claim(int)).
		// Runs inside the transaction that runs the handlers.
		//
		// walked: walks the claim index as the session claim does, and takes a transaction-scoped
		// advisory lock on each candidate, one at a time, until the batch is full: the same key a
		// session consumer, a cancel or a redrive takes, so messages held any way are skipped, and
		// stats count these as in flight. A row written since the statement's snapshot is skipped
		// before its key is tried (see WRITTEN_SINCE_SNAPSHOT), and a row of a FIFO group that is not
		// its group's head (an older message of the group is in the queue) is skipped before its key
		// too, so no key is taken of a row the claim cannot deliver. The head test looks for the
		// group's next older message backwards from the row: for a row behind its head that is the
		// message just before it, one index entry away; a head's test stops at the row's previous_id,
		// the group's newest message when the row was inserted (V15__previous_in_group.sql), rather
		// than walking back over every acked entry of its group that is not yet vacuumed or killed:
		// with asynchronous commit those stay until the WAL writer flushes, and stepping over them
		// (a heap fetch each, six to nine per head at 4 x 100) was half of a grouped claim's time.
		//
		// The window is a number of rows walked, not of rows that pass the tests (as in the session
		// claim): a head test on every row walked made a claim that could not fill its batch (groups
		// in flight, heads acked since its snapshot) walk the whole backlog; a grouped drain with four
		// consumers at batch 100 spent most of its time in such walks. A claim that walks its window
		// to the end without filling its batch returns the window's last row (column 2 true, with its
		// priority and place, as a cursor; the first priority's, when several windows ended: a cursor
		// goes on within one priority, and the more urgent one first) and its poller goes on from
		// there at once, so groups behind a window's worth of rows it cannot take (a group whose head
		// is failing, say) are still reached, one window per claim; see
		// TransactionalConsumption#claimAgain. That row itself is never a candidate. (Rows of a later
		// priority beyond its window wait while an earlier priority's window ends full of such rows.)
		// Where windows keep ending so, the poller's claims find the groups' heads through the group
		// index instead, and their walks skip those groups' rows untested: see
		// transactionalClaim(int, boolean, boolean, boolean); until one such claim sees SCARCE_GROUPS
		// groups or more.
		//
		// A candidate is a suspect when the last transaction that locked it aborted (its consumer
		// died, its connection broke, its transaction timed out): that attempt was never written. A
		// removal (cancel, purge, redrive) that rolled back leaves the same mark, but recorded its
		// transaction first: it is no consumer's (consumer_aborted, V19__own_holding_rows_and_undone_removals.sql).
		// Suspects are not claimed here; they are returned by id, for a claim that counts their
		// attempt first and runs them alone. A message held by a session consumer that died is a
		// suspect too: judged in the walk on the statement's snapshot, and again once the keys are
		// taken (listed; see LISTED).
		//
		// claimed: the row locks, only on the rows returned. A row changed since the scan's snapshot
		// is re-read (EvalPlanQual) and skipped if it is gone, no longer visible or became a suspect.
		// The ids are an array, not an IN (subquery): a generic plan (the driver prepares a statement
		// run often) guesses thousands of candidates from the LIMIT parameter and would hash-join a
		// scan of the whole table; with an array it looks them up by primary key.
		//
		// The suspect test runs on the locked rows only, outside the walk: in the walk, next to the
		// FIFO groups' test, it made the planner pick a plan that drained grouped queues at 44 msg/s.
		//
		// A row no transaction ever locked (xmax 0, the common case) skips the suspect test: a call of
		// locker_aborted costs tens of microseconds, most of a batch's claim when made on every row;
		// consumer_aborted, which reads the removals' records, is asked only of an aborted locker.
		//
		// Nothing is written: the attempt shown to the handler is attempts + 1, and it is stored only
		// if the attempt fails (or by the suspect claim, if the consumer dies). Output as the session
		// claim's, with column 2 true for a suspect (id only) and for the window's last row (above;
		// its column 8 is how many groups a claim that scanned the group index saw, see SCARCE_GROUPS),
		// and the next-due row when no candidate.
		this.transactionalClaim = ("""
				{priorities}{scanned_heads}walked AS MATERIALIZED (
				    SELECT w.id, w.priority, w.visible_at, w.n, w.n < {window} AS taken,
				           w.n < {window} AND ({held_by_the_dead_w}
				                 OR CASE WHEN w.xmax = '0'::xid OR NOT %1$s.locker_aborted(w.xmax) THEN false ELSE %1$s.consumer_aborted(w.xmax) END) AS suspect
				      FROM priorities p
				     CROSS JOIN LATERAL (
				            SELECT m.id, m.queue, m.priority, m.visible_at, m.xmax, m.group_key, m.previous_id,
				                   m.claim_open, m.claimed_at, row_number() OVER (ORDER BY m.visible_at, m.id) AS n
				              FROM %1$s.message m
				             WHERE m.queue = ? AND m.priority = p.priority AND m.visible_at <= now()
				{filter}{after}             ORDER BY m.visible_at, m.id
				             LIMIT {window}) w
				     WHERE CASE WHEN w.n = {window} THEN true
				                WHEN {written_since_snapshot} THEN false
				                {scanned_group}WHEN w.group_key IS NOT NULL AND {older_in_group} IS NOT NULL THEN false
				                ELSE pg_try_advisory_xact_lock(?, w.id::bit(32)::int4) END
				     LIMIT {batch}
				),
				{taken_heads}""" + LISTED.formatted("{candidates}") + """
				judged AS (
				    SELECT l.id, l.suspect OR {listed} AS suspect FROM {judged_from}
				),
				claimed AS (
				    SELECT m.id, m.queue, m.payload, m.headers, m.priority, m.visible_at, m.attempts,
				           m.max_attempts, m.created_at, m.last_error
				      FROM %1$s.message m
				     WHERE m.id = ANY (ARRAY(SELECT id FROM judged WHERE NOT suspect))
				       AND (m.queue = ?) IS TRUE AND m.visible_at <= now()
				       AND NOT (m.claim_open AND m.claimed_at > pg_postmaster_start_time())
				       FOR UPDATE OF m SKIP LOCKED
				)
				(SELECT c.id, false,
				""" + CLAIMED_COLUMNS.formatted("c.attempts + 1") + """
				  FROM claimed c
				""" + POLICY_JOINS + """
				 ORDER BY c.priority, c.visible_at, c.id)
				UNION ALL
				SELECT id, true, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL
				  FROM judged WHERE suspect
				UNION ALL
				(SELECT e.id, true, NULL, NULL, e.priority, NULL, NULL, {scanned_groups}, NULL, NULL, NULL, NULL, NULL, NULL,
				        (extract(epoch FROM e.visible_at) * 1000000)::bigint
				   FROM walked e
				  WHERE NOT e.taken
				  ORDER BY e.priority LIMIT 1)
				""" + NEXT_DUE.formatted("", "{candidates}"))
			.replace("{older_in_group}", olderInGroup("w"))
			.replace("{held_by_the_dead_w}", HELD_BY_THE_DEAD.replace("m.", "w."))
			.replace("{listed}", IS_LISTED)
			.replace("{written_since_snapshot}", WRITTEN_SINCE_SNAPSHOT)
			.formatted(s);

		// 1 ids, 2 queue. In the handlers' transaction, which holds the rows' locks.
		this.transactionalAck = "DELETE FROM %s.message WHERE id = ANY(?) AND (queue = ?) IS TRUE RETURNING id".formatted(s);

		// 1 ids, 2 attempts (the failed attempt's number, stored), 3 delays ms, 4 errors, 5 channel.
		this.transactionalRetry = """
				WITH r AS (SELECT * FROM unnest(?::bigint[], ?::int[], ?::bigint[], ?::text[]) AS r(id, attempts, delay_ms, error)),
				retried AS (
				    UPDATE %s.message m
				       SET attempts = r.attempts, visible_at = now() + r.delay_ms * interval '1 millisecond',
				           last_error = COALESCE(r.error, m.last_error), claim_open = false
				      FROM r
				     WHERE m.id = ANY (ARRAY(SELECT id FROM r)) AND m.id = r.id
				    RETURNING m.id, m.queue)
				SELECT id, pg_notify(?, queue) FROM retried""".formatted(s);

		// 1 ids, 2 attempts, 3 dead-letter queues, 4 errors, 5 channel. As deadLetter, in the
		// handlers' transaction.
		this.transactionalDeadLetter = ("""
				WITH n AS (SELECT * FROM unnest(?::bigint[], ?::int[], ?::text[], ?::text[]) AS n(id, attempts, dlq, error)),
				moved AS (
				    UPDATE %1$s.message m
""" + DEAD_LETTER_MOVE.formatted("d.attempts") + """
				      FROM (SELECT n.id, n.attempts, n.dlq, n.error,
				                   jsonb_exists(o.headers, 'pgqueue-dead-lettered-from') OR n.dlq = o.queue
				              FROM n JOIN %1$s.message o ON o.id = n.id
				             WHERE o.id = ANY (ARRAY(SELECT id FROM n))) AS d(id, attempts, dlq, error, park)
				     WHERE m.id = ANY (ARRAY(SELECT id FROM n)) AND m.id = d.id
				    RETURNING m.id, m.queue, d.park)
				SELECT id, CASE WHEN NOT park THEN pg_notify(?, queue) END FROM moved""").formatted(s);

		// 1 id, 2 queue. In the transaction that runs a suspect, whose advisory lock another session
		// of the same poller holds: the row lock fences it from consumers that skip locked rows.
		this.lockClaimed = "SELECT id FROM %s.message WHERE id = ? AND (queue = ?) IS TRUE FOR UPDATE".formatted(s);

		// Claims one suspect of a transactional queue on a session, as the session claim does, and
		// counts what was never written: the attempt of the consumer that died.
		this.claimSuspect = claimOne(s, "AND " + SUSPECT_OF_ANY_MODE);

		// Claims one message by id on a session, if it is visible, free (no session or transaction
		// holds its advisory key), in a FIFO group its group's head, and its queue is not paused (as
		// every claim tests, once per statement: the row's queue is the one asked for).
		this.claimById = claimOne(s, GROUP_HEAD
				+ "               AND NOT EXISTS (SELECT 1 FROM %1$s.queue q WHERE q.name = m.queue AND q.paused)\n");

		this.backendPid = "SELECT pg_backend_pid()";

		// A consumer session's holding row, with the session's key and backend pid. First deletes the
		// rows nobody needs any more, whatever role wrote them: of a session opened before the server
		// last started, or of one that has ended and whose messages are all gone (a session that ends
		// cleanly deletes its own row; one that died keeps it while a message it held is left to be
		// counted: of messages handed out in turn, the first). See forget_ended_sessions in
		// V19__own_holding_rows_and_undone_removals.sql.
		this.openSession = """
				INSERT INTO %1$s.holding (pid) SELECT pg_backend_pid() FROM %1$s.forget_ended_sessions()
				RETURNING session, pid""".formatted(s);

		// 1 session key, 2 the connection's default isolation to give back. A session that holds
		// nothing ends.
		this.closeSession = """
				WITH gone AS (DELETE FROM %s.holding WHERE session = ?)
				SELECT set_config('default_transaction_isolation', ?, false)""".formatted(s);

		// 1 queue.
		this.deadLetterQueue = "SELECT dead_letter_queue FROM %s.queue WHERE name = ?".formatted(s);

		// 1 queue. The effective dead-letter queue of a declared queue; no row if it is not declared.
		this.deadLetterQueueOfDeclared = """
				SELECT COALESCE(dead_letter_queue, %1$s.default_dead_letter_queue(name))
				  FROM %1$s.queue WHERE name = ?""".formatted(s);

		// Every declared queue and its dead-letter queue.
		this.declaredQueues = """
				SELECT name FROM %1$s.queue
				UNION
				SELECT COALESCE(dead_letter_queue, %1$s.default_dead_letter_queue(name)) FROM %1$s.queue""".formatted(s);
	}

	/**
	 * Whether claimable row m was held by a consumer that died, session or transactional (no
	 * parameter): {@link #HELD_BY_THE_DEAD}, or the last transaction that locked it aborted and was
	 * not a recorded removal's.
	 */
	private static final String SUSPECT_OF_ANY_MODE = "(" + HELD_BY_THE_DEAD
			+ " OR CASE WHEN m.xmax = '0'::xid OR NOT %1$s.locker_aborted(m.xmax) THEN false ELSE %1$s.consumer_aborted(m.xmax) END)";

	/**
	 * A claim of one message by id on a session (1 id, 2 queue, 3 namespace, 4 queue, 5 session
	 * key, 6 namespace, 7 payload limit), if it is visible and {@code condition} holds for its row
	 * m: the condition is tested in a materialized CTE, before the lock, because in one WHERE
	 * clause PostgreSQL tests the cheap lock function before costlier conditions, and a row they
	 * then reject would keep the lock its session took. A suspect ({@link #SUSPECT_OF_ANY_MODE} on
	 * the scan's snapshot, {@link #LISTED} after the lock) has its lost attempt counted
	 * ({@link #LOST_ATTEMPT}) and claim_open set; any other row is listed in the session's holding
	 * row. Output as the session claim's.
	 */
	private static String claimOne(String s, String condition) {
		return ("""
				WITH candidate AS MATERIALIZED (
				    SELECT m.id, {suspect} AS suspect, m.xmin AS seen
				      FROM %1$s.message m
				     WHERE m.id = ? AND (m.queue = ?) IS TRUE AND m.visible_at <= now()
				""" + condition + """
				),
				locked AS (
				    SELECT id, suspect, seen FROM candidate WHERE pg_try_advisory_lock(?, id::bit(32)::int4)
				),
				""" + LISTED.formatted("locked") + """
				claimed AS (
				    UPDATE %1$s.message m
				       SET attempts = m.attempts + CASE WHEN {lost_attempt} THEN 1 ELSE 0 END,
				           claim_open = {lost_attempt}, claimed_at = now()
				      FROM (SELECT l.id, l.suspect, l.seen, {listed} AS listed FROM locked l) l
				     WHERE m.id = l.id AND (m.queue = ?) IS TRUE AND m.visible_at <= now()
				    RETURNING m.id, m.queue, m.payload, m.headers, m.priority, m.visible_at, m.attempts,
				              m.max_attempts, m.created_at, m.last_error, m.claim_open AS suspect
				),
				""" + HOLDING_OF_A_CLAIM.formatted("claimed").replace("{listed}", "NOT suspect")
					.replace("{in_turn}", "false") + """
				SELECT l.id,
				       CASE WHEN c.id IS NULL THEN pg_advisory_unlock(?, l.id::bit(32)::int4) END,
				""" + CLAIMED_COLUMNS.formatted("c.attempts + 1") + """
				  FROM locked l
				  LEFT JOIN claimed c ON c.id = l.id
				 CROSS JOIN unlisted
				""" + POLICY_JOINS).replace("{suspect}", SUSPECT_OF_ANY_MODE)
			.replace("{listed}", IS_LISTED)
			.replace("{lost_attempt}", LOST_ATTEMPT)
			.formatted(s);
	}

	public String namespace() {
		return this.namespace;
	}

	public String send() {
		return this.send;
	}

	public String sendPlain() {
		return this.sendPlain;
	}

	public String sendDeduplicated() {
		return this.sendDeduplicated;
	}

	public String sendBatch() {
		return this.sendBatch;
	}

	public String sendGroupedBatch() {
		return this.sendGroupedBatch;
	}

	/**
	 * The session claim of up to {@code batchSize} messages. The batch size and the window are
	 * written into the statement rather than bound: PostgreSQL plans a statement whose LIMIT is a
	 * parameter anew at every run (its generic plan, estimated for an unknown limit, always looks
	 * dearer than a custom one), and planning the claim costs about as much as running it. With
	 * constants, the driver's prepared statement settles on its generic plan.
	 */
	public String claim(int batchSize) {
		return claim(batchSize, false);
	}

	/**
	 * The session claim of up to {@code batchSize} messages, with a header filter if
	 * {@code filtered}: its alternatives (jsonb[]) are then parameter 6, and the ones after it move
	 * up by one.
	 */
	public String claim(int batchSize, boolean filtered) {
		return claim(batchSize, filtered, false, false);
	}

	/**
	 * The session claim, from the head or after a cursor ({@code afterCursor}), that finds FIFO
	 * groups' heads by stepping through the group index if {@code scanHeads}, as
	 * {@link #transactionalClaim(int, boolean, boolean, boolean)} does; its walk then counts every
	 * row it walks. With {@code scanHeads}, parameters 4 and 5 (after the priorities') are the
	 * queue, the others after them move up by two, and whether it may take messages of dead
	 * holders, the filter, when there is one, and the namespace come again after the walk's
	 * namespace.
	 */
	public String claim(int batchSize, boolean filtered, boolean afterCursor, boolean scanHeads) {
		return this.claimsBySize.computeIfAbsent(2 * key(batchSize, filtered, afterCursor) + (scanHeads ? 1 : 0),
				(key) -> specialized(this.claim.replace("{locked}", scanHeads ? this.scanningSessionLocked
						: this.sessionLocked), batchSize, filtered, afterCursor));
	}

	/**
	 * The session claim that goes on from where this poller's last full claim ended, in that
	 * claim's last priority and after its last row in the claim index: parameter 1 is that claim's last
	 * priority (an int, where the claim from the head has the queue), and its last visible_at in
	 * microseconds and id follow the filter (or take its place), moving the ones after them up by
	 * two. It claims nothing when the queue holds a message of a lower priority: the caller then
	 * claims from the head.
	 */
	public String claimAfter(int batchSize, boolean filtered) {
		return claim(batchSize, filtered, true, false);
	}

	private static int key(int batchSize, boolean filtered, boolean afterCursor) {
		return 4 * batchSize + (filtered ? 1 : 0) + (afterCursor ? 2 : 0);
	}

	private String specialized(String claim, int batchSize, boolean filtered, boolean afterCursor) {
		if (batchSize < 1) {
			throw new IllegalArgumentException("A claim takes at least one message, not " + batchSize);
		}
		String s = "\"" + this.schema + "\"";
		return claim.replace("{priorities}", (afterCursor ? CURSOR_PRIORITY : PRIORITIES).formatted(s))
			.replace("{walk}", String.valueOf(SESSION_WALK_WINDOWS * (batchSize + CLAIM_WINDOW)))
			.replace("{window}", String.valueOf(batchSize + CLAIM_WINDOW))
			.replace("{batch}", String.valueOf(batchSize))
			.replace("{filter}", filtered ? HEADER_FILTER : "")
			.replace("{after}", afterCursor ? AFTER_CURSOR : "");
	}

	public String ack() {
		return this.ack;
	}

	public String retry() {
		return this.retry;
	}

	public String deadLetter() {
		return this.deadLetter;
	}

	public String unlock() {
		return this.unlock;
	}

	public String cancel() {
		return this.cancel;
	}

	public String exists() {
		return this.exists;
	}

	public String stats() {
		return this.stats;
	}

	public String upsertQueue() {
		return this.upsertQueue;
	}

	public String redrive() {
		return this.redrive;
	}

	public String backendPid() {
		return this.backendPid;
	}

	public String openSession() {
		return this.openSession;
	}

	public String closeSession() {
		return this.closeSession;
	}

	public String publish() {
		return this.publish;
	}

	public String exchangeExists() {
		return this.exchangeExists;
	}

	public String declareExchange() {
		return this.declareExchange;
	}

	public String declaredQueues() {
		return this.declaredQueues;
	}

	public String deadLetterQueue() {
		return this.deadLetterQueue;
	}

	public String deadLetterQueueOfDeclared() {
		return this.deadLetterQueueOfDeclared;
	}

	/** The transactional claim of up to {@code batchSize} messages; see {@link #claim(int)}. */
	public String transactionalClaim(int batchSize) {
		return transactionalClaim(batchSize, false);
	}

	/**
	 * The transactional claim of up to {@code batchSize} messages, with a header filter if
	 * {@code filtered}: its alternatives (jsonb[]) are then parameter 5, and the ones after it move
	 * up by one.
	 */
	public String transactionalClaim(int batchSize, boolean filtered) {
		return transactionalClaim(batchSize, filtered, false, false);
	}

	/**
	 * The transactional claim that goes on from a cursor, with its parameters placed as in
	 * {@link #claimAfter(int, boolean)}: 1 the priority, and the visible_at and id after the filter.
	 */
	public String transactionalClaimAfter(int batchSize, boolean filtered) {
		return transactionalClaim(batchSize, filtered, true, false);
	}

	/**
	 * The transactional claim, from the head or after a cursor ({@code afterCursor}), that finds
	 * FIFO groups' heads by stepping through the group index if {@code scanHeads}: for up to
	 * 1 000 + {@code batchSize} groups in key order, the walk skips their rows and their heads are
	 * candidates after the walk's, in the claim index's order; rows of groups beyond those are
	 * tested in the walk as usual. Its cost grows with the number of groups and not with the
	 * messages queued behind their heads: the claim for queues where a walk meets few heads (see
	 * TransactionalConsumption). With {@code scanHeads}, parameters 4 and 5 are the queue (the
	 * scan), the others after them move up by two, and the filter, when there is one, and the
	 * namespace come again after the walk's namespace.
	 */
	public String transactionalClaim(int batchSize, boolean filtered, boolean afterCursor, boolean scanHeads) {
		return this.transactionalClaimsBySize.computeIfAbsent(2 * key(batchSize, filtered, afterCursor) + (scanHeads ? 1 : 0),
				(key) -> specialized(scanHeads ? scanningHeads(this.transactionalClaim) : walkingOnly(this.transactionalClaim),
						batchSize, filtered, afterCursor));
	}

	private static String walkingOnly(String claim) {
		return claim.replace("{scanned_heads}", "")
			.replace("{scanned_group}", "")
			.replace("{taken_heads}", "")
			.replace("{candidates}", "walked WHERE taken")
			.replace("{judged_from}", "walked l WHERE l.taken")
			.replace("{scanned_groups}", "NULL::int");
	}

	private String scanningHeads(String claim) {
		String s = "\"" + this.schema + "\"";
		return claim.replace("{scanned_heads}", SCANNED_HEADS.formatted(s))
			.replace("{scanned_group}", "WHEN " + SCANNED_GROUP.replace("{row}", "w") + " THEN false\n\t\t\t\t                ")
			.replace("{taken_heads}", TAKEN_HEADS.replace("{held_by_the_dead}", HELD_BY_THE_DEAD)
				.replace("{written_since_snapshot}", WRITTEN_SINCE_SNAPSHOT.replace("w.", "m."))
				.formatted(s))
			.replace("{candidates}", "candidates")
			.replace("{judged_from}", "candidates l")
			.replace("{scanned_groups}", "(SELECT count(*) FROM scanned)::int");
	}

	public String transactionalAck() {
		return this.transactionalAck;
	}

	public String transactionalRetry() {
		return this.transactionalRetry;
	}

	public String transactionalDeadLetter() {
		return this.transactionalDeadLetter;
	}

	public String lockClaimed() {
		return this.lockClaimed;
	}

	public String claimSuspect() {
		return this.claimSuspect;
	}

	public String claimById() {
		return this.claimById;
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
