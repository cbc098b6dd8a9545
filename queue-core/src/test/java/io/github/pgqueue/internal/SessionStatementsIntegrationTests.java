package io.github.pgqueue.internal;

import java.sql.Connection;
import java.sql.SQLException;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.concurrent.Callable;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;

import io.github.pgqueue.ContextInternals;
import io.github.pgqueue.QueueTemplate;
import io.github.pgqueue.SendOptions;
import io.github.pgqueue.internal.QueueSql.SessionClaim;
import io.github.pgqueue.testing.Db;
import io.github.pgqueue.testing.EmbeddedPostgres;
import io.github.pgqueue.testing.PostgresExtension;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;

import org.springframework.jdbc.core.JdbcTemplate;

import static io.github.pgqueue.internal.StatementConnections.execute;
import static io.github.pgqueue.internal.StatementConnections.holding;
import static io.github.pgqueue.internal.StatementConnections.holdingRowsRead;
import static io.github.pgqueue.internal.StatementConnections.lockable;
import static io.github.pgqueue.internal.StatementConnections.lockedIds;
import static io.github.pgqueue.internal.StatementConnections.message;
import static io.github.pgqueue.internal.StatementConnections.notifications;
import static io.github.pgqueue.internal.StatementConnections.pid;
import static io.github.pgqueue.internal.StatementConnections.query;
import static io.github.pgqueue.internal.StatementConnections.rows;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.entry;
import static org.assertj.core.api.Assertions.tuple;
import static org.assertj.core.api.Assertions.within;
import static org.awaitility.Awaitility.await;

/**
 * Each statement of {@code session.sql}, run by its name on PostgreSQL as {@link ConsumerSession}
 * runs it: on a plain connection with the consumer's planner settings, in autocommit, bound from
 * its parameter record. Each test checks the columns the statement returns, by name, and what it
 * changed: the message rows, the session's holding row and the advisory locks its backend holds.
 * A test method is named after its statement (the resource's name in camel case, which
 * {@link StatementResourcesTests} checks); tests of further cases of a statement start with that
 * name.
 * <p>
 * The claims' common cases (from the head in batch order, the header filter, FIFO heads, the
 * next due time, a paused queue) are written once and run for each of the three batch claims:
 * the three statements repeat the same conditions, and a fix made to one of them only would
 * show here.
 */
@ExtendWith(PostgresExtension.class)
class SessionStatementsIntegrationTests {

	private static final Duration HOUR = Duration.ofHours(1);

	private final JdbcTemplate jdbc = Db.jdbc();

	private final QueueTemplate template = QueueTemplate.builder(EmbeddedPostgres.get().dataSource()).build();

	private final QueueSql sql = ContextInternals.sql(this.template.context());

	private final int namespace = this.template.context().lockNamespace();

	private final int payloadLimit = this.template.context().maxPayloadBytes();

	private final StatementConnections connections = new StatementConnections();

	@AfterEach
	void closeConnections() throws SQLException {
		this.connections.close();
	}

	@Test
	void namespace() throws SQLException {
		Connection connection = this.connections.open();
		List<Map<String, Object>> rows = rows(connection, this.sql.namespace, new QueueSql.None());
		// Created without a configured namespace: the message table's oid, as the context reads it.
		int oid = (int) Db.queryForLong("SELECT 'pgqueue.message'::regclass::oid::int");
		assertThat(rows).containsExactly(Map.of("lock_namespace", oid));
		assertThat(this.namespace).isEqualTo(oid);
	}

	@Test
	void openSession() throws SQLException {
		long kept = send("open", 1);
		// Rows nobody needs any more: of a dead backend (pid 0 is none) that listed nothing or only
		// messages gone, and of a session opened before the server last started.
		this.jdbc.update("INSERT INTO pgqueue.holding (pid, ids) VALUES (0, '{}'), (0, '{999999}')");
		this.jdbc.update("INSERT INTO pgqueue.holding (pid, ids, opened_at) VALUES (0, ARRAY[?]::bigint[], "
				+ "pg_postmaster_start_time() - interval '1 second')", kept);
		// Rows still needed: of a dead backend that listed a message still in the queue, and of a
		// live session.
		long deadWithMessage = this.jdbc.queryForObject(
				"INSERT INTO pgqueue.holding (pid, ids) VALUES (0, ARRAY[?]::bigint[]) RETURNING session", Long.class, kept);
		Session live = newSession();

		Connection connection = this.connections.open();
		List<Map<String, Object>> rows = rows(connection, this.sql.openSession, new QueueSql.None());

		assertThat(rows).hasSize(1);
		long key = (Long) rows.get(0).get("session");
		assertThat(rows.get(0)).containsExactly(entry("session", key), entry("pid", pid(connection)));
		assertThat(this.jdbc.queryForList("SELECT session FROM pgqueue.holding ORDER BY session", Long.class))
			.containsExactly(deadWithMessage, live.key(), key);
		assertThat(this.jdbc.queryForMap("SELECT pid, ids::text AS ids, in_turn, queue, login = session_user AS own, "
				+ "opened_at > pg_postmaster_start_time() AS current FROM pgqueue.holding WHERE session = ?", key))
			.as("no queue yet, and not a row of an earlier version (null)")
			.containsExactly(entry("pid", pid(connection)), entry("ids", "{}"), entry("in_turn", false),
					entry("queue", ""), entry("own", true), entry("current", true));
	}

	/**
	 * listed_by_the_dead (V14, V18, V28), which every claim asks about the messages it locked: of
	 * each row opened since the server started, every id it lists, or only the first of a row whose
	 * messages were handed out in turn; rows listing none of the claimed ids, or nothing, give none.
	 */
	@Test
	void listedByTheDeadReturnsTheClaimedIdsEachRowOfTheQueueCounts() {
		this.jdbc.update("INSERT INTO pgqueue.holding (pid, queue, ids) VALUES (0, 'q', '{1,2,3}'), (0, 'q', '{}'), (0, 'q', '{8,9}')");
		this.jdbc.update("INSERT INTO pgqueue.holding (pid, queue, ids, in_turn) VALUES (0, 'q', '{4,5}', true)");
		this.jdbc.update("INSERT INTO pgqueue.holding (pid, queue, ids, opened_at) VALUES (0, 'q', '{6}', '2000-01-01')");
		this.jdbc.update("INSERT INTO pgqueue.holding (pid, queue, ids) VALUES (0, 'other', '{7}')");
		this.jdbc.update("INSERT INTO pgqueue.holding (pid, ids) VALUES (0, '{10}')");

		assertThat(listedByTheDead("q", "{1,3,4,5,6,7,10}")).as("of q's rows and the row without a queue")
			.containsExactlyInAnyOrder(1L, 3L, 4L, 10L);
		assertThat(listedByTheDead("other", "{1,7}")).containsExactly(7L);
		assertThat(listedByTheDead("q", "{5,7}")).isEmpty();
		assertThat(listedByTheDead("q", "{}")).isEmpty();
	}

	private List<Long> listedByTheDead(String queue, String claimed) {
		return this.jdbc.queryForList("SELECT unnest(pgqueue.listed_by_the_dead(?, ?::bigint[]))", Long.class, queue,
				claimed);
	}

	@Test
	void closeSession() throws SQLException {
		Session other = newSession();
		Session session = newSession();

		List<Map<String, Object>> rows = rows(session.connection(), this.sql.closeSession,
				new QueueSql.CloseSession(session.key(), "repeatable read"));

		assertThat(rows).containsExactly(Map.of("set_config", "repeatable read"));
		assertThat(holding(session.key())).as("its holding row is deleted").isNull();
		assertThat(holding(other.key())).as("another session's stays").isEmpty();
		assertThat(query(session.connection(), "SHOW default_transaction_isolation"))
			.containsExactly(Map.of("default_transaction_isolation", "repeatable read"));
	}

	@Test
	void backendPid() throws SQLException {
		Connection connection = this.connections.open();
		assertThat(rows(connection, this.sql.backendPid, new QueueSql.None()))
			.containsExactly(Map.of("pid", pid(connection)));
	}

	@Test
	void unlockAll() throws SQLException {
		Session session = newSession();
		Session other = newSession();
		execute(session.connection(), "SELECT pg_advisory_lock(" + this.namespace + ", 1), pg_advisory_lock("
				+ this.namespace + ", 2), pg_advisory_lock(42)");
		execute(other.connection(), "SELECT pg_advisory_lock(" + this.namespace + ", 3)");

		assertThat(rows(session.connection(), this.sql.unlockAll, new QueueSql.None())).hasSize(1);

		assertThat(Db.queryForLong("SELECT count(*) FROM pg_locks WHERE locktype = 'advisory' AND pid = ?",
				session.pid())).as("every advisory lock of the session, of any key form").isZero();
		assertThat(lockedIds(other.pid(), this.namespace)).as("another session's stay").containsExactly(3L);
	}

	// concurrency_key_of

	@Test
	void concurrencyKeyOf() throws SQLException {
		this.jdbc.update("INSERT INTO pgqueue.queue (name, concurrency_key) VALUES ('keyed', 'tenant')");
		this.jdbc.update("INSERT INTO pgqueue.queue (name, concurrency_key, max_in_flight_per_key) VALUES ('limited', 'tenant', 2)");
		this.jdbc.update("INSERT INTO pgqueue.queue (name, concurrency_key, rate_limit_per_key_permits, "
				+ "rate_limit_per_key_period_ms) VALUES ('paced', 'tenant', 5, 1000)");
		this.jdbc.update("INSERT INTO pgqueue.queue (name) VALUES ('plain')");
		Session session = newSession();
		assertThat(rows(session.connection(), this.sql.concurrencyKeyOf, new QueueSql.Queue("keyed")))
			.extracting("concurrency_key", "max_in_flight_per_key", "rate_limited_per_key")
			.containsExactly(tuple("tenant", null, false));
		assertThat(rows(session.connection(), this.sql.concurrencyKeyOf, new QueueSql.Queue("limited")))
			.extracting("concurrency_key", "max_in_flight_per_key", "rate_limited_per_key")
			.containsExactly(tuple("tenant", 2, false));
		assertThat(rows(session.connection(), this.sql.concurrencyKeyOf, new QueueSql.Queue("paced")))
			.extracting("concurrency_key", "max_in_flight_per_key", "rate_limited_per_key")
			.containsExactly(tuple("tenant", null, true));
		assertThat(rows(session.connection(), this.sql.concurrencyKeyOf, new QueueSql.Queue("plain")))
			.extracting("concurrency_key").containsExactly((Object) null);
		assertThat(rows(session.connection(), this.sql.concurrencyKeyOf, new QueueSql.Queue("undeclared"))).isEmpty();
	}

	// claim_fair

	/**
	 * A queue whose definition names the header "tenant": 50 messages of tenant a, sent first, then
	 * two of b and one of c. A claim of 4 walks 2 from the head of the queue (a's), keeping one row
	 * for each further key, up to half the batch, and takes the heads of the keys the walk did not
	 * reach, in descending key order (c, b); a claim after key a wraps around to c, then b; a claim
	 * after c goes on with b. Held messages are skipped, a key whose messages are all held gives
	 * none, and a claim whose walk took all it could counts as full although its batch is not.
	 * With a cursor, heads and walk start after it, and only the walked rows say their place.
	 */
	@Test
	void claimFair() throws SQLException {
		this.jdbc.update("INSERT INTO pgqueue.queue (name, concurrency_key) VALUES ('fair', 'tenant')");
		List<Long> a = new java.util.ArrayList<>();
		for (int i = 0; i < 50; i++) {
			a.add(send("fair", i, SendOptions.builder().header("tenant", "a")));
		}
		long b1 = send("fair", 100, SendOptions.builder().header("tenant", "b"));
		long b2 = send("fair", 101, SendOptions.builder().header("tenant", "b"));
		long c1 = send("fair", 200, SendOptions.builder().header("tenant", "c"));
		long none = send("fair", 300);
		assertThat(Db.queryForLong("SELECT count(*) FROM pgqueue.message WHERE queue = 'fair' AND concurrency_key IS NOT NULL"))
			.as("the sends copied the header into the key").isEqualTo(53);

		Session first = newSession();
		assertThat(fair(first, "fair", 4, "")).as("next_key: the last key the heads served")
			.extracting("next_key").containsOnly("b");
		execute(first.connection(), "SELECT pg_advisory_unlock_all()");
		execute(first.connection(), "UPDATE pgqueue.holding SET ids = '{}' WHERE session = " + first.key());
		assertThat(fair(first, "fair", 4, "")).extracting("id", "kind").containsExactlyInAnyOrder(
				tuple(a.get(0), "claimed"), tuple(b1, "claimed"), tuple(c1, "claimed"), tuple(a.get(1), "claimed"));

		Session second = newSession();
		assertThat(fair(second, "fair", 2, "a")).as("after key a: c (held), then b")
			.extracting("id").containsExactlyInAnyOrder(b2, a.get(2));

		Session third = newSession();
		assertThat(fair(third, "fair", 3, "c")).as("after key c: a walked, b and c held")
			.extracting("id", "walk_full").containsExactlyInAnyOrder(tuple(a.get(3), true), tuple(a.get(4), true));
		assertThat(lockable(this.namespace, none)).isTrue();

		// A second queue: a0..a9, b0, a10..a19, b1, and a cursor at a10.
		this.jdbc.update("INSERT INTO pgqueue.queue (name, concurrency_key) VALUES ('fair-after', 'tenant')");
		List<Long> a2 = new java.util.ArrayList<>();
		long b0 = 0;
		for (int i = 0; i < 20; i++) {
			if (i == 10) {
				b0 = send("fair-after", 100, SendOptions.builder().header("tenant", "b"));
			}
			a2.add(send("fair-after", i, SendOptions.builder().header("tenant", "a")));
		}
		long b1After = send("fair-after", 101, SendOptions.builder().header("tenant", "b"));
		long cursorAt = Db.queryForLong("SELECT (extract(epoch FROM visible_at) * 1000000)::bigint FROM pgqueue.message "
				+ "WHERE id = " + a2.get(10));
		Session fourth = newSession();
		List<Map<String, Object>> afterCursor = rows(fourth.connection(), this.sql.claimFair.variant(3, false),
				new QueueSql.SessionFairClaim("fair-after", true, null, this.namespace, fourth.key(), this.payloadLimit, "",
						0, cursorAt, a2.get(10), null))
			.stream()
			.filter((row) -> !"next_due".equals(row.get("kind")))
			.toList();
		assertThat(afterCursor).as("after a cursor at a10: the walk after it, and b's head after it, not b0")
			.extracting("id", "place_priority")
			.containsExactlyInAnyOrder(tuple(a2.get(11), 0), tuple(a2.get(12), 0), tuple(b1After, null));
		assertThat(lockable(this.namespace, b0)).isTrue();
	}

	/**
	 * A queue with at most two messages of a key in flight: a claim of 10 takes two of key a (an
	 * advisory lock is re-entrant, so each message must take a slot the claim did not take already)
	 * and the message without a key; a second session's claim takes none of a until the first
	 * releases its slots, and then two.
	 */
	@Test
	void claimFairTakesASlotPerMessageOfALimitedQueue() throws SQLException {
		this.jdbc.update("INSERT INTO pgqueue.queue (name, concurrency_key, max_in_flight_per_key) "
				+ "VALUES ('fair-limited', 'tenant', 2)");
		List<Long> a = new java.util.ArrayList<>();
		for (int i = 0; i < 20; i++) {
			a.add(send("fair-limited", i, SendOptions.builder().header("tenant", "a")));
		}
		long none = send("fair-limited", 100);
		Session first = newSession();
		List<Map<String, Object>> claimed = fair(first, "fair-limited", 10, "");
		assertThat(claimed).filteredOn((row) -> "claimed".equals(row.get("kind"))).extracting("id")
			.containsExactlyInAnyOrder(a.get(0), a.get(1), none);
		String slotLocks = (String) claimed.get(0).get("slot_locks");
		assertThat(slotLocks.split(",")).as("two slots taken: %s", slotLocks).filteredOn((k) -> !k.isEmpty()).hasSize(2);

		Session second = newSession();
		assertThat(fair(second, "fair-limited", 10, "")).filteredOn((row) -> "claimed".equals(row.get("kind")))
			.as("no slot of a is free").isEmpty();
		assertThat(lockable(this.namespace, a.get(2))).as("a message that got no slot is unlocked again").isTrue();

		Long[] lockKeys = java.util.Arrays.stream(slotLocks.split(",")).filter((k) -> !k.isEmpty()).map(Long::valueOf)
			.toArray(Long[]::new);
		assertThat(rows(first.connection(), this.sql.releaseSlots, new QueueSql.SlotLocks(lockKeys)))
			.extracting("released").containsExactly(2);
		execute(second.connection(), "UPDATE pgqueue.holding SET ids = '{}' WHERE session = " + second.key());
		assertThat(fair(second, "fair-limited", 10, "")).filteredOn((row) -> "claimed".equals(row.get("kind")))
			.extracting("id").containsExactlyInAnyOrder(a.get(2), a.get(3));
	}

	// release_slots: claimFairTakesASlotPerMessageOfALimitedQueue

	@Test
	void releaseSlots() throws SQLException {
		Session session = newSession();
		execute(session.connection(), "SELECT pg_advisory_lock(42), pg_advisory_lock(43)");
		assertThat(rows(session.connection(), this.sql.releaseSlots, new QueueSql.SlotLocks(new Long[] { 42L, 43L, 44L })))
			.extracting("released").containsExactly(2);
	}

	/**
	 * A queue limited per key: a claim with grants of 3 tokens of key a and 1 of b takes three of a,
	 * b's head and the message without a key, none of c (no tokens), and says that it left none; with
	 * a limit of one in flight per key as well, it takes one of a, and the two tokens a message
	 * without a slot did not use are left. A claim whose grants allow nothing keyed says so in its
	 * next_due row.
	 */
	@Test
	void claimFairTakesAtMostEachKeysGrantOfAQueueLimitedPerKey() throws SQLException {
		this.jdbc.update("INSERT INTO pgqueue.queue (name, concurrency_key, rate_limit_per_key_permits, "
				+ "rate_limit_per_key_period_ms) VALUES ('paced', 'tenant', 5, 1000)");
		List<Long> a = new java.util.ArrayList<>();
		for (int i = 0; i < 10; i++) {
			a.add(send("paced", i, SendOptions.builder().header("tenant", "a")));
		}
		long b1 = send("paced", 100, SendOptions.builder().header("tenant", "b"));
		send("paced", 101, SendOptions.builder().header("tenant", "b"));
		long c1 = send("paced", 200, SendOptions.builder().header("tenant", "c"));
		long none = send("paced", 300);

		Session first = newSession();
		List<Map<String, Object>> rows = fair(first, "paced", 10, "", "{\"claim\": 1, \"left\": {\"a\": 3, \"b\": 1}}");
		assertThat(rows).filteredOn((row) -> "claimed".equals(row.get("kind"))).extracting("id")
			.containsExactlyInAnyOrder(a.get(0), a.get(1), a.get(2), b1, none);
		assertThat(TokenBucket.KeyGrants.left((String) rows.get(0).get("grants_left")))
			.containsOnly(entry("a", 0), entry("b", 0));
		assertThat(lockable(this.namespace, c1)).as("c had no tokens").isTrue();
		assertThat(lockable(this.namespace, a.get(3))).as("a's fourth is left alone").isTrue();

		this.jdbc.update("UPDATE pgqueue.queue SET max_in_flight_per_key = 1 WHERE name = 'paced'");
		Session second = newSession();
		rows = fair(second, "paced", 10, "", "{\"claim\": 1, \"left\": {\"a\": 3}}");
		assertThat(rows).filteredOn((row) -> "claimed".equals(row.get("kind"))).extracting("id")
			.as("one slot of a: one message").containsExactly(a.get(3));
		assertThat(TokenBucket.KeyGrants.left((String) rows.get(0).get("grants_left")))
			.as("a message that got no slot used no token").containsOnly(entry("a", 2));

		Session third = newSession();
		List<Map<String, Object>> nothing = rows(third.connection(), this.sql.claimFair.variant(10, false),
				new QueueSql.SessionFairClaim("paced", true, null, this.namespace, third.key(), this.payloadLimit, "", null,
						null, null, "{\"claim\": 7, \"left\": {\"c\": 0}}"));
		assertThat(nothing).extracting("kind", "grants_left").containsExactly(tuple("next_due", "{\"c\": 0}"));
	}

	private List<Map<String, Object>> fair(Session session, String queue, int batch, String afterKey, String grants)
			throws SQLException {
		return rows(session.connection(), this.sql.claimFair.variant(batch, false), new QueueSql.SessionFairClaim(queue,
				true, null, this.namespace, session.key(), this.payloadLimit, afterKey, null, null, null, grants))
			.stream()
			.filter((row) -> !"next_due".equals(row.get("kind")))
			.toList();
	}

	private List<Map<String, Object>> fair(Session session, String queue, int batch, String afterKey)
			throws SQLException {
		return rows(session.connection(), this.sql.claimFair.variant(batch, false), new QueueSql.SessionFairClaim(queue,
				true, null, this.namespace, session.key(), this.payloadLimit, afterKey, null, null, null, null))
			.stream()
			.filter((row) -> !"next_due".equals(row.get("kind")))
			.toList();
	}

	// claim_walk

	@Test
	void claimWalkThatComesBackShortSaysWhenTheNextMessageIsDue() throws SQLException {
		long ready = send("short", 1);
		send("short", 2, SendOptions.builder().delay(HOUR));
		long head = send("short-grouped", 3, SendOptions.builder().group("g"));
		send("short-grouped", 4, SendOptions.builder().group("g"));
		Session session = newSession();

		List<Map<String, Object>> rows = claim(this.sql.claimWalk, session, "short", 4, true, null, null, 16);

		assertThat(rows).extracting("id", "kind").containsExactly(tuple(ready, "claimed"), tuple(null, "next_due"));
		assertThat((Long) rows.get(1).get("next_due_ms")).isBetween(HOUR.toMillis() - 60_000, HOUR.toMillis());
		assertThat(claim(this.sql.claimWalk, newSession(), "short-grouped", 4, true, null, null, 16)).as("a group's next message becomes its head once the claimed one is done: no next_due")
			.extracting("id", "kind").containsExactly(tuple(head, "claimed"));
	}

	@Test
	void claimWalk() throws SQLException {
		this.jdbc.update("INSERT INTO pgqueue.queue (name, max_attempts, backoff_initial_ms, backoff_multiplier, "
				+ "backoff_max_ms, dead_letter_queue) VALUES ('walk', 7, 50, 3.0, 9000, 'walk-dead')");
		long later = send("walk", 1, SendOptions.builder().priority(1));
		long first = send("walk", 2);
		long urgent = send("walk", 3, SendOptions.builder().priority(-1));
		long own = send("walk", 4, SendOptions.builder().maxAttempts(9).header("h", "v"));
		long large = send("walk", Map.of("text", "longer than the limit"));
		long delayed = send("walk", 5, SendOptions.builder().delay(HOUR));
		this.jdbc.update("UPDATE pgqueue.message SET attempts = 2, last_error = 'boom' WHERE id = ?", first);
		Map<Long, String> versions = versions("walk");
		Session session = newSession();

		List<Map<String, Object>> rows = claim(this.sql.claimWalk, session, "walk", 4, true, null, null, 16);

		assertThat(rows).extracting("id", "kind").containsExactly(tuple(urgent, "claimed"), tuple(first, "claimed"),
				tuple(own, "claimed"), tuple(large, "claimed"));
		assertThat(rows.get(0)).contains(entry("unlocked", null), entry("in_turn", false), entry("payload", "3"),
				entry("headers", "{}"), entry("priority", -1), entry("attempt", 1), entry("max_attempts", 7),
				entry("dead_letter_queue", "walk-dead"), entry("backoff_initial_ms", 50L), entry("backoff_multiplier", 3.0),
				entry("backoff_max_ms", 9000L), entry("last_error", null), entry("payload_bytes", 1),
				entry("place_priority", -1), entry("place_visible_at_us", message(urgent).get("visible_at_us")),
				entry("next_due_ms", null));
		assertThat(rows.get(0).get("created_at")).isNotNull();
		assertThat(rows.get(1)).as("the attempt is the stored attempts + 1, the last error is read")
			.contains(entry("attempt", 3), entry("last_error", "boom"), entry("place_priority", 0));
		assertThat(rows.get(2)).as("the message's own max attempts first")
			.contains(entry("max_attempts", 9), entry("headers", "{\"h\": \"v\"}"));
		assertThat(rows.get(3)).as("a payload above the limit is not sent; its size says why")
			.contains(entry("payload", null),
					entry("payload_bytes", (int) Db.queryForLong("SELECT octet_length(payload::text) FROM pgqueue.message "
							+ "WHERE id = ?", large)));
		assertThat((Integer) rows.get(3).get("payload_bytes")).isGreaterThan(16);

		assertThat(versions("walk")).as("rows no transaction locked are claimed as they are, nothing written")
			.isEqualTo(versions);
		assertThat(lockedIds(session.pid(), this.namespace)).containsExactly(first, urgent, own, large);
		assertThat(holding(session.key())).as("in the order handed out").containsExactly(urgent, first, own, large);
		assertThat(this.jdbc.queryForObject("SELECT queue FROM pgqueue.holding WHERE session = ?", String.class,
				session.key())).as("with their queue").isEqualTo("walk");
		assertThat(List.of(later, delayed)).allSatisfy((id) -> assertThat(lockable(this.namespace, id)).isTrue());
	}

	@Test
	void claimWalkCommonCases() throws SQLException {
		claimsInBatchOrder((session, queue, batch, filter) -> claim(this.sql.claimWalk, session, queue, batch, true,
				filter, null, this.payloadLimit));
	}

	@Test
	void claimWalkRewritesOnlyRowsATransactionLocked() throws SQLException {
		long untouched = send("rewrite", 1);
		long locked = send("rewrite", 2);
		Connection other = this.connections.open();
		other.setAutoCommit(false);
		execute(other, "SELECT id FROM pgqueue.message WHERE id = " + locked + " FOR UPDATE");
		other.commit();
		String untouchedVersion = (String) message(untouched).get("xmin");
		Session session = newSession();

		List<Map<String, Object>> rows = claim(this.sql.claimWalk, session, "rewrite", 10, true, null, null,
				this.payloadLimit);

		assertThat(rows).extracting("id", "kind", "attempt")
			.containsExactly(tuple(untouched, "claimed", 1), tuple(locked, "claimed", 1), tuple(null, "next_due", null));
		assertThat(message(untouched)).contains(entry("xmin", untouchedVersion), entry("claimed_at", null));
		assertThat(message(locked)).as("its xmax is not 0: updated, its attempt not counted")
			.contains(entry("attempts", 0), entry("claim_open", false));
		assertThat(message(locked).get("claimed_at")).isNotNull();
		assertThat(holding(session.key())).containsExactly(untouched, locked);
	}

	@Test
	void claimWalkTakesSuspectsAloneInTurn() throws SQLException {
		long fresh = send("suspects", 1);
		long other = send("suspects", 2);
		long open = send("suspects", 3);
		long listed = send("suspects", 4);
		makeSuspects(open, listed);
		long deadRow = this.jdbc.queryForObject("SELECT session FROM pgqueue.holding WHERE pid = 0", Long.class);
		Session session = newSession();

		List<Map<String, Object>> rows = claim(this.sql.claimWalk, session, "suspects", 10, true, null, null,
				this.payloadLimit);

		// The rows left have no message columns: they sort last.
		assertThat(rows).extracting("id", "kind", "in_turn", "unlocked", "attempt").containsExactly(
				tuple(open, "claimed", true, null, 3), tuple(listed, "claimed", true, null, 2),
				tuple(fresh, "left", null, true, null), tuple(other, "left", null, true, null));
		assertThat(rows).extracting("place_priority").containsExactly(0, 0, null, null);
		assertThat(message(open)).as("the dead holder's attempt is counted, the claim closed")
			.contains(entry("attempts", 2), entry("claim_open", false));
		assertThat(message(listed)).contains(entry("attempts", 1), entry("claim_open", false));
		assertThat(message(fresh)).contains(entry("attempts", 0), entry("claimed_at", null));
		assertThat(lockedIds(session.pid(), this.namespace)).as("the rows left are unlocked at once")
			.containsExactly(open, listed);
		assertThat(holding(session.key())).containsExactly(open, listed);
		assertThat(this.jdbc.queryForObject("SELECT in_turn FROM pgqueue.holding WHERE session = ?", Boolean.class,
				session.key())).isTrue();
		assertThat(holding(deadRow)).as("taken out of the dead session's row").isEmpty();
	}

	@Test
	void claimWalkCountsWhatDeadSessionsListedOfItsQueueOrWithoutAQueue() throws SQLException {
		long ofItsQueue = send("listed", 1);
		long withoutAQueue = send("listed", 2);
		long ofAnotherQueue = send("listed", 3);
		this.jdbc.update("INSERT INTO pgqueue.holding (pid, queue, ids) VALUES (0, 'listed', ARRAY[?]::bigint[])",
				ofItsQueue);
		// Of a session of an earlier version, which did not write the queue.
		this.jdbc.update("INSERT INTO pgqueue.holding (pid, ids) VALUES (0, ARRAY[?]::bigint[])", withoutAQueue);
		// A dead session's claim on another queue listed it; it was moved here since.
		this.jdbc.update("INSERT INTO pgqueue.holding (pid, queue, ids) VALUES (0, 'before-the-move', ARRAY[?]::bigint[])",
				ofAnotherQueue);
		Session session = newSession();

		List<Map<String, Object>> rows = claim(this.sql.claimWalk, session, "listed", 10, true, null, null,
				this.payloadLimit);

		assertThat(rows).extracting("id", "kind", "in_turn", "attempt").containsExactly(
				tuple(ofItsQueue, "claimed", true, 2), tuple(withoutAQueue, "claimed", true, 2),
				tuple(ofAnotherQueue, "left", null, null));
	}

	@Test
	void claimWalkReadsTheHoldingRowsOfItsQueueOnly() throws SQLException {
		long mine = send("own-rows", 1);
		this.jdbc.update("INSERT INTO pgqueue.holding (pid, queue, ids) "
				+ "SELECT 0, 'elsewhere-' || i, ARRAY[i]::bigint[] FROM generate_series(1, 200) AS i");
		Session session = newSession();
		session.connection().setAutoCommit(false); // the counts are reported between transactions
		long before = holdingRowsRead(session.connection());

		List<Map<String, Object>> rows = claim(this.sql.claimWalk, session, "own-rows", 10, false, null, null,
				this.payloadLimit);

		assertThat(rows).extracting("id").contains(mine);
		assertThat(holdingRowsRead(session.connection()) - before).as("not the 200 rows of sessions on other queues")
			.isLessThan(10);
	}

	/**
	 * One session claims from five queues in turn, with each claim that lists what it took: its
	 * holding row names the queue of the claim that wrote it last, so that the claims of that queue
	 * count the session's lost attempt if it dies.
	 */
	@Test
	void everyClaimListsWhatItTookUnderItsQueue() throws Exception {
		this.jdbc.update("INSERT INTO pgqueue.queue (name, concurrency_key) VALUES ('listed-fair', 'tenant')");
		long walked = send("listed-walk", 1);
		long walkedAfter = send("listed-after", 1);
		long scanned = send("listed-scan", 1);
		long fair = send("listed-fair", 1, SendOptions.builder().header("tenant", "a"));
		long byId = send("listed-by-id", 1);
		Session session = newSession();
		Map<String, Callable<List<Map<String, Object>>>> claims = new java.util.LinkedHashMap<>();
		claims.put("listed-walk", () -> claim(this.sql.claimWalk, session, "listed-walk", 10, true, null, null,
				this.payloadLimit));
		claims.put("listed-after", () -> claim(this.sql.claimWalkAfter, session, "listed-after", 10, true, null,
				new Cursor(0, 0, 0), this.payloadLimit));
		claims.put("listed-scan", () -> claim(this.sql.claimScanningHeads, session, "listed-scan", 10, true, null, null,
				this.payloadLimit));
		claims.put("listed-fair", () -> fair(session, "listed-fair", 10, ""));
		claims.put("listed-by-id", () -> claimOne(this.sql.claimById, session, "listed-by-id", byId));
		Map<String, Long> sent = Map.of("listed-walk", walked, "listed-after", walkedAfter, "listed-scan", scanned,
				"listed-fair", fair, "listed-by-id", byId);

		for (Map.Entry<String, Callable<List<Map<String, Object>>>> claim : claims.entrySet()) {
			assertThat(claim.getValue().call()).as(claim.getKey()).extracting("id").contains(sent.get(claim.getKey()));
			assertThat(holding(session.key())).as(claim.getKey()).containsExactly(sent.get(claim.getKey()));
			assertThat(this.jdbc.queryForObject("SELECT queue FROM pgqueue.holding WHERE session = ?", String.class,
					session.key())).as(claim.getKey()).isEqualTo(claim.getKey());
			// What an ack leaves: nothing listed, the queue as it was.
			execute(session.connection(), "SELECT pg_advisory_unlock_all()");
			execute(session.connection(), "UPDATE pgqueue.holding SET ids = '{}' WHERE session = " + session.key());
		}
	}

	@Test
	void claimWalkWithoutSuspectsLeavesThemUnlocked() throws SQLException {
		long fresh = send("no-suspects", 1);
		long open = send("no-suspects", 2);
		long listed = send("no-suspects", 3);
		long listedWithoutAQueue = send("no-suspects", 4);
		makeSuspects(open, listed);
		// Of a session of an earlier version, which did not write the queue.
		this.jdbc.update("INSERT INTO pgqueue.holding (pid, ids) VALUES (0, ARRAY[?]::bigint[])", listedWithoutAQueue);
		Session session = newSession();

		List<Map<String, Object>> rows = claim(this.sql.claimWalk, session, "no-suspects", 10, false, null, null,
				this.payloadLimit);

		assertThat(rows).extracting("id", "kind", "in_turn")
			.containsExactly(tuple(fresh, "claimed", false), tuple(null, "next_due", null));
		assertThat(lockedIds(session.pid(), this.namespace)).containsExactly(fresh);
		assertThat(message(open)).contains(entry("attempts", 1), entry("claim_open", true));
		assertThat(message(listed)).contains(entry("attempts", 0));
		assertThat(message(listedWithoutAQueue)).contains(entry("attempts", 0));
	}

	@Test
	void claimWalkFindsARowCompletedAfterItsSnapshotGone() throws Exception {
		long deleted = send("gone", 1);
		long kept = send("gone", 2);
		// A transaction deletes the first row and has not committed when the claim starts: the
		// claim's snapshot shows the row and its key is free, so the claim locks it, and its re-check
		// (an UPDATE, the row's xmax being set) waits for the delete.
		Connection deleter = this.connections.open();
		deleter.setAutoCommit(false);
		execute(deleter, "DELETE FROM pgqueue.message WHERE id = " + deleted);
		Session session = newSession();

		CompletableFuture<List<Map<String, Object>>> claim = CompletableFuture.supplyAsync(() -> {
			try {
				return claim(this.sql.claimWalk, session, "gone", 2, true, null, null, this.payloadLimit);
			}
			catch (SQLException ex) {
				throw new IllegalStateException(ex);
			}
		});
		await().atMost(Duration.ofSeconds(20)).until(() -> Db.queryForLong("SELECT count(*) FROM pg_stat_activity "
				+ "WHERE pid = ? AND wait_event_type = 'Lock'", session.pid()) == 1);
		deleter.commit();
		List<Map<String, Object>> rows = claim.get(20, TimeUnit.SECONDS);

		assertThat(rows).extracting("id", "kind", "unlocked")
			.containsExactlyInAnyOrder(tuple(deleted, "gone", true), tuple(kept, "claimed", null));
		assertThat(rows).filteredOn("kind", "gone").extracting("place_priority").containsExactly(0);
		assertThat(lockedIds(session.pid(), this.namespace)).containsExactly(kept);
		assertThat(holding(session.key())).containsExactly(kept);
	}

	// claim_walk_after

	@Test
	void claimWalkAfter() throws SQLException {
		long first = send("after", 1);
		long second = send("after", 2);
		long third = send("after", 3);
		long fourth = send("after", 4);
		long higher = send("after", 5, SendOptions.builder().priority(3));
		Cursor cursor = Cursor.at(second);
		Session session = newSession();

		List<Map<String, Object>> rows = claim(this.sql.claimWalkAfter, session, "after", 10, true, null, cursor,
				this.payloadLimit);

		assertThat(rows).as("after the cursor, in its priority only").extracting("id", "kind")
			.containsExactly(tuple(third, "claimed"), tuple(fourth, "claimed"));
		assertThat(rows.get(1)).contains(entry("place_priority", 0),
				entry("place_visible_at_us", message(fourth).get("visible_at_us")));
		assertThat(lockedIds(session.pid(), this.namespace)).containsExactly(third, fourth);
		assertThat(holding(session.key())).containsExactly(third, fourth);
		assertThat(List.of(first, second, higher)).allSatisfy((id) -> assertThat(lockable(this.namespace, id)).isTrue());

		// A message of a lower priority, even one not due yet: the cursor's priority is not the first.
		send("after", 6, SendOptions.builder().priority(-1).delay(HOUR));
		Session another = newSession();
		assertThat(claim(this.sql.claimWalkAfter, another, "after", 10, true, null, Cursor.at(first),
				this.payloadLimit)).as("nothing, and no next due time: the caller claims from the head")
			.extracting("kind", "next_due_ms").containsExactly(tuple("next_due", null));
		assertThat(lockedIds(another.pid(), this.namespace)).isEmpty();
	}

	@Test
	void claimWalkAfterCommonCases() throws SQLException {
		// A cursor before every message of priority 0, where the common cases' messages are.
		claimsInBatchOrder((session, queue, batch, filter) -> claim(this.sql.claimWalkAfter, session, queue, batch,
				true, filter, new Cursor(0, 0, 0), this.payloadLimit));
	}

	// claim_scanning_heads

	@Test
	void claimScanningHeadsThatComesBackShortSaysWhenTheNextMessageIsDueWhereTheQueueHasNoGroups() throws SQLException {
		long ready = send("scan-short", 1);
		send("scan-short", 2, SendOptions.builder().delay(HOUR));
		long plain = send("scan-short-grouped", 3);
		send("scan-short-grouped", 4, SendOptions.builder().group("g").delay(HOUR));

		List<Map<String, Object>> rows = claim(this.sql.claimScanningHeads, newSession(), "scan-short", 4, true, null,
				null, 16);

		assertThat(rows).extracting("id", "kind").containsExactly(tuple(ready, "claimed"), tuple(null, "next_due"));
		assertThat((Long) rows.get(1).get("next_due_ms")).isBetween(HOUR.toMillis() - 60_000, HOUR.toMillis());
		assertThat(claim(this.sql.claimScanningHeads, newSession(), "scan-short-grouped", 4, true, null, null, 16))
			.as("a queue with a group: no next_due").extracting("id", "kind").containsExactly(tuple(plain, "claimed"));
	}

	@Test
	void claimScanningHeads() throws SQLException {
		long groupHead = send("scan", 1, SendOptions.builder().group("a"));
		long groupSecond = send("scan", 2, SendOptions.builder().group("a"));
		long plain = send("scan", 3);
		long otherHead = send("scan", 4, SendOptions.builder().group("b"));
		long plainLater = send("scan", 5);
		Session session = newSession();

		List<Map<String, Object>> rows = claim(this.sql.claimScanningHeads, session, "scan", 3, true, null, null,
				this.payloadLimit);

		// The walk takes the ungrouped rows (two), the scanned heads fill what is left of the batch
		// (one, the first in the claim index), and the result is in the claim index's order.
		assertThat(rows).extracting("id", "kind").containsExactly(tuple(groupHead, "claimed"), tuple(plain, "claimed"),
				tuple(plainLater, "claimed"));
		assertThat(lockedIds(session.pid(), this.namespace)).containsExactly(groupHead, plain, plainLater);
		assertThat(holding(session.key())).containsExactly(groupHead, plain, plainLater);
		assertThat(List.of(groupSecond, otherHead)).allSatisfy((id) -> assertThat(lockable(this.namespace, id)).isTrue());
	}

	@Test
	void claimScanningHeadsCommonCases() throws SQLException {
		claimsInBatchOrder((session, queue, batch, filter) -> claim(this.sql.claimScanningHeads, session, queue, batch,
				true, filter, null, this.payloadLimit));
	}

	// claim_by_id

	@Test
	void claimById() throws SQLException {
		long target = send("byid", 1, SendOptions.builder().maxAttempts(3));
		long held = send("byid", 2);
		long head = send("byid", 3, SendOptions.builder().group("g"));
		long behindHead = send("byid", 4, SendOptions.builder().group("g"));
		long delayed = send("byid", 5, SendOptions.builder().delay(HOUR));
		long elsewhere = send("byid-other", 6);
		long paused = send("byid-paused", 7);
		this.jdbc.update("INSERT INTO pgqueue.queue (name, paused) VALUES ('byid-paused', true)");
		Session holder = newSession();
		execute(holder.connection(), "SELECT pg_advisory_lock(" + this.namespace + ", " + held + ")");
		Session session = newSession();

		List<Map<String, Object>> rows = claimOne(this.sql.claimById, session, "byid", target);

		assertThat(rows).hasSize(1);
		assertThat(rows.get(0)).contains(entry("id", target), entry("kind", "claimed"), entry("unlocked", null),
				entry("in_turn", false), entry("payload", "1"), entry("attempt", 1), entry("max_attempts", 3),
				entry("dead_letter_queue", null), entry("backoff_initial_ms", 1000L), entry("backoff_multiplier", 2.0),
				entry("backoff_max_ms", 600000L), entry("payload_bytes", 1));
		assertThat(message(target)).contains(entry("attempts", 0), entry("claim_open", false));
		assertThat(message(target).get("claimed_at")).isNotNull();
		assertThat(lockedIds(session.pid(), this.namespace)).containsExactly(target);
		assertThat(holding(session.key())).containsExactly(target);

		Session another = newSession();
		assertThat(claimOne(this.sql.claimById, another, "byid", held)).as("held by another session").isEmpty();
		assertThat(claimOne(this.sql.claimById, another, "byid", behindHead)).as("not its group's head").isEmpty();
		assertThat(claimOne(this.sql.claimById, another, "byid", delayed)).as("not visible").isEmpty();
		assertThat(claimOne(this.sql.claimById, another, "byid", elsewhere)).as("of another queue").isEmpty();
		assertThat(claimOne(this.sql.claimById, another, "byid-paused", paused)).as("its queue paused").isEmpty();
		assertThat(lockedIds(another.pid(), this.namespace)).as("no lock kept on a row refused").isEmpty();
		assertThat(holding(another.key())).isEmpty();
		assertThat(claimOne(this.sql.claimById, another, "byid", head)).extracting("id", "kind")
			.containsExactly(tuple(head, "claimed"));
	}

	@Test
	void claimByIdCountsASuspectsLostAttemptAndLeavesItsClaimOpen() throws SQLException {
		long open = send("byid-suspect", 1);
		long listed = send("byid-suspect", 2);
		makeSuspects(open, listed);
		long deadRow = this.jdbc.queryForObject("SELECT session FROM pgqueue.holding WHERE pid = 0", Long.class);
		Session session = newSession();

		assertThat(claimOne(this.sql.claimById, session, "byid-suspect", open)).extracting("id", "kind", "attempt")
			.containsExactly(tuple(open, "claimed", 3));
		assertThat(message(open)).contains(entry("attempts", 2), entry("claim_open", true));
		assertThat(holding(session.key())).as("a suspect is not listed: its open claim counts it").isEmpty();

		Session another = newSession();
		assertThat(claimOne(this.sql.claimById, another, "byid-suspect", listed)).extracting("id", "kind", "attempt")
			.containsExactly(tuple(listed, "claimed", 2));
		assertThat(message(listed)).contains(entry("attempts", 1), entry("claim_open", true));
		assertThat(holding(deadRow)).as("taken out of the dead session's row").isEmpty();
		assertThat(lockedIds(another.pid(), this.namespace)).containsExactly(listed);
	}

	// claim_suspect

	@Test
	void claimSuspect() throws SQLException {
		long fresh = send("suspect", 1);
		long aborted = send("suspect", 2);
		long open = send("suspect", 3);
		long listed = send("suspect", 4);
		long heldOpen = send("suspect", 5);
		makeSuspects(open, listed);
		this.jdbc.update("UPDATE pgqueue.message SET claim_open = true, claimed_at = now() WHERE id = ?", heldOpen);
		// What a transactional consumer that died leaves: the row lock of a transaction that aborted.
		Connection consumer = this.connections.open();
		consumer.setAutoCommit(false);
		execute(consumer, "SELECT id FROM pgqueue.message WHERE id = " + aborted + " FOR UPDATE");
		consumer.rollback();
		Session holder = newSession();
		execute(holder.connection(), "SELECT pg_advisory_lock(" + this.namespace + ", " + heldOpen + ")");
		Session session = newSession();

		assertThat(claimOne(this.sql.claimSuspect, session, "suspect", fresh)).as("not a suspect").isEmpty();
		assertThat(claimOne(this.sql.claimSuspect, session, "suspect", heldOpen)).as("held").isEmpty();
		assertThat(lockedIds(session.pid(), this.namespace)).isEmpty();

		List<Map<String, Object>> rows = claimOne(this.sql.claimSuspect, session, "suspect", aborted);

		assertThat(rows).extracting("id", "kind", "in_turn", "attempt", "payload")
			.containsExactly(tuple(aborted, "claimed", false, 2, "2"));
		assertThat(message(aborted)).as("the aborted consumer's attempt counted, this one's left open")
			.contains(entry("attempts", 1), entry("claim_open", true));
		assertThat(lockedIds(session.pid(), this.namespace)).containsExactly(aborted);
		assertThat(holding(session.key())).isEmpty();

		Session second = newSession();
		assertThat(claimOne(this.sql.claimSuspect, second, "suspect", open)).extracting("id", "attempt")
			.containsExactly(tuple(open, 3));
		assertThat(message(open)).contains(entry("attempts", 2), entry("claim_open", true));
		Session third = newSession();
		assertThat(claimOne(this.sql.claimSuspect, third, "suspect", listed)).extracting("id", "attempt")
			.containsExactly(tuple(listed, 2));
		assertThat(message(listed)).contains(entry("attempts", 1), entry("claim_open", true));
		assertThat(this.jdbc.queryForObject("SELECT ids::text FROM pgqueue.holding WHERE pid = 0", String.class))
			.isEqualTo("{}");
	}

	// ack

	@Test
	void ackKeeping() throws SQLException {
		Db.jdbc().update("INSERT INTO pgqueue.queue (name, retention_ms, deduplication_window_ms) VALUES ('kept', 86400000, 60000)");
		long keyed = send("kept", 1, SendOptions.builder().deduplicationKey("k"));
		long plain = send("kept", 2);
		send("other", 3);
		Session session = newSession();
		assertThat(claim(this.sql.claimWalk, session, "kept", 2, true, null, null, this.payloadLimit))
			.extracting("keeps").containsOnly(true);
		assertThat(claim(this.sql.claimWalk, newSession(), "other", 1, true, null, null, this.payloadLimit))
			.extracting("keeps").as("an undeclared queue keeps nothing").containsOnly(false);

		assertThat(rows(session.connection(), this.sql.ackKeeping, ack(session, "kept", session.pid(), keyed, plain)))
			.extracting("id").containsExactlyInAnyOrder(keyed, plain);
		assertThat(Db.jdbc().queryForList("SELECT id, outcome, attempts FROM pgqueue.archive ORDER BY id"))
			.containsExactly(Map.of("id", keyed, "outcome", "acked", "attempts", 1),
					Map.of("id", plain, "outcome", "acked", "attempts", 1));
		assertThat(Db.jdbc().queryForList("SELECT key, message_id FROM pgqueue.deduplication_key WHERE kept_until > now()"))
			.containsExactly(Map.of("key", "k", "message_id", keyed));
	}

	@Test
	void ack() throws SQLException {
		long first = send("ack", 1);
		long second = send("ack", 2);
		long third = send("ack", 3);
		Session session = newSession();
		claim(this.sql.claimWalk, session, "ack", 3, true, null, null, this.payloadLimit);

		assertThat(rows(session.connection(), this.sql.ack, ack(session, "ack", -1, second)))
			.as("the pid guard: another backend's lease").isEmpty();
		assertThat(rows(session.connection(), this.sql.ack, ack(session, "elsewhere", session.pid(), second)))
			.as("the queue guard: a row moved while held").isEmpty();
		assertThat(Db.count("ack")).isEqualTo(3);

		session.connection().setAutoCommit(false);
		assertThat(rows(session.connection(), this.sql.ack, ack(session, "ack", session.pid(), second)))
			.containsExactly(Map.of("id", second, "unlocked", true));
		assertThat(lockable(this.namespace, second)).as("its key held by the transaction until it commits").isFalse();
		session.connection().commit();
		session.connection().setAutoCommit(true);
		assertThat(lockable(this.namespace, second)).isTrue();
		assertThat(message(second)).isNull();
		assertThat(lockedIds(session.pid(), this.namespace)).containsExactly(first, third);
		assertThat(holding(session.key())).as("the others keep their order").containsExactly(first, third);

		assertThat(rows(session.connection(), this.sql.ack, ack(session, "ack", session.pid(), third, first)))
			.extracting("id").containsExactlyInAnyOrder(first, third);
		assertThat(Db.count("ack")).isZero();
		assertThat(lockedIds(session.pid(), this.namespace)).isEmpty();
		assertThat(holding(session.key())).isEmpty();
	}

	// retry

	@Test
	void retry() throws SQLException {
		long first = send("retry", 1);
		long second = send("retry", 2);
		long third = send("retry", 3);
		this.jdbc.update("UPDATE pgqueue.message SET last_error = 'before', attempts = 1 WHERE id = ?", third);
		Session session = newSession();
		claim(this.sql.claimWalk, session, "retry", 3, true, null, null, this.payloadLimit);
		this.jdbc.update("UPDATE pgqueue.message SET claim_open = true WHERE id = ?", first);
		Connection listener = this.connections.listen(this.sql.channel());

		assertThat(rows(session.connection(), this.sql.retry, retry(session, -1, new Long[] { first },
				new Long[] { 0L }, new String[] { "boom" }))).as("the pid guard").isEmpty();
		List<Map<String, Object>> rows = rows(session.connection(), this.sql.retry, retry(session, session.pid(),
				new Long[] { first, third }, new Long[] { 0L, 60_000L }, new String[] { "boom", null }));

		assertThat(rows).extracting("id", "unlocked").containsExactlyInAnyOrder(tuple(first, true), tuple(third, true));
		assertThat(message(first)).contains(entry("attempts", 1), entry("last_error", "boom"), entry("visible", true),
				entry("claim_open", false));
		assertThat(message(third)).as("a null error keeps the last one")
			.contains(entry("attempts", 2), entry("last_error", "before"), entry("visible", false));
		assertThat((Double) message(third).get("visible_in_s")).isCloseTo(60.0, within(5.0));
		assertThat(message(second)).contains(entry("attempts", 0), entry("last_error", null));
		assertThat(lockedIds(session.pid(), this.namespace)).containsExactly(second);
		assertThat(holding(session.key())).containsExactly(second);
		assertThat(notifications(listener, this.sql.channel())).as("one per queue, folded at commit")
			.containsExactly("retry");
	}

	// dead_letter

	@Test
	void deadLetter() throws SQLException {
		long grouped = send("dl", 1, SendOptions.builder().group("g").deduplicationKey("k").header("x", "1"));
		long plain = send("dl", 2);
		long deadAlready = send("dl", 3, SendOptions.builder().header("pgqueue-dead-lettered-from", "origin"));
		long ownQueue = send("dl", 4);
		this.jdbc.update("UPDATE pgqueue.message SET attempts = 2 WHERE id = ?", grouped);
		Session session = newSession();
		claim(this.sql.claimWalk, session, "dl", 4, true, null, null, this.payloadLimit);
		Connection listener = this.connections.listen(this.sql.channel());
		Long[] ids = { grouped, plain, deadAlready, ownQueue };
		String[] queues = { "dl.dlq", "other-dlq", "dl.dlq", "dl" };
		String[] errors = { "e1", "e2", "e3", "e4" };

		assertThat(rows(session.connection(), this.sql.deadLetter,
				new QueueSql.DeadLetter(ids, queues, errors, -1, this.namespace, session.key(), this.sql.channel())))
			.as("the pid guard").isEmpty();
		List<Map<String, Object>> rows = rows(session.connection(), this.sql.deadLetter, new QueueSql.DeadLetter(ids,
				queues, errors, session.pid(), this.namespace, session.key(), this.sql.channel()));

		assertThat(rows).extracting("id", "unlocked").containsExactlyInAnyOrder(tuple(grouped, true),
				tuple(plain, true), tuple(deadAlready, true), tuple(ownQueue, true));
		assertThat(message(grouped)).contains(entry("queue", "dl.dlq"), entry("attempts", 0), entry("visible", true),
				entry("last_error", "e1"), entry("claim_open", false), entry("deduplication_key", null),
				entry("group_key", null), entry("headers", "{\"x\": \"1\", \"pgqueue-group\": \"g\", "
						+ "\"pgqueue-dead-lettered-from\": \"dl\", \"pgqueue-dead-lettered-attempts\": \"3\"}"));
		assertThat(message(plain)).contains(entry("queue", "other-dlq"), entry("headers",
				"{\"pgqueue-dead-lettered-from\": \"dl\", \"pgqueue-dead-lettered-attempts\": \"1\"}"));
		assertThat(message(deadAlready)).as("a dead letter is parked, not moved on")
			.contains(entry("queue", "dl"), entry("attempts", 1), entry("parked", true), entry("last_error", "e3"),
					entry("headers", "{\"pgqueue-dead-lettered-from\": \"origin\"}"));
		assertThat(message(ownQueue)).as("so is a message whose dead-letter queue is its own")
			.contains(entry("queue", "dl"), entry("attempts", 1), entry("parked", true), entry("last_error", "e4"));
		assertThat(lockedIds(session.pid(), this.namespace)).isEmpty();
		assertThat(holding(session.key())).isEmpty();
		assertThat(notifications(listener, this.sql.channel())).as("the dead-letter queues moved to, not a parked one's")
			.containsExactlyInAnyOrder("dl.dlq", "other-dlq");
	}

	// release

	@Test
	void release() throws SQLException {
		long first = send("release", 1);
		long second = send("release", 2);
		long third = send("release", 3);
		long deleted = send("release", 4);
		Session session = newSession();
		claim(this.sql.claimWalk, session, "release", 4, true, null, null, this.payloadLimit);
		this.jdbc.update("UPDATE pgqueue.message SET claim_open = true WHERE id = ?", second);
		this.jdbc.update("DELETE FROM pgqueue.message WHERE id = ?", deleted); // by hand, under the lock

		assertThat(rows(session.connection(), this.sql.release, release(session, false, first)))
			.containsExactly(Map.of("id", first));
		assertThat(message(first)).as("not handed to a handler: no attempt counted").contains(entry("attempts", 0));
		assertThat(lockedIds(session.pid(), this.namespace)).containsExactly(second, third, deleted);
		assertThat(holding(session.key())).containsExactly(second, third, deleted);

		assertThat(rows(session.connection(), this.sql.release, release(session, true, second)))
			.containsExactly(Map.of("id", second));
		assertThat(message(second)).contains(entry("attempts", 1), entry("claim_open", false), entry("visible", true));

		assertThat(rows(session.connection(), this.sql.release, release(session, true, third, deleted, 999_999L)))
			.as("a row gone is unlocked and returned; an id neither here nor held is not")
			.extracting("id").containsExactlyInAnyOrder(third, deleted);
		assertThat(lockedIds(session.pid(), this.namespace)).isEmpty();
		assertThat(holding(session.key())).isEmpty();
	}

	// queues_with_visible_messages

	@Test
	void queuesWithVisibleMessages() throws SQLException {
		send("visible-top", 1, SendOptions.builder().priority(0));
		// Visible only at a lower priority, behind a delayed message of the top one.
		send("visible-below", 1, SendOptions.builder().priority(0).delay(HOUR));
		send("visible-below", 2, SendOptions.builder().priority(5));
		// Held by a live session: still visible (only a claim can tell).
		long held = send("visible-held", 1);
		Session session = newSession();
		assertThat(claimOne(this.sql.claimById, session, "visible-held", held)).hasSize(1);
		send("visible-delayed", 1, SendOptions.builder().delay(HOUR));
		send("visible-paused", 1);
		this.jdbc.update("INSERT INTO pgqueue.queue (name, paused) VALUES ('visible-paused', true)");
		send("visible-unasked", 1);

		Connection connection = this.connections.open();
		List<Map<String, Object>> rows = rows(connection, this.sql.queuesWithVisibleMessages, new QueueSql.Queues(
				new String[] { "visible-top", "visible-below", "visible-held", "visible-delayed", "visible-paused",
						"visible-empty" }));

		assertThat(rows).extracting((row) -> row.get("queue"))
			.containsExactlyInAnyOrder("visible-top", "visible-below", "visible-held");
	}

	// The common cases of the three batch claims

	/**
	 * From the head in claim-index order up to the batch size, the header filter, FIFO heads only,
	 * the next due time, a paused queue; every message is of priority 0, for the claim that goes on
	 * from a cursor there. Each case has its queue and its session.
	 */
	private void claimsInBatchOrder(Claimer claim) throws SQLException {
		// From the head, up to the batch size.
		List<Long> ordered = List.of(send("order", 1), send("order", 2), send("order", 3), send("order", 4));
		Session session = newSession();
		assertThat(claim.claim(session, "order", 3, null)).as("batch").extracting("id", "kind").containsExactly(
				tuple(ordered.get(0), "claimed"), tuple(ordered.get(1), "claimed"), tuple(ordered.get(2), "claimed"));
		assertThat(lockedIds(session.pid(), this.namespace)).containsExactlyElementsOf(ordered.subList(0, 3));
		assertThat(holding(session.key())).containsExactlyElementsOf(ordered.subList(0, 3));
		assertThat(lockable(this.namespace, ordered.get(3))).isTrue();

		// The filter: only messages whose headers contain one of its documents.
		long a = send("filter", 1, SendOptions.builder().header("type", "a"));
		send("filter", 2, SendOptions.builder().header("type", "b"));
		send("filter", 3);
		long aWithMore = send("filter", 4, SendOptions.builder().header("type", "a").header("x", "1"));
		session = newSession();
		assertThat(claim.claim(session, "filter", 10, "type = 'a'")).as("filter").extracting("id", "kind")
			.filteredOn((row) -> row.toList().get(1).equals("claimed"))
			.containsExactly(tuple(a, "claimed"), tuple(aWithMore, "claimed"));
		assertThat(lockedIds(session.pid(), this.namespace)).as("nothing else locked").containsExactly(a, aWithMore);

		// FIFO groups: a group's head only, none while the head is not due.
		long head = send("fifo", 1, SendOptions.builder().group("g1"));
		send("fifo", 2, SendOptions.builder().group("g1"));
		send("fifo", 3, SendOptions.builder().group("g2").delay(HOUR));
		send("fifo", 4, SendOptions.builder().group("g2"));
		long plain = send("fifo", 5);
		long otherHead = send("fifo", 6, SendOptions.builder().group("g3"));
		session = newSession();
		assertThat(claim.claim(session, "fifo", 10, null)).as("fifo").extracting("id", "kind")
			.containsExactly(tuple(head, "claimed"), tuple(plain, "claimed"), tuple(otherHead, "claimed"));
		assertThat(lockedIds(session.pid(), this.namespace)).containsExactly(head, plain, otherHead);

		// Nothing visible, a delayed message: when it is due. A visible message another session
		// holds counts as nothing visible.
		send("due", 1, SendOptions.builder().delay(HOUR));
		long held = send("due", 2);
		Session holder = newSession();
		execute(holder.connection(), "SELECT pg_advisory_lock(" + this.namespace + ", " + held + ")");
		session = newSession();
		List<Map<String, Object>> due = claim.claim(session, "due", 10, null);
		assertThat(due).as("next due").hasSize(1);
		assertThat(due.get(0)).contains(entry("id", null), entry("kind", "next_due"));
		assertThat((Long) due.get(0).get("next_due_ms")).isBetween(HOUR.toMillis() - 60_000, HOUR.toMillis());
		assertThat(lockedIds(session.pid(), this.namespace)).isEmpty();
		assertThat(holding(session.key())).isEmpty();
		assertThat(claim.claim(session, "empty", 10, null)).as("an empty queue: nothing due")
			.extracting("kind", "next_due_ms").containsExactly(tuple("next_due", null));

		// A paused queue: nothing, not even when its delayed message is due.
		send("paused", 1);
		send("paused", 2, SendOptions.builder().delay(HOUR));
		this.jdbc.update("INSERT INTO pgqueue.queue (name, paused) VALUES ('paused', true)");
		session = newSession();
		assertThat(claim.claim(session, "paused", 10, null)).as("paused").extracting("kind", "next_due_ms").containsExactly(tuple("next_due", null));
		assertThat(lockedIds(session.pid(), this.namespace)).isEmpty();
	}

	@FunctionalInterface
	private interface Claimer {

		List<Map<String, Object>> claim(Session session, String queue, int batch, String filter) throws SQLException;

	}

	// Helpers

	/** A consumer session: its connection, its holding row's key and its backend pid. */
	private record Session(Connection connection, long key, int pid) {
	}

	/** A place in the claim index, as a claim's place_* columns give it. */
	private record Cursor(int priority, long visibleAtUs, long id) {

		static Cursor at(long id) {
			Map<String, Object> message = message(id);
			return new Cursor((Integer) message.get("priority"), (Long) message.get("visible_at_us"), id);
		}

	}

	/** Opens a session as {@link ConsumerSession} does: planner settings, then open_session. */
	private Session newSession() throws SQLException {
		Connection connection = this.connections.open();
		execute(connection, QueueSql.INDEX_PLANS);
		Map<String, Object> row = rows(connection, this.sql.openSession, new QueueSql.None()).get(0);
		return new Session(connection, (Long) row.get("session"), (Integer) row.get("pid"));
	}

	private List<Map<String, Object>> claim(NamedStatement<SessionClaim> statement, Session session, String queue,
			int batch, boolean mayTakeSuspects, String filter, Cursor after, int payloadLimit) throws SQLException {
		HeaderFilter parsed = HeaderFilter.parse(filter);
		return rows(session.connection(), statement.variant(batch, parsed != null),
				new SessionClaim(queue, mayTakeSuspects, (parsed != null) ? parsed.documents() : null, this.namespace,
						session.key(), payloadLimit, (after != null) ? after.priority() : null,
						(after != null) ? after.visibleAtUs() : null, (after != null) ? after.id() : null));
	}

	private List<Map<String, Object>> claimOne(NamedStatement<QueueSql.ClaimOne> statement, Session session,
			String queue, long id) throws SQLException {
		return rows(session.connection(), statement,
				new QueueSql.ClaimOne(id, queue, this.namespace, session.key(), this.payloadLimit));
	}

	private QueueSql.Ack ack(Session session, String queue, int pid, Long... ids) {
		return new QueueSql.Ack(ids, queue, pid, this.namespace, session.key());
	}

	private QueueSql.Retry retry(Session session, int pid, Long[] ids, Long[] delays, String[] errors) {
		return new QueueSql.Retry(ids, delays, errors, pid, this.namespace, session.key(), this.sql.channel());
	}

	private QueueSql.Release release(Session session, boolean attemptEnded, Long... ids) {
		return new QueueSql.Release(attemptEnded, ids, this.namespace, session.key());
	}

	/**
	 * What a consumer that died leaves: {@code open}, with one attempt counted and its claim open
	 * (claimed alone as a suspect, not completed), and {@code listed}, listed by the holding row of
	 * a dead session (pid 0 is no backend's) that claimed it from its queue.
	 */
	private void makeSuspects(long open, long listed) {
		this.jdbc.update("UPDATE pgqueue.message SET attempts = 1, claim_open = true, claimed_at = now() WHERE id = ?",
				open);
		this.jdbc.update("INSERT INTO pgqueue.holding (pid, queue, ids) "
				+ "SELECT 0, queue, ARRAY[id] FROM pgqueue.message WHERE id = ?", listed);
	}

	/** The row version (xmin) of each message of {@code queue}: a row written since has another. */
	private Map<Long, String> versions(String queue) {
		Map<Long, String> versions = new java.util.TreeMap<>();
		this.jdbc.query("SELECT id, xmin::text FROM pgqueue.message WHERE queue = ?",
				(java.sql.ResultSet rs) -> {
					versions.put(rs.getLong(1), rs.getString(2));
				}, queue);
		return versions;
	}

	private long send(String queue, Object payload) {
		return this.template.send(queue, payload);
	}

	private long send(String queue, Object payload, SendOptions.Builder options) {
		return this.template.send(queue, payload, options.build());
	}

}
