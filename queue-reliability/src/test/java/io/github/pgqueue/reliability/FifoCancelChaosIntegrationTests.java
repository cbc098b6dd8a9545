package io.github.pgqueue.reliability;

import java.time.Duration;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicLong;

import io.github.pgqueue.CancelResult;
import io.github.pgqueue.QueueAdmin;
import io.github.pgqueue.QueueTemplate;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

import static io.github.pgqueue.reliability.ChaosSettings.pick;
import static org.assertj.core.api.Assertions.assertThat;

/**
 * {@code fifo-cancel}: 25 FIFO groups drained by four pollers (two consumer JVMs of two) while the
 * harness cancels random messages that are not their group's head and now and then purges every
 * ready message: no group may ever have two messages in flight (a handler starting before the
 * group's previous handler ended), each group must be handled in id order, and every key sent must
 * be handled once or removed, never both. A seventh of the messages are sent delayed, so that a
 * purge of the ready ones leaves later messages of their groups behind.
 */
class FifoCancelChaosIntegrationTests {

	private static final int GROUPS = 25;

	private static final int RATE = pick(100, 250);

	private final ChaosDatabase database = ChaosDatabase.get();

	private final Drain drain = new Drain(this.database);

	@BeforeEach
	void reset() {
		this.database.reset();
	}

	@Test
	void cancellingAndPurgingMessagesBehindTheirGroupsHeadsKeepsEveryGroupInOrderAndOneAtATime() {
		String queue = "chaos-fifo-cancel";
		ConsumerSpec spec = ConsumerSpec.of(queue).batchSize(5).concurrency(2).property("chaos.record-ends", "true");
		Set<Long> cancelled = ConcurrentHashMap.newKeySet();
		AtomicLong purged = new AtomicLong();
		try (ConsumerFleet fleet = new ConsumerFleet(this.database, "fifocancel", spec);
				Producer producer = new Producer(this.database, queue, (key) -> Job.of(key, 10))
					.inGroups((key) -> "g" + (key % GROUPS))
					.delayed((key) -> (key % 7 == 0) ? Duration.ofMillis(700) : Duration.ZERO)) {
			fleet.start(2);
			// A backlog first, so that every group has messages behind its head to cancel.
			producer.send(pick(500, 2000));
			producer.startSending(RATE);
			QueueTemplate template = this.database.template();
			QueueAdmin admin = new QueueAdmin(template.context());
			long until = System.nanoTime() + pick(Duration.ofSeconds(8), Duration.ofSeconds(60)).toNanos();
			for (int round = 1; System.nanoTime() < until; round++) {
				for (Map<String, Object> row : behindTheirHeads(queue)) {
					if (template.cancel(queue, ((Number) row.get("id")).longValue()) == CancelResult.REMOVED) {
						cancelled.add(((Number) row.get("key")).longValue());
					}
				}
				if (round % 40 == 10) {
					purged.addAndGet(admin.purge(queue, QueueAdmin.Purge.READY));
				}
				ChaosDatabase.pause(Duration.ofMillis(50));
			}
			producer.stopSending();
			this.database.queues().awaitDrained(queue, pick(Duration.ofMinutes(2), Duration.ofMinutes(5)));

			// Keys never handled are the ones removed: as many as the cancels and purges said (checked
			// below), and no row of theirs may be left.
			Set<Long> sent = producer.sent();
			Set<Long> handled = new HashSet<>(this.database.jdbc().queryForList("SELECT DISTINCT key FROM chaos.delivery",
					Long.class));
			Set<Long> removed = new HashSet<>(sent);
			removed.removeAll(handled);
			Map<Long, Outcome> expected = Drain.expect(sent, Outcome.ACKED);
			removed.forEach((key) -> expected.put(key, Outcome.REMOVED));
			ChaosReport report = this.drain.drainAndCheck("fifo-cancel", fleet, queue, expected);
			List<String> broken = outOfOrderOrOverlapping();
			System.out.println("  FIFO groups checked: " + groupsHandled() + "; cancelled " + cancelled.size()
					+ ", purged " + purged.get() + ", never handled " + removed.size()
					+ "; runs out of order or overlapping: " + broken.size()
					+ (broken.isEmpty() ? "" : " " + broken.subList(0, Math.min(5, broken.size()))));
			report.assertPasses();
			assertThat(broken).as("runs of a group out of id order, or overlapping").isEmpty();
			assertThat(removed).as("keys never handled: the cancelled ones and the purged ones")
				.containsAll(cancelled)
				.hasSize(cancelled.size() + (int) purged.get());
			assertThat(cancelled).as("messages cancelled behind their head").isNotEmpty();
			assertThat(purged.get()).as("messages purged").isPositive();
			assertThat(groupsHandled()).isEqualTo(GROUPS);
		}
	}

	/** A few messages of {@code queue}, at random, that have an older message of their group queued. */
	private List<Map<String, Object>> behindTheirHeads(String queue) {
		return this.database.jdbc().queryForList("""
				SELECT m.id, chaos.key_of(m.payload, m.headers) AS key FROM pgqueue.message m
				 WHERE m.queue = ? AND m.group_key IS NOT NULL
				   AND EXISTS (SELECT 1 FROM pgqueue.message o
				                WHERE o.queue = m.queue AND o.group_key = m.group_key AND o.id < m.id)
				 ORDER BY random() LIMIT 3""", queue);
	}

	/**
	 * Per group, the handler runs in the order they started (recorded by the database, one clock):
	 * each must be of a later message than the one before, and start once that one's handler ended.
	 */
	private List<String> outOfOrderOrOverlapping() {
		return this.database.jdbc().queryForList("""
				WITH runs AS (
				    SELECT key % ? AS grp, key, message_id, recorded_at,
				           lag(message_id) OVER w AS previous_id, lag(ended_at) OVER w AS previous_end
				      FROM chaos.delivery
				    WINDOW w AS (PARTITION BY key % ? ORDER BY recorded_at, message_id))
				SELECT 'group ' || grp || ': message ' || message_id || ' (key ' || key || ') '
				       || CASE WHEN message_id <= previous_id THEN 'ran after message ' || previous_id
				               ELSE 'started before message ' || previous_id || ' ended' END
				  FROM runs
				 WHERE previous_id IS NOT NULL
				   AND (message_id <= previous_id OR previous_end IS NULL OR recorded_at < previous_end)""",
				String.class, GROUPS, GROUPS);
	}

	private long groupsHandled() {
		return this.database.count("SELECT count(DISTINCT key % ?) FROM chaos.delivery", GROUPS);
	}

}
