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
	 * How often a poller claims a queue whose definition names a concurrency key with a fair claim
	 * at most (unless the queue limits the messages in flight per key: then every claim is a fair
	 * one); its other claims of the queue walk it as any queue's claims do. A fair claim costs more
	 * than a walk, so it is made only often enough that a key behind another key's backlog waits
	 * about this long per poller at most.
	 */
	static final long FAIR_CLAIM_INTERVAL_NANOS = 10_000_000L;

	private final Map<String, Long> fairClaimedAt = new HashMap<>();

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
	 * Whether the next claim of {@code queue} is a fair one: never for a queue without a
	 * concurrency key, always for one with a per-key limit (only fair claims take the keys' slots),
	 * and otherwise at most once per {@link #FAIR_CLAIM_INTERVAL_NANOS}, counted from when it said so.
	 */
	public boolean fairClaimDue(String queue, Keying keying) {
		if (keying != Keying.KEYED) {
			return keying == Keying.LIMITED;
		}
		long now = System.nanoTime();
		Long last = this.fairClaimedAt.get(queue);
		if (last != null && now - last < FAIR_CLAIM_INTERVAL_NANOS) {
			return false;
		}
		this.fairClaimedAt.put(queue, now);
		return true;
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

	/** How a queue's claims treat its concurrency key (V25), as a poller reads it at its first claim. */
	public enum Keying {

		/** No concurrency key: claims walk the queue. */
		NONE,

		/** A concurrency key: a fair claim now and then. */
		KEYED,

		/**
		 * A concurrency key and a limit per key, of messages in flight or of their rate: fair claims
		 * only.
		 */
		LIMITED;

		/** Reads the row of {@code concurrency_key_of}, if any. */
		public static Keying of(java.sql.ResultSet rs) throws java.sql.SQLException {
			if (!rs.next() || rs.getString("concurrency_key") == null) {
				return NONE;
			}
			rs.getInt("max_in_flight_per_key");
			return (rs.wasNull() && !rs.getBoolean("rate_limited_per_key")) ? KEYED : LIMITED;
		}

	}

	/**
	 * Where a claim starts.
	 * @param after the cursor it goes on from, or null: from the head
	 * @param scanHeads whether it finds FIFO groups' heads through the group index
	 */
	public record Next(ClaimCursor after, boolean scanHeads) {
	}

}
