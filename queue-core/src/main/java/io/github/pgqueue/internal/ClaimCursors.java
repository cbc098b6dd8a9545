package io.github.pgqueue.internal;

import java.util.HashMap;
import java.util.HashSet;
import java.util.Map;
import java.util.Set;

/**
 * Where a poller's next claim of each queue starts, and how it finds FIFO groups' heads: the
 * state both consumption modes keep between claims. Owned by one poller thread.
 * <p>
 * After a full batch the next claim goes on after its last row ({@link ClaimCursor}) rather than
 * walking the claim index from the head, over the entries of every message acked since the last
 * vacuum; at least once every {@value #HEAD_CLAIM_INTERVAL_NANOS} ns a claim starts from the head
 * again, so that rows behind a cursor that became claimable (released by a stopping or dying
 * consumer, or sent in a transaction that began before the cursor's row was sent) wait at most
 * that long in a backlog. A queue whose heads are scarce (a few groups hold the backlog, and a
 * walk of the claim index meets little else than their later messages) is claimed by stepping
 * through the group index instead: the {@code claim_scanning_heads} statements.
 */
public final class ClaimCursors {

	/** How long claims go on from a cursor before one starts from the head again. */
	static final long HEAD_CLAIM_INTERVAL_NANOS = 1_000_000_000L;

	private final Map<String, ClaimCursor> cursors = new HashMap<>();

	private final Set<String> scarce = new HashSet<>();

	/**
	 * How the next claim of {@code queue} starts: after a cursor (taken, so each is used once) unless
	 * it is due for the head, and whether it scans for heads.
	 */
	public Next next(String queue) {
		ClaimCursor cursor = this.cursors.remove(queue);
		return new Next((cursor != null && !cursor.dueForHead()) ? cursor : null, this.scarce.contains(queue));
	}

	/** How a claim of {@code queue} from the head starts, whatever its cursor: scanning for heads or not. */
	public Next fromHead(String queue) {
		return new Next(null, this.scarce.contains(queue));
	}

	/**
	 * A claim started as {@code next} filled its batch, {@code last} the furthest row it chose (null
	 * if none): heads are not scarce, and the next claim goes on after that row.
	 */
	public void full(String queue, Next next, ClaimCursor last) {
		this.scarce.remove(queue);
		if (last != null) {
			this.cursors.put(queue, last.since((next.after() != null) ? next.after().headClaimedAt() : System.nanoTime()));
		}
	}

	/** A session claim came back short: heads are scarce until a claim fills its batch. */
	public void cameBackShort(String queue) {
		this.scarce.add(queue);
	}

	/**
	 * A transactional claim walked its window to {@code windowEnd} without filling its batch: the
	 * next claim goes on from there at once (not due for the head, which would walk the same rows
	 * again), and heads are scarce unless the claim scanned {@code groupsScanned} ≥
	 * {@link QueueSql#SCARCE_GROUPS} groups (where heads are that many, a walk meets enough of them).
	 */
	public void windowEnded(String queue, ClaimCursor windowEnd, int groupsScanned) {
		if (groupsScanned >= QueueSql.SCARCE_GROUPS) {
			this.scarce.remove(queue);
		}
		else {
			this.scarce.add(queue);
		}
		this.cursors.put(queue, windowEnd.since(System.nanoTime()));
	}

	/**
	 * Where a claim starts.
	 * @param after the cursor it goes on from, or null: from the head
	 * @param scanHeads whether it finds FIFO groups' heads through the group index
	 */
	public record Next(ClaimCursor after, boolean scanHeads) {
	}

}
