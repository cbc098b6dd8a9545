package io.github.pgqueue.internal;

import org.junit.jupiter.api.Test;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * Where a poller's next claim starts, as both consumption modes keep it: {@link ClaimCursors}.
 */
class ClaimCursorsTests {

	private final ClaimCursors cursors = new ClaimCursors();

	@Test
	void aFullClaimLeavesACursorThatTheNextClaimTakesOnce() {
		ClaimCursor last = new ClaimCursor(0, 1_000, 42, 0);
		this.cursors.full("q", this.cursors.next("q"), last);
		ClaimCursors.Next next = this.cursors.next("q");
		assertThat(next.after()).isNotNull();
		assertThat(next.after().id()).isEqualTo(42);
		assertThat(next.scanHeads()).isFalse();
		assertThat(this.cursors.next("q").after()).as("taken").isNull();
	}

	@Test
	void claimsGoingOnFromACursorKeepTheTimeTheirRunLastStartedFromTheHead() {
		long longAgo = System.nanoTime() - 2 * ClaimCursors.HEAD_CLAIM_INTERVAL_NANOS;
		ClaimCursors.Next fromOldCursor = new ClaimCursors.Next(new ClaimCursor(0, 1, 1, longAgo), false);
		this.cursors.full("q", fromOldCursor, new ClaimCursor(0, 2, 2, 0));
		assertThat(this.cursors.next("q").after()).as("due for the head").isNull();
	}

	@Test
	void aShortSessionClaimMakesHeadsScarceUntilAClaimIsFull() {
		this.cursors.cameBackShort("q");
		assertThat(this.cursors.next("q").scanHeads()).isTrue();
		assertThat(this.cursors.fromHead("q").scanHeads()).isTrue();
		this.cursors.full("q", this.cursors.next("q"), null);
		ClaimCursors.Next next = this.cursors.next("q");
		assertThat(next.scanHeads()).isFalse();
		assertThat(next.after()).as("no row chosen, no cursor").isNull();
	}

	@Test
	void aWalkedOutWindowGoesOnAtOnceAndScansHeadsUnlessManyGroupsWereSeen() {
		ClaimCursor windowEnd = new ClaimCursor(3, 7, 9, 0);
		this.cursors.windowEnded("q", windowEnd, -1);
		ClaimCursors.Next next = this.cursors.next("q");
		assertThat(next.after().id()).isEqualTo(9);
		assertThat(next.after().dueForHead()).isFalse();
		assertThat(next.scanHeads()).isTrue();
		this.cursors.windowEnded("q", windowEnd, QueueSql.SCARCE_GROUPS);
		assertThat(this.cursors.next("q").scanHeads()).isFalse();
	}

	@Test
	void queuesAreKeptApart() {
		this.cursors.cameBackShort("a");
		this.cursors.full("b", this.cursors.next("b"), new ClaimCursor(0, 1, 1, 0));
		assertThat(this.cursors.next("b").scanHeads()).isFalse();
		assertThat(this.cursors.next("a").after()).isNull();
	}

}
