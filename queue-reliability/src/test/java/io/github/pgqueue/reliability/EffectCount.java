package io.github.pgqueue.reliability;

import java.util.Set;

import io.github.pgqueue.QueueNames;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * The count of a transactional queue, on the effect rows its handlers write in their own
 * transaction ({@code chaos.effect}, which only transactional handlers write): every job took
 * effect exactly once, none is dead-lettered.
 * @param scenario the scenario's name, for the printed line
 * @param sent keys the producer knows were sent
 * @param effects keys that took effect
 * @param lost sent keys that never took effect
 * @param unexpected keys that took effect but were never sent
 * @param duplicates effect rows beyond the first of a key
 * @param rolledBack handler runs whose transaction a fault ended (runs beyond the effects)
 * @param deadLettered messages in the queue's dead-letter queue
 */
record EffectCount(String scenario, long sent, long effects, long lost, long unexpected, long duplicates, long rolledBack,
		long deadLettered) {

	static EffectCount of(String scenario, ChaosDatabase database, String queue, Set<Long> sent) {
		long effects = database.count("SELECT count(DISTINCT key) FROM chaos.effect");
		long duplicates = database.count("SELECT count(*) - count(DISTINCT key) FROM chaos.effect");
		long unexpected = database.count("SELECT count(DISTINCT key) FROM chaos.effect WHERE NOT key = ANY (?)",
				(Object) sent.toArray(new Long[0]));
		long runs = database.count("SELECT count(*) FROM chaos.delivery WHERE queue = ?", queue);
		long deadLettered = database.pending(QueueNames.defaultDeadLetterQueue(queue));
		return new EffectCount(scenario, sent.size(), effects, sent.size() - (effects - unexpected), unexpected, duplicates,
				runs - (effects + duplicates), deadLettered);
	}

	String line(long locksLeft) {
		return "CHAOS scenario=%s sent=%d delivered=%d lost=%d unexpected=%d duplicates=%d faulted=%d locks_left=%d"
			.formatted(this.scenario, this.sent, this.effects, this.lost, this.unexpected, this.duplicates, this.rolledBack, locksLeft);
	}

	void assertPasses(long locksLeft) {
		assertThat(this.lost).as("jobs that never took effect").isZero();
		assertThat(this.duplicates).as("jobs that took effect twice").isZero();
		assertThat(this.unexpected).as("effects of jobs never sent").isZero();
		assertThat(this.deadLettered).as("dead-lettered jobs").isZero();
		assertThat(locksLeft).as("advisory locks left").isZero();
	}

}
