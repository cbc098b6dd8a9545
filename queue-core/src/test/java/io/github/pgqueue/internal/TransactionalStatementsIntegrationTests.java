package io.github.pgqueue.internal;

import java.sql.Connection;
import java.sql.SQLException;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;

import io.github.pgqueue.ContextInternals;
import io.github.pgqueue.QueueTemplate;
import io.github.pgqueue.SendOptions;
import io.github.pgqueue.internal.QueueSql.TransactionalClaim;
import io.github.pgqueue.testing.Db;
import io.github.pgqueue.testing.EmbeddedPostgres;
import io.github.pgqueue.testing.PostgresExtension;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;

import org.springframework.jdbc.core.JdbcTemplate;

import static io.github.pgqueue.internal.StatementConnections.execute;
import static io.github.pgqueue.internal.StatementConnections.holdingRowsRead;
import static io.github.pgqueue.internal.StatementConnections.lockable;
import static io.github.pgqueue.internal.StatementConnections.lockedIds;
import static io.github.pgqueue.internal.StatementConnections.message;
import static io.github.pgqueue.internal.StatementConnections.notifications;
import static io.github.pgqueue.internal.StatementConnections.pid;
import static io.github.pgqueue.internal.StatementConnections.rowLocked;
import static io.github.pgqueue.internal.StatementConnections.rows;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.entry;
import static org.assertj.core.api.Assertions.tuple;
import static org.assertj.core.api.Assertions.within;

/**
 * Each statement of {@code transactional.sql}, run by its name on PostgreSQL as a transactional
 * consumer runs it: inside a transaction of a plain connection, with the consumer's planner
 * settings, bound from its parameter record. Each test checks the columns the statement returns,
 * by name, and what it changed: nothing written by a claim, the transaction-level advisory locks
 * and row locks it holds until the transaction ends, the rows its completions change. A test
 * method is named after its statement (checked by {@link StatementResourcesTests}); tests of
 * further cases of a statement start with that name.
 * <p>
 * The claims' common cases (from the head in batch order, the header filter, FIFO heads, the
 * next due time, a paused queue) are written once and run for each of the four claims.
 */
@ExtendWith(PostgresExtension.class)
class TransactionalStatementsIntegrationTests {

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

	// claim_walk

	/**
	 * As session.sql's claim_fair: 50 messages of tenant a sent first, then two of b and one of c; a
	 * claim of 4 walks two of a and takes the heads of c and b; a claim after key a in another
	 * transaction wraps around to c and b, and skips what the first one holds; a claim after a cursor
	 * takes heads and walk after it, and says which rows heads took.
	 */
	@Test
	void claimFair() throws SQLException {
		this.jdbc.update("INSERT INTO pgqueue.queue (name, concurrency_key) VALUES ('fair', 'tenant')");
		List<Long> a = new ArrayList<>();
		for (int i = 0; i < 50; i++) {
			a.add(send("fair", i, SendOptions.builder().header("tenant", "a")));
		}
		long b1 = send("fair", 100, SendOptions.builder().header("tenant", "b"));
		long b2 = send("fair", 101, SendOptions.builder().header("tenant", "b"));
		long c1 = send("fair", 200, SendOptions.builder().header("tenant", "c"));

		Connection first = newTransaction();
		List<Map<String, Object>> rows = fair(first, "fair", 4, "");
		assertThat(rows).extracting("id", "kind").containsExactlyInAnyOrder(tuple(a.get(0), "claimed"),
				tuple(b1, "claimed"), tuple(c1, "claimed"), tuple(a.get(1), "claimed"));
		assertThat(rows).extracting("next_key").containsOnly("b");
		assertThat(rows).extracting("id", "head").containsExactlyInAnyOrder(tuple(a.get(0), false), tuple(b1, true),
				tuple(c1, true), tuple(a.get(1), false));

		Connection second = newTransaction();
		assertThat(fair(second, "fair", 2, "a")).as("after key a: c (held), then b, then the queue's head past what is held")
			.extracting("id").containsExactlyInAnyOrder(b2, a.get(2));

		// A second queue: a0..a9, b0, a10..a19, b1, and a cursor at a10.
		this.jdbc.update("INSERT INTO pgqueue.queue (name, concurrency_key) VALUES ('fair-after', 'tenant')");
		List<Long> a2 = new ArrayList<>();
		for (int i = 0; i < 20; i++) {
			if (i == 10) {
				send("fair-after", 100, SendOptions.builder().header("tenant", "b"));
			}
			a2.add(send("fair-after", i, SendOptions.builder().header("tenant", "a")));
		}
		long b1After = send("fair-after", 101, SendOptions.builder().header("tenant", "b"));
		long cursorAt = Db.queryForLong("SELECT (extract(epoch FROM visible_at) * 1000000)::bigint FROM pgqueue.message "
				+ "WHERE id = " + a2.get(10));
		Connection third = newTransaction();
		assertThat(fair(third, "fair-after", 3, "", 0, cursorAt, a2.get(10)))
			.as("after a cursor at a10: the walk after it, and b's head after it, not b0")
			.extracting("id", "head", "walk_full")
			.containsExactlyInAnyOrder(tuple(a2.get(11), false, true), tuple(a2.get(12), false, true),
					tuple(b1After, true, true));
	}

	/**
	 * As session.sql's: a claim with grants of 3 tokens of key a and 1 of b takes three of a, b's
	 * head and the message without a key, none of c; with a limit of one in flight per key as well,
	 * another transaction's claim takes one of a and leaves two of its tokens.
	 */
	@Test
	void claimFairTakesAtMostEachKeysGrantOfAQueueLimitedPerKey() throws SQLException {
		this.jdbc.update("INSERT INTO pgqueue.queue (name, concurrency_key, rate_limit_per_key_permits, "
				+ "rate_limit_per_key_period_ms) VALUES ('paced', 'tenant', 5, 1000)");
		List<Long> a = new ArrayList<>();
		for (int i = 0; i < 10; i++) {
			a.add(send("paced", i, SendOptions.builder().header("tenant", "a")));
		}
		long b1 = send("paced", 100, SendOptions.builder().header("tenant", "b"));
		send("paced", 101, SendOptions.builder().header("tenant", "b"));
		send("paced", 200, SendOptions.builder().header("tenant", "c"));
		long none = send("paced", 300);

		Connection first = newTransaction();
		List<Map<String, Object>> rows = fair(first, "paced", 10, "", "{\"claim\": 1, \"left\": {\"a\": 3, \"b\": 1}}");
		assertThat(rows).extracting("id", "kind").containsExactlyInAnyOrder(tuple(a.get(0), "claimed"),
				tuple(a.get(1), "claimed"), tuple(a.get(2), "claimed"), tuple(b1, "claimed"), tuple(none, "claimed"));
		assertThat(rows).extracting("grants_left").containsOnly("{\"a\": 0, \"b\": 0}");
		for (long id : a.subList(3, 10)) {
			assertThat(lockable(this.namespace, id)).as("a message of a key without tokens is not locked: %s", id)
				.isTrue();
		}

		this.jdbc.update("UPDATE pgqueue.queue SET max_in_flight_per_key = 1 WHERE name = 'paced'");
		Connection second = newTransaction();
		rows = fair(second, "paced", 10, "", "{\"claim\": 1, \"left\": {\"a\": 3}}");
		assertThat(rows).extracting("id").as("one slot of a: one message").containsExactly(a.get(3));
		assertThat(rows).extracting("grants_left").containsOnly("{\"a\": 2}");
	}

	private List<Map<String, Object>> fair(Connection transaction, String queue, int batch, String afterKey,
			String grants) throws SQLException {
		return rows(transaction, this.sql.transactionalClaimFair.variant(batch, false),
				new QueueSql.TransactionalFairClaim(queue, null, this.namespace, this.payloadLimit, afterKey, null, null,
						null, grants))
			.stream()
			.filter((row) -> !"next_due".equals(row.get("kind")))
			.toList();
	}

	private List<Map<String, Object>> fair(Connection transaction, String queue, int batch, String afterKey)
			throws SQLException {
		return fair(transaction, queue, batch, afterKey, null, null, null);
	}

	private List<Map<String, Object>> fair(Connection transaction, String queue, int batch, String afterKey,
			Integer afterPriority, Long afterVisibleAtUs, Long afterId) throws SQLException {
		return rows(transaction, this.sql.transactionalClaimFair.variant(batch, false),
				new QueueSql.TransactionalFairClaim(queue, null, this.namespace, this.payloadLimit, afterKey,
						afterPriority, afterVisibleAtUs, afterId, null))
			.stream()
			.filter((row) -> !"next_due".equals(row.get("kind")))
			.toList();
	}

	@Test
	void claimWalkThatComesBackShortSaysWhenTheNextMessageIsDue() throws SQLException {
		long ready = send("short", 1);
		send("short", 2, SendOptions.builder().delay(HOUR));
		long head = send("short-grouped", 3, SendOptions.builder().group("g"));
		send("short-grouped", 4, SendOptions.builder().group("g"));
		Connection transaction = newTransaction();

		List<Map<String, Object>> rows = claim(this.sql.transactionalClaimWalk, transaction, "short", 4, null, null, 16);

		assertThat(rows).extracting("id", "kind").containsExactly(tuple(ready, "claimed"), tuple(null, "next_due"));
		assertThat((Long) rows.get(1).get("next_due_ms")).isBetween(HOUR.toMillis() - 60_000, HOUR.toMillis());
		assertThat(claim(this.sql.transactionalClaimWalk, newTransaction(), "short-grouped", 4, null, null, 16)).as("a group's next message becomes its head once the claimed one is done: no next_due")
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
		Connection transaction = newTransaction();

		List<Map<String, Object>> rows = claim(this.sql.transactionalClaimWalk, transaction, "walk", 4, null, null, 16);

		assertThat(rows).extracting("id", "kind").containsExactly(tuple(urgent, "claimed"), tuple(first, "claimed"),
				tuple(own, "claimed"), tuple(large, "claimed"));
		assertThat(rows.get(0)).contains(entry("payload", "3"), entry("headers", "{}"), entry("priority", -1),
				entry("attempt", 1), entry("max_attempts", 7), entry("dead_letter_queue", "walk-dead"),
				entry("backoff_initial_ms", 50L), entry("backoff_multiplier", 3.0), entry("backoff_max_ms", 9000L),
				entry("last_error", null), entry("payload_bytes", 1),
				entry("visible_at_us", message(urgent).get("visible_at_us")), entry("groups_scanned", null),
				entry("next_due_ms", null));
		assertThat(rows.get(0).get("created_at")).isNotNull();
		assertThat(rows.get(1)).as("the attempt shown is the stored attempts + 1")
			.contains(entry("attempt", 3), entry("last_error", "boom"));
		assertThat(rows.get(2)).contains(entry("max_attempts", 9), entry("headers", "{\"h\": \"v\"}"));
		assertThat(rows.get(3)).as("a payload above the limit is not sent").contains(entry("payload", null));
		assertThat((Integer) rows.get(3).get("payload_bytes")).isGreaterThan(16);

		int pid = pid(transaction);
		assertThat(lockedIds(pid, this.namespace)).containsExactly(first, urgent, own, large);
		assertThat(List.of(first, urgent, own, large)).as("row locks on the rows returned")
			.allSatisfy((id) -> assertThat(rowLocked(id)).isTrue());
		assertThat(List.of(later, delayed)).allSatisfy((id) -> {
			assertThat(rowLocked(id)).isFalse();
			assertThat(lockable(this.namespace, id)).isTrue();
		});
		transaction.commit();
		assertThat(versions("walk")).as("nothing written at claim").isEqualTo(versions);
		assertThat(lockedIds(pid, this.namespace)).as("the locks end with the transaction").isEmpty();
		assertThat(rowLocked(first)).isFalse();
	}

	@Test
	void claimWalkReadsTheHoldingRowsOfItsQueueOnly() throws SQLException {
		long mine = send("own-rows", 1);
		this.jdbc.update("INSERT INTO pgqueue.holding (pid, queue, ids) "
				+ "SELECT 0, 'elsewhere-' || i, ARRAY[i]::bigint[] FROM generate_series(1, 200) AS i");
		Connection transaction = newTransaction();
		long before = holdingRowsRead(transaction);

		List<Map<String, Object>> rows = claim(this.sql.transactionalClaimWalk, transaction, "own-rows", 10, null, null,
				this.payloadLimit);

		assertThat(rows).extracting("id").contains(mine);
		assertThat(holdingRowsRead(transaction) - before).as("not the 200 rows of sessions on other queues")
			.isLessThan(10);
	}

	@Test
	void claimWalkCommonCases() throws SQLException {
		claimsInBatchOrder((transaction, queue, batch, filter) -> claim(this.sql.transactionalClaimWalk, transaction,
				queue, batch, filter, null, this.payloadLimit));
	}

	@Test
	void claimWalkSkipsRowsOfTransactionsInProgressWithoutTryingTheirKeys() throws SQLException {
		long locked = send("busy", 1);
		long updated = send("busy", 2);
		long free = send("busy", 3);
		Connection other = newTransaction();
		execute(other, "SELECT id FROM pgqueue.message WHERE id = " + locked + " FOR UPDATE");
		execute(other, "UPDATE pgqueue.message SET last_error = 'x' WHERE id = " + updated);
		Connection transaction = newTransaction();

		assertThat(claim(this.sql.transactionalClaimWalk, transaction, "busy", 10, null, null, this.payloadLimit))
			.extracting("id", "kind").containsExactly(tuple(free, "claimed"), tuple(null, "next_due"));
		assertThat(lockedIds(pid(transaction), this.namespace)).containsExactly(free);
	}

	@Test
	void claimWalkReturnsSuspectsByIdBesideTheClaimedRows() throws SQLException {
		long fresh = send("suspects", 1);
		long aborted = send("suspects", 2);
		long open = send("suspects", 3);
		long listed = send("suspects", 4);
		long listedWithoutAQueue = send("suspects", 5);
		long listedElsewhere = send("suspects", 6);
		// What consumers that died leave: the row lock of an aborted transaction, a claim open
		// (claimed alone by a session, not completed), a dead session's holding row (pid 0): of this
		// queue, without a queue (of an earlier version), of another queue (moved here since).
		Connection consumer = newTransaction();
		execute(consumer, "SELECT id FROM pgqueue.message WHERE id = " + aborted + " FOR UPDATE");
		consumer.rollback();
		this.jdbc.update("UPDATE pgqueue.message SET attempts = 1, claim_open = true, claimed_at = now() WHERE id = ?",
				open);
		this.jdbc.update("INSERT INTO pgqueue.holding (pid, queue, ids) VALUES (0, 'suspects', ARRAY[?]::bigint[])",
				listed);
		this.jdbc.update("INSERT INTO pgqueue.holding (pid, ids) VALUES (0, ARRAY[?]::bigint[])", listedWithoutAQueue);
		this.jdbc.update("INSERT INTO pgqueue.holding (pid, queue, ids) VALUES (0, 'elsewhere', ARRAY[?]::bigint[])",
				listedElsewhere);
		Map<Long, String> versions = versions("suspects");
		Connection transaction = newTransaction();

		List<Map<String, Object>> rows = claim(this.sql.transactionalClaimWalk, transaction, "suspects", 10, null, null,
				this.payloadLimit);

		assertThat(rows).extracting("id", "kind").containsExactlyInAnyOrder(tuple(fresh, "claimed"),
				tuple(aborted, "suspect"), tuple(open, "suspect"), tuple(listed, "suspect"),
				tuple(listedWithoutAQueue, "suspect"), tuple(listedElsewhere, "claimed"));
		assertThat(rows).filteredOn("kind", "suspect").extracting("payload", "attempt").containsOnly(tuple(null, null));
		assertThat(lockedIds(pid(transaction), this.namespace)).as("keys held for claim_suspect's session")
			.containsExactly(fresh, aborted, open, listed, listedWithoutAQueue, listedElsewhere);
		assertThat(rowLocked(fresh)).isTrue();
		assertThat(List.of(aborted, open, listed, listedWithoutAQueue)).as("a suspect is not row-locked")
			.allSatisfy((id) -> assertThat(rowLocked(id)).isFalse());
		transaction.commit();
		assertThat(versions("suspects")).as("their attempts are counted by claim_suspect, not here").isEqualTo(versions);
	}

	@Test
	void claimWalkReturnsTheEndOfAWindowItCouldNotFill() throws SQLException {
		List<Long> group = this.template.sendBatch("window", java.util.Collections.nCopies(1 + 1000, 1),
				SendOptions.builder().group("g").build());
		Connection holder = this.connections.open();
		execute(holder, "SELECT pg_advisory_lock(" + this.namespace + ", " + group.get(0) + ")");
		Connection transaction = newTransaction();

		// Batch 1: a window of 1001 rows; the head is held, the 1000 behind it are no heads.
		List<Map<String, Object>> rows = claim(this.sql.transactionalClaimWalk, transaction, "window", 1, null, null,
				this.payloadLimit);

		long last = group.get(group.size() - 1);
		assertThat(rows).extracting("id", "kind", "priority", "visible_at_us", "groups_scanned", "next_due_ms")
			.containsExactly(tuple(last, "window_end", 0, message(last).get("visible_at_us"), null, null),
					tuple(null, "next_due", null, null, null, null));
		assertThat(lockedIds(pid(transaction), this.namespace)).as("the window's last row is not taken").isEmpty();
	}

	// claim_walk_after

	@Test
	void claimWalkAfter() throws SQLException {
		long first = send("after", 1);
		long second = send("after", 2);
		long third = send("after", 3);
		long fourth = send("after", 4);
		long higher = send("after", 5, SendOptions.builder().priority(3));
		Connection transaction = newTransaction();

		List<Map<String, Object>> rows = claim(this.sql.transactionalClaimWalkAfter, transaction, "after", 10, null,
				Cursor.at(second), this.payloadLimit);

		assertThat(rows).as("after the cursor, in its priority only").extracting("id", "kind")
			.containsExactly(tuple(third, "claimed"), tuple(fourth, "claimed"));
		assertThat(lockedIds(pid(transaction), this.namespace)).containsExactly(third, fourth);
		assertThat(List.of(first, second, higher)).allSatisfy((id) -> assertThat(rowLocked(id)).isFalse());

		send("after", 6, SendOptions.builder().priority(-1).delay(HOUR));
		Connection another = newTransaction();
		assertThat(claim(this.sql.transactionalClaimWalkAfter, another, "after", 10, null, Cursor.at(first),
				this.payloadLimit)).as("a lower priority exists: nothing, not even a next due time")
			.extracting("kind", "next_due_ms").containsExactly(tuple("next_due", null));
		assertThat(lockedIds(pid(another), this.namespace)).isEmpty();
	}

	@Test
	void claimWalkAfterCommonCases() throws SQLException {
		claimsInBatchOrder((transaction, queue, batch, filter) -> claim(this.sql.transactionalClaimWalkAfter,
				transaction, queue, batch, filter, new Cursor(0, 0, 0), this.payloadLimit));
	}

	// claim_scanning_heads

	@Test
	void claimScanningHeads() throws SQLException {
		long groupHead = send("scan", 1, SendOptions.builder().group("a"));
		long groupSecond = send("scan", 2, SendOptions.builder().group("a"));
		long plain = send("scan", 3);
		long otherHead = send("scan", 4, SendOptions.builder().group("b"));
		long plainLater = send("scan", 5);
		Connection transaction = newTransaction();

		List<Map<String, Object>> rows = claim(this.sql.transactionalClaimScanningHeads, transaction, "scan", 3, null,
				null, this.payloadLimit);

		// The walk takes the ungrouped rows (two), the heads fill what is left of the batch (one,
		// the first in the claim index), and the result is in the claim index's order.
		assertThat(rows).extracting("id", "kind").containsExactly(tuple(groupHead, "claimed"), tuple(plain, "claimed"),
				tuple(plainLater, "claimed"));
		assertThat(lockedIds(pid(transaction), this.namespace)).containsExactly(groupHead, plain, plainLater);
		assertThat(List.of(groupSecond, otherHead)).allSatisfy((id) -> assertThat(rowLocked(id)).isFalse());
	}

	@Test
	void claimScanningHeadsCountsTheGroupsScannedAtTheEndOfAWindow() throws SQLException {
		List<Long> group = this.template.sendBatch("scan-window", java.util.Collections.nCopies(1 + 1000, 1),
				SendOptions.builder().group("g").build());
		send("scan-window", 2, SendOptions.builder().group("h").delay(HOUR));
		Connection holder = this.connections.open();
		execute(holder, "SELECT pg_advisory_lock(" + this.namespace + ", " + group.get(0) + ")");
		Connection transaction = newTransaction();

		List<Map<String, Object>> rows = claim(this.sql.transactionalClaimScanningHeads, transaction, "scan-window", 1,
				null, null, this.payloadLimit);

		long last = group.get(group.size() - 1);
		assertThat(rows).extracting("id", "kind", "groups_scanned")
			.containsExactly(tuple(last, "window_end", 2), tuple(null, "next_due", null));
		assertThat((Long) rows.get(1).get("next_due_ms")).isBetween(HOUR.toMillis() - 60_000, HOUR.toMillis());
		assertThat(lockedIds(pid(transaction), this.namespace)).isEmpty();
	}

	@Test
	void claimScanningHeadsCommonCases() throws SQLException {
		claimsInBatchOrder((transaction, queue, batch, filter) -> claim(this.sql.transactionalClaimScanningHeads,
				transaction, queue, batch, filter, null, this.payloadLimit));
	}

	// claim_scanning_heads_after

	@Test
	void claimScanningHeadsAfter() throws SQLException {
		long earlyHead = send("scan-after", 0, SendOptions.builder().group("b"));
		long first = send("scan-after", 1);
		long second = send("scan-after", 2);
		long head = send("scan-after", 3, SendOptions.builder().group("a"));
		long behindHead = send("scan-after", 4, SendOptions.builder().group("a"));
		long third = send("scan-after", 5);
		long higher = send("scan-after", 6, SendOptions.builder().priority(3));
		Connection transaction = newTransaction();

		List<Map<String, Object>> rows = claim(this.sql.transactionalClaimScanningHeadsAfter, transaction, "scan-after",
				10, null, Cursor.at(first), this.payloadLimit);

		// The cursor bounds the walk; the heads, found through the group index, are candidates
		// wherever they are in the claim index, before the cursor too.
		assertThat(rows).as("the walk after the cursor, the heads, in the cursor's priority")
			.extracting("id", "kind").containsExactly(tuple(earlyHead, "claimed"), tuple(second, "claimed"),
					tuple(head, "claimed"), tuple(third, "claimed"));
		assertThat(lockedIds(pid(transaction), this.namespace)).containsExactly(earlyHead, second, head, third);
		assertThat(List.of(first, behindHead, higher)).allSatisfy((id) -> assertThat(rowLocked(id)).isFalse());

		send("scan-after", 7, SendOptions.builder().priority(-1).delay(HOUR));
		Connection another = newTransaction();
		assertThat(claim(this.sql.transactionalClaimScanningHeadsAfter, another, "scan-after", 10, null,
				Cursor.at(first), this.payloadLimit)).as("a lower priority exists")
			.extracting("kind", "next_due_ms").containsExactly(tuple("next_due", null));
		assertThat(lockedIds(pid(another), this.namespace)).isEmpty();
	}

	@Test
	void claimScanningHeadsAfterCommonCases() throws SQLException {
		claimsInBatchOrder((transaction, queue, batch, filter) -> claim(this.sql.transactionalClaimScanningHeadsAfter,
				transaction, queue, batch, filter, new Cursor(0, 0, 0), this.payloadLimit));
	}

	// ack

	@Test
	void ack() throws SQLException {
		long first = send("ack", 1);
		long second = send("ack", 2);
		long elsewhere = send("ack-other", 3);
		Connection transaction = newTransaction();
		claim(this.sql.transactionalClaimWalk, transaction, "ack", 10, null, null, this.payloadLimit);

		List<Map<String, Object>> rows = rows(transaction, this.sql.transactionalAck,
				new QueueSql.TransactionalAck(new Long[] { first, second, elsewhere }, "ack"));

		assertThat(rows).as("the queue guard leaves another queue's message")
			.extracting("id").containsExactlyInAnyOrder(first, second);
		assertThat(message(first)).as("deleted only when the transaction commits").isNotNull();
		transaction.commit();
		assertThat(message(first)).isNull();
		assertThat(message(second)).isNull();
		assertThat(message(elsewhere)).isNotNull();
		assertThat(lockedIds(pid(transaction), this.namespace)).isEmpty();
	}

	@Test
	void ackKeeping() throws SQLException {
		Db.jdbc().update("INSERT INTO pgqueue.queue (name, retention_ms, deduplication_window_ms) VALUES ('kept', 86400000, 60000)");
		long keyed = send("kept", 1, SendOptions.builder().deduplicationKey("k"));
		long plain = send("kept", 2);
		Connection transaction = newTransaction();
		assertThat(claim(this.sql.transactionalClaimWalk, transaction, "kept", 10, null, null, this.payloadLimit))
			.filteredOn((row) -> row.get("kind").equals("claimed")).extracting("keeps").containsOnly(true);

		assertThat(rows(transaction, this.sql.transactionalAckKeeping,
				new QueueSql.TransactionalAck(new Long[] { keyed, plain }, "kept"))).extracting("id")
			.containsExactlyInAnyOrder(keyed, plain);
		assertThat(Db.jdbc().queryForObject("SELECT count(*) FROM pgqueue.archive", Long.class))
			.as("archived only when the transaction commits").isZero();
		transaction.commit();
		assertThat(Db.jdbc().queryForList("SELECT id, attempts FROM pgqueue.archive ORDER BY id"))
			.as("the attempt that acked counted").containsExactly(Map.of("id", keyed, "attempts", 1), Map.of("id", plain, "attempts", 1));
		assertThat(Db.jdbc().queryForList("SELECT key FROM pgqueue.deduplication_key WHERE kept_until > now()", String.class))
			.containsExactly("k");
	}

	// retry

	@Test
	void retry() throws SQLException {
		long first = send("retry", 1);
		long second = send("retry", 2);
		long third = send("retry", 3);
		// The third is a suspect, its claim open, run alone as a consumer does: locked by lock_claimed.
		this.jdbc.update("UPDATE pgqueue.message SET last_error = 'before', attempts = 3, claim_open = true, "
				+ "claimed_at = now() WHERE id = ?", third);
		Connection transaction = newTransaction();
		assertThat(claim(this.sql.transactionalClaimWalk, transaction, "retry", 10, null, null, this.payloadLimit))
			.extracting("id", "kind")
			.containsExactly(tuple(first, "claimed"), tuple(second, "claimed"), tuple(third, "suspect"));
		rows(transaction, this.sql.lockClaimed, new QueueSql.LockClaimed(third, "retry", this.namespace));
		Connection listener = this.connections.listen(this.sql.channel());

		List<Map<String, Object>> rows = rows(transaction, this.sql.transactionalRetry,
				new QueueSql.TransactionalRetry(new Long[] { first, third }, new Integer[] { 1, 4 },
						new Long[] { 0L, 60_000L }, new String[] { "boom", null }, this.sql.channel()));

		assertThat(rows).extracting("id").containsExactlyInAnyOrder(first, third);
		assertThat(notifications(listener, this.sql.channel())).as("nothing before the commit").isEmpty();
		transaction.commit();
		assertThat(message(first)).as("the attempt's number is stored as given")
			.contains(entry("attempts", 1), entry("last_error", "boom"), entry("visible", true));
		assertThat(message(third)).as("a null error keeps the last one; the claim is closed")
			.contains(entry("attempts", 4), entry("last_error", "before"), entry("visible", false),
					entry("claim_open", false));
		assertThat((Double) message(third).get("visible_in_s")).isCloseTo(60.0, within(5.0));
		assertThat(message(second)).contains(entry("attempts", 0), entry("visible", true));
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
		Connection transaction = newTransaction();
		claim(this.sql.transactionalClaimWalk, transaction, "dl", 10, null, null, this.payloadLimit);
		Connection listener = this.connections.listen(this.sql.channel());

		List<Map<String, Object>> rows = rows(transaction, this.sql.transactionalDeadLetter,
				new QueueSql.TransactionalDeadLetter(new Long[] { grouped, plain, deadAlready, ownQueue },
						new Integer[] { 3, 1, 6, 2 }, new String[] { "dl.dlq", "other-dlq", "dl.dlq", "dl" },
						new String[] { "e1", "e2", "e3", "e4" }, this.sql.channel()));
		transaction.commit();

		assertThat(rows).extracting("id").containsExactlyInAnyOrder(grouped, plain, deadAlready, ownQueue);
		assertThat(message(grouped)).contains(entry("queue", "dl.dlq"), entry("attempts", 0), entry("visible", true),
				entry("last_error", "e1"), entry("claim_open", false), entry("deduplication_key", null),
				entry("group_key", null), entry("headers", "{\"x\": \"1\", \"pgqueue-group\": \"g\", "
						+ "\"pgqueue-dead-lettered-from\": \"dl\", \"pgqueue-dead-lettered-attempts\": \"3\"}"));
		assertThat(message(plain)).contains(entry("queue", "other-dlq"), entry("headers",
				"{\"pgqueue-dead-lettered-from\": \"dl\", \"pgqueue-dead-lettered-attempts\": \"1\"}"));
		assertThat(message(deadAlready)).as("a dead letter is parked with its attempts as given")
			.contains(entry("queue", "dl"), entry("attempts", 6), entry("parked", true), entry("last_error", "e3"),
					entry("headers", "{\"pgqueue-dead-lettered-from\": \"origin\"}"));
		assertThat(message(ownQueue)).as("so is a message whose dead-letter queue is its own")
			.contains(entry("queue", "dl"), entry("attempts", 2), entry("parked", true));
		assertThat(notifications(listener, this.sql.channel())).containsExactlyInAnyOrder("dl.dlq", "other-dlq");
	}

	// lock_claimed

	@Test
	void lockClaimed() throws SQLException {
		long id = send("lock", 1);
		Connection transaction = newTransaction();

		assertThat(rows(transaction, this.sql.lockClaimed, new QueueSql.LockClaimed(id, "other", this.namespace)))
			.as("the queue guard").isEmpty();
		assertThat(rowLocked(id)).isFalse();

		assertThat(rows(transaction, this.sql.lockClaimed, new QueueSql.LockClaimed(id, "lock", this.namespace)))
			.containsExactly(Map.of("id", id, "slotted", true));
		assertThat(rowLocked(id)).as("fenced from consumers that skip locked rows").isTrue();
		assertThat(lockedIds(pid(transaction), this.namespace)).as("no advisory lock: a session holds that").isEmpty();
		transaction.commit();
		assertThat(rowLocked(id)).isFalse();
	}

	/**
	 * A suspect of a queue with at most one message of a key in flight takes its key's slot with the
	 * row lock; while another transaction holds the slot, it is not slotted.
	 */
	@Test
	void lockClaimedTakesASlotOfALimitedKey() throws SQLException {
		this.jdbc.update("INSERT INTO pgqueue.queue (name, concurrency_key, max_in_flight_per_key) "
				+ "VALUES ('lock-limited', 'tenant', 1)");
		long first = send("lock-limited", 1, SendOptions.builder().header("tenant", "a"));
		long second = send("lock-limited", 2, SendOptions.builder().header("tenant", "a"));
		Connection holder = newTransaction();
		assertThat(rows(holder, this.sql.lockClaimed, new QueueSql.LockClaimed(first, "lock-limited", this.namespace)))
			.containsExactly(Map.of("id", first, "slotted", true));
		Connection waiter = newTransaction();
		assertThat(rows(waiter, this.sql.lockClaimed, new QueueSql.LockClaimed(second, "lock-limited", this.namespace)))
			.as("a's only slot is held").containsExactly(Map.of("id", second, "slotted", false));
		waiter.rollback();
		holder.commit();
		assertThat(rows(waiter, this.sql.lockClaimed, new QueueSql.LockClaimed(second, "lock-limited", this.namespace)))
			.as("given back at the holder's commit").containsExactly(Map.of("id", second, "slotted", true));
		waiter.commit();
	}

	// The common cases of the four claims

	/**
	 * From the head in claim-index order up to the batch size, the header filter, FIFO heads only,
	 * the next due time, a paused queue; every message is of priority 0, for the claims that go on
	 * from a cursor there. Each case has its queue and its transaction.
	 */
	private void claimsInBatchOrder(Claimer claim) throws SQLException {
		List<Long> ordered = List.of(send("order", 1), send("order", 2), send("order", 3), send("order", 4));
		Connection transaction = newTransaction();
		assertThat(claim.claim(transaction, "order", 3, null)).as("batch").extracting("id", "kind").containsExactly(
				tuple(ordered.get(0), "claimed"), tuple(ordered.get(1), "claimed"), tuple(ordered.get(2), "claimed"));
		assertThat(lockedIds(pid(transaction), this.namespace)).containsExactlyElementsOf(ordered.subList(0, 3));
		assertThat(rowLocked(ordered.get(3))).isFalse();

		long a = send("filter", 1, SendOptions.builder().header("type", "a"));
		send("filter", 2, SendOptions.builder().header("type", "b"));
		send("filter", 3);
		long aWithMore = send("filter", 4, SendOptions.builder().header("type", "a").header("x", "1"));
		transaction = newTransaction();
		assertThat(claim.claim(transaction, "filter", 10, "type = 'a'")).as("filter").extracting("id", "kind")
			.filteredOn((row) -> row.toList().get(1).equals("claimed"))
			.containsExactly(tuple(a, "claimed"), tuple(aWithMore, "claimed"));
		assertThat(lockedIds(pid(transaction), this.namespace)).as("nothing else locked").containsExactly(a, aWithMore);

		long head = send("fifo", 1, SendOptions.builder().group("g1"));
		send("fifo", 2, SendOptions.builder().group("g1"));
		send("fifo", 3, SendOptions.builder().group("g2").delay(HOUR));
		send("fifo", 4, SendOptions.builder().group("g2"));
		long plain = send("fifo", 5);
		long otherHead = send("fifo", 6, SendOptions.builder().group("g3"));
		transaction = newTransaction();
		assertThat(claim.claim(transaction, "fifo", 10, null)).as("fifo").extracting("id", "kind")
			.containsExactly(tuple(head, "claimed"), tuple(plain, "claimed"), tuple(otherHead, "claimed"));
		assertThat(lockedIds(pid(transaction), this.namespace)).containsExactly(head, plain, otherHead);

		send("due", 1, SendOptions.builder().delay(HOUR));
		long held = send("due", 2);
		Connection holder = this.connections.open();
		execute(holder, "SELECT pg_advisory_lock(" + this.namespace + ", " + held + ")");
		transaction = newTransaction();
		List<Map<String, Object>> due = claim.claim(transaction, "due", 10, null);
		assertThat(due).as("next due").extracting("id", "kind").containsExactly(tuple(null, "next_due"));
		assertThat((Long) due.get(0).get("next_due_ms")).isBetween(HOUR.toMillis() - 60_000, HOUR.toMillis());
		assertThat(lockedIds(pid(transaction), this.namespace)).isEmpty();
		assertThat(claim.claim(transaction, "empty", 10, null)).as("an empty queue: nothing due")
			.extracting("kind", "next_due_ms").containsExactly(tuple("next_due", null));

		send("paused", 1);
		send("paused", 2, SendOptions.builder().delay(HOUR));
		this.jdbc.update("INSERT INTO pgqueue.queue (name, paused) VALUES ('paused', true)");
		transaction = newTransaction();
		assertThat(claim.claim(transaction, "paused", 10, null)).as("paused")
			.extracting("kind", "next_due_ms").containsExactly(tuple("next_due", null));
		assertThat(lockedIds(pid(transaction), this.namespace)).isEmpty();
	}

	@FunctionalInterface
	private interface Claimer {

		List<Map<String, Object>> claim(Connection transaction, String queue, int batch, String filter)
				throws SQLException;

	}

	// Helpers

	/** A place in the claim index, as a claimed row's priority, visible_at_us and id give it. */
	private record Cursor(int priority, long visibleAtUs, long id) {

		static Cursor at(long id) {
			Map<String, Object> message = message(id);
			return new Cursor((Integer) message.get("priority"), (Long) message.get("visible_at_us"), id);
		}

	}

	/**
	 * A connection in a transaction, as a transactional consumer's: READ COMMITTED, and the
	 * planner settings its claims are planned with, for the transaction only.
	 */
	private Connection newTransaction() throws SQLException {
		Connection connection = this.connections.open();
		connection.setAutoCommit(false);
		execute(connection, QueueSql.READ_COMMITTED_TRANSACTION
				+ "; SET LOCAL enable_seqscan = off; SET LOCAL plan_cache_mode = force_generic_plan");
		return connection;
	}

	private List<Map<String, Object>> claim(NamedStatement<TransactionalClaim> statement, Connection transaction,
			String queue, int batch, String filter, Cursor after, int payloadLimit) throws SQLException {
		HeaderFilter parsed = HeaderFilter.parse(filter);
		return rows(transaction, statement.variant(batch, parsed != null),
				new TransactionalClaim(queue, (parsed != null) ? parsed.documents() : null, this.namespace, payloadLimit,
						(after != null) ? after.priority() : null, (after != null) ? after.visibleAtUs() : null,
						(after != null) ? after.id() : null));
	}

	/** The row version (xmin) of each message of {@code queue}: a row written since has another. */
	private Map<Long, String> versions(String queue) {
		Map<Long, String> versions = new java.util.TreeMap<>();
		List<Map<String, Object>> rows = new ArrayList<>(
				this.jdbc.queryForList("SELECT id, xmin::text AS xmin FROM pgqueue.message WHERE queue = ?", queue));
		rows.forEach((row) -> versions.put((Long) row.get("id"), (String) row.get("xmin")));
		return versions;
	}

	private long send(String queue, Object payload) {
		return this.template.send(queue, payload);
	}

	private long send(String queue, Object payload, SendOptions.Builder options) {
		return this.template.send(queue, payload, options.build());
	}

}
