package io.github.pgqueue.internal;

import java.sql.ResultSet;
import java.sql.SQLException;

/**
 * Where a poller's claims go on from: a row's place in the claim index (its priority, visible_at
 * in microseconds since the epoch, and id: a claim's {@code visible_at_us}, or {@code place_visible_at_us}
 * for any row a session claim chose), and when the claims that led to it last started from the head
 * ({@link System#nanoTime()}).
 */
public record ClaimCursor(int priority, long visibleAtMicros, long id, long headClaimedAt) {

	/**
	 * The place of the row at the current row of {@code rs}, a claim's result: a claimed row, or
	 * the last row of a transactional claim's window.
	 */
	public static ClaimCursor of(ResultSet rs) throws SQLException {
		return new ClaimCursor(rs.getInt("priority"), rs.getLong("visible_at_us"), rs.getLong("id"), 0);
	}

	/**
	 * The place of the chosen row at the current row of {@code rs}, a batch claim's result
	 * (columns 16 and 17), whether it was claimed or found gone by the re-check; null for a
	 * row the claim locked and left.
	 */
	static ClaimCursor ofChosen(ResultSet rs) throws SQLException {
		int priority = rs.getInt("place_priority");
		return rs.wasNull() ? null : new ClaimCursor(priority, rs.getLong("place_visible_at_us"), rs.getLong("id"), 0);
	}

	/** Whether this place comes after {@code other} in the claim index. */
	boolean isAfter(ClaimCursor other) {
		if (this.priority != other.priority) {
			return this.priority > other.priority;
		}
		if (this.visibleAtMicros != other.visibleAtMicros) {
			return this.visibleAtMicros > other.visibleAtMicros;
		}
		return this.id > other.id;
	}

	/** This place, reached by claims that last started from the head at {@code headClaimedAt}. */
	public ClaimCursor since(long headClaimedAt) {
		return new ClaimCursor(this.priority, this.visibleAtMicros, this.id, headClaimedAt);
	}

	/** Whether the next claim is to start from the head again: the last one that did is too old. */
	public boolean dueForHead() {
		return System.nanoTime() - this.headClaimedAt >= ClaimCursors.HEAD_CLAIM_INTERVAL_NANOS;
	}

}
