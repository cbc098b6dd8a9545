package io.github.pgqueue.listener;

import java.time.Duration;
import java.util.HashMap;
import java.util.HashSet;
import java.util.Map;
import java.util.Set;
import java.util.function.Supplier;

import io.github.pgqueue.internal.ListenerMetrics;
import io.github.pgqueue.internal.TokenBucket;

/**
 * A poller's side of its queues' rate limits: how many messages its next claim of a queue may take,
 * and, of a queue limited per key, how many of each key's.
 * For a queue without a limit that is its batch, and nothing runs (but, once per poller at its first
 * poll, the read of which of its queues have a limit). For a limited one it takes a
 * batch's worth of tokens from the queue's bucket first (one statement); when the bucket is short
 * the poller claims nothing and waits until a batch's worth is due, and asks the bucket again only
 * then (a wake-up before that runs no statement). Tokens a claim did not use go back. For a queue
 * limited per key it then takes tokens of the keys the claim serves next (one statement, and one
 * after the claim that gives back the tokens it did not use); when every key with ready messages is
 * out of tokens the poller claims nothing and waits until the first has one, or for a wake-up.
 * Owned by one poller thread.
 */
final class RateLimiter {

	/** Where a poller takes and gives back tokens: its session's connection, or a pool's. */
	interface Tokens {

		/** Takes up to {@code wanted} tokens; null if the queue has no limit (any more). */
		TokenBucket.Grant take(String queue, int wanted);

		void giveBack(String queue, int unused);

		/** Takes tokens of the keys the next claim serves, for up to {@code wanted} messages. */
		TokenBucket.KeyGrants takeForKeys(String queue, int wanted);

	}

	/** Reads which of the listener's queues have a limit, of the queue or of each key. */
	private final Supplier<Map<String, TokenBucket.Limited>> limitedQueues;

	/**
	 * The queues this poller takes tokens for: those limited when it first polled (read then, not
	 * when the listener starts, which must not need the database); null until then.
	 */
	private Set<String> limited;

	/** The queues this poller takes their keys' tokens for, read with {@link #limited}. */
	private Set<String> limitedPerKey;

	/** Per limited queue, when its bucket is due to hold a batch again (System.nanoTime). */
	private final Map<String, Long> notBefore = new HashMap<>();

	private final ListenerMetrics metrics;

	RateLimiter(Supplier<Map<String, TokenBucket.Limited>> limitedQueues, ListenerMetrics metrics) {
		this.limitedQueues = limitedQueues;
		this.metrics = metrics;
	}

	/**
	 * How many messages of {@code queue} the next claim may take, at most {@code batchSize}: a
	 * permit of 0 says how long to wait.
	 */
	Permit take(String queue, int batchSize, Tokens tokens) {
		if (this.limited == null) {
			// One statement per poller, at its first poll; a failure is the poll's, backed off and retried.
			Map<String, TokenBucket.Limited> limits = this.limitedQueues.get();
			this.limited = new HashSet<>();
			this.limitedPerKey = new HashSet<>();
			limits.forEach((name, limit) -> {
				if (limit.queueWide()) {
					this.limited.add(name);
				}
				if (limit.perKey()) {
					this.limitedPerKey.add(name);
				}
			});
		}
		Permit permit = takeOfQueue(queue, batchSize, tokens);
		if (permit.max() == 0 || !this.limitedPerKey.contains(queue)) {
			return permit;
		}
		// Each key's tokens after the queue's: a claim takes at most what both allow.
		TokenBucket.KeyGrants grants = tokens.takeForKeys(queue, permit.max());
		if (grants == null) {
			// The limit was removed: this poller claims as it would have without one.
			this.limitedPerKey.remove(queue);
			return permit;
		}
		if (grants.starved()) {
			// Every key with ready messages waits for its tokens; the queue's go back at once. A
			// wake-up before then takes again: a message of another key may have come.
			used(queue, permit, 0, tokens);
			this.metrics.rateLimitWait(queue);
			return new Permit(0, false, grants.nextIn().isZero() ? Duration.ofMillis(1) : grants.nextIn(), null);
		}
		return new Permit(permit.max(), permit.limited(), null, grants);
	}

	/** The queue's own limit's part of {@link #take}. */
	private Permit takeOfQueue(String queue, int batchSize, Tokens tokens) {
		if (!this.limited.contains(queue)) {
			return new Permit(batchSize, false, null, null);
		}
		long now = System.nanoTime();
		Long due = this.notBefore.get(queue);
		if (due != null && due - now > 0) {
			return new Permit(0, true, Duration.ofNanos(due - now), null);
		}
		TokenBucket.Grant grant = tokens.take(queue, batchSize);
		if (grant == null) {
			// The limit was removed: this poller claims as it would have without one.
			this.limited.remove(queue);
			this.notBefore.remove(queue);
			return new Permit(batchSize, false, null, null);
		}
		Duration next = grant.nextIn();
		if (next.isZero()) {
			this.notBefore.remove(queue);
		}
		else {
			this.notBefore.put(queue, now + next.toNanos());
		}
		if (grant.granted() == 0) {
			this.metrics.rateLimitWait(queue);
			return new Permit(0, true, next.isZero() ? Duration.ofMillis(1) : next, null);
		}
		return new Permit(grant.granted(), true, null, null);
	}

	/**
	 * The claim made on {@code permit} handed out {@code used} messages: gives back the tokens it
	 * did not use, so that the bucket's other consumers may.
	 */
	void used(String queue, Permit permit, int used, Tokens tokens) {
		if (permit.limited() && permit.max() > used) {
			tokens.giveBack(queue, permit.max() - used);
			this.notBefore.remove(queue);
		}
	}

	/**
	 * What a claim may take.
	 * @param max the most messages; 0: none, wait {@code waitFor}
	 * @param limited whether tokens were taken for it
	 * @param waitFor with a permit of 0, how long until the bucket is due to hold a batch
	 * @param keyGrants of a queue limited per key, the tokens of its keys the claim may use; else null
	 */
	record Permit(int max, boolean limited, Duration waitFor, TokenBucket.KeyGrants keyGrants) {
	}

}
