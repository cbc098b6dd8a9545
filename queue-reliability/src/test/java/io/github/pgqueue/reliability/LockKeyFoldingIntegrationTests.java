package io.github.pgqueue.reliability;

import java.util.List;

import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

import static io.github.pgqueue.reliability.ChaosSettings.pick;
import static org.assertj.core.api.Assertions.assertThat;

/**
 * Message ids past 2^31 and 2^32: lock keys are ids folded to their low 32 bits, so ids cross
 * the int4 sign boundary and pairs of messages (id and id + 2^32) share one lock key while both
 * are in the queue.
 */
class LockKeyFoldingIntegrationTests {

	private static final long TWO_TO_THE_31 = 1L << 31;

	private static final long TWO_TO_THE_32 = 1L << 32;

	private final ChaosDatabase database = ChaosDatabase.get();

	@BeforeEach
	void reset() {
		this.database.reset();
	}

	@Test
	void idsPastTwoToTheThirtyOneAreDeliveredOnceEachAndLeaveNoLock() {
		String queue = "chaos-fold";
		int rounds = pick(6, 40);
		int batch = 50;
		try (ConsumerFleet fleet = new ConsumerFleet(this.database, "fold", ConsumerSpec.of(queue).batchSize(10));
				Producer producer = new Producer(this.database, queue, (key) -> Job.of(key, 2))) {
			// All in the queue before any consumer starts, interleaved so that each message and the one
			// sharing its lock key are next to each other in claim order.
			for (int round = 0; round < rounds; round++) {
				long offset = (long) round * batch;
				this.database.restartIdsAt(1 + offset);
				producer.send(batch);
				this.database.restartIdsAt(TWO_TO_THE_32 + 1 + offset);
				producer.send(batch);
				this.database.restartIdsAt(TWO_TO_THE_31 - (long) rounds * batch / 2 + offset);
				producer.send(batch);
			}
			List<Long> ids = producer.messageIds();
			assertThat(ids).anyMatch((id) -> id > TWO_TO_THE_32).anyMatch((id) -> id < TWO_TO_THE_31)
				.anyMatch((id) -> id >= TWO_TO_THE_31 && id < TWO_TO_THE_32)
				.anyMatch((id) -> id == TWO_TO_THE_31 - 1).anyMatch((id) -> id == TWO_TO_THE_31)
				.anyMatch((id) -> ids.contains(id + TWO_TO_THE_32));
			fleet.start(2);
			ChaosReport report = new Drain(this.database).drainAndCheck("ids-past-2^31", fleet, queue,
					Drain.expect(producer.sent(), Outcome.ACKED));
			report.assertPasses();
			assertThat(report.duplicates()).isZero();
		}
	}

}
