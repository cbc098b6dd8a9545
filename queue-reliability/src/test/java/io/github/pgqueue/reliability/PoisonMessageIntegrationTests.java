package io.github.pgqueue.reliability;

import java.time.Duration;
import java.util.List;
import java.util.Map;

import io.github.pgqueue.QueueNames;
import io.github.pgqueue.test.StoredMessage;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

import static io.github.pgqueue.reliability.ChaosSettings.pick;
import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

/**
 * Messages no consumer can finish: a handler that always throws, and one that halts its JVM
 * every time it sees its message. Both must end in the dead-letter queue after max attempts,
 * and leave every other message alone.
 */
class PoisonMessageIntegrationTests {

	private static final int MAX_ATTEMPTS = 3;

	private final ChaosDatabase database = ChaosDatabase.get();

	private final Drain drain = new Drain(this.database);

	@BeforeEach
	void reset() {
		this.database.reset();
	}

	@Test
	void aHandlerThatAlwaysThrowsIsDeadLetteredAfterMaxAttempts() {
		// The longest queue name there is: its dead-letter queue's name is cut to fit.
		String queue = "chaos-throws-" + "x".repeat(QueueNames.MAX_LENGTH - "chaos-throws-".length());
		ConsumerSpec spec = ConsumerSpec.of(queue).maxAttempts(MAX_ATTEMPTS).batchSize(10);
		try (ConsumerFleet fleet = new ConsumerFleet(this.database, "throws", spec);
				Producer producer = new Producer(this.database, queue,
						(key) -> (key % 10 == 0) ? new Job(key, 1, Fault.THROW.name()) : Job.of(key, 1))) {
			producer.send(pick(200, 2000));
			fleet.start(pick(1, 2));
			Map<Long, Outcome> expected = Drain.expect(producer.sent(), Outcome.ACKED);
			producer.sent().stream().filter((key) -> key % 10 == 0).forEach((key) -> expected.put(key, Outcome.DEAD));
			ChaosReport report = this.drain.drainAndCheck("always-throws", fleet, queue, expected);
			report.assertPasses();
			assertThat(this.database.jdbc().queryForList(
					"SELECT array_agg(attempt ORDER BY attempt)::text FROM chaos.delivery WHERE fault = ? GROUP BY key",
					String.class, Fault.THROW.name()))
				.as("attempts of each failing job")
				.hasSize(producer.sent().size() / 10)
				.containsOnly("{1,2,3}");
			List<String> errors = this.database.queues().deadLetters(queue, Object.class).stream()
				.map(StoredMessage::lastError)
				.toList();
			assertThat(errors).hasSize(producer.sent().size() / 10)
				.allMatch((error) -> error.contains("Failed 3 of 3 attempts") && error.contains("always fails"));
			System.out.println("  a dead letter's last_error: " + errors.get(0));
		}
	}

	@Test
	void aHandlerThatThrowsAnErrorCostsOnlyItsOwnMessage() {
		String queue = "chaos-error";
		ConsumerSpec spec = ConsumerSpec.of(queue).maxAttempts(MAX_ATTEMPTS).batchSize(5);
		try (ConsumerFleet fleet = new ConsumerFleet(this.database, "error", spec);
				Producer producer = new Producer(this.database, queue,
						(key) -> (key % 25 == 7) ? new Job(key, 1, Fault.ERROR.name()) : Job.of(key, 1))) {
			producer.send(pick(250, 2500));
			fleet.start(pick(1, 2));
			Map<Long, Outcome> expected = Drain.expect(producer.sent(), Outcome.ACKED);
			List<Long> erring = producer.sent().stream().filter((key) -> key % 25 == 7).toList();
			erring.forEach((key) -> expected.put(key, Outcome.DEAD));
			ChaosReport report = this.drain.drainAndCheck("handler-error", fleet, queue, expected);
			report.assertPasses();
			assertThat(report.duplicates()).as("neighbours of an Error delivered again").isZero();
			assertThat(this.database.jdbc().queryForList(
					"SELECT array_agg(attempt ORDER BY attempt)::text FROM chaos.delivery WHERE fault = ? GROUP BY key",
					String.class, Fault.ERROR.name()))
				.as("attempts of each job whose handler throws an Error")
				.hasSize(erring.size())
				.containsOnly("{1,2,3}");
			List<String> errors = this.database.queues().deadLetters(queue, Object.class).stream()
				.map(StoredMessage::lastError)
				.toList();
			assertThat(errors).hasSize(erring.size())
				.allMatch((error) -> error.contains("Failed 3 of 3 attempts")
						&& (error.contains("StackOverflowError") || error.contains("OutOfMemoryError")))
				.noneMatch((error) -> error.contains("consumer died"));
			System.out.println("  dead letters' last_error: " + new java.util.TreeSet<>(errors.stream()
				.map((error) -> error.replaceAll("Job \\d+", "Job N")).toList()));
		}
	}

	@Test
	void aMessageThatHaltsItsConsumerEveryTimeIsDeadLetteredAndTheOthersAreNot() {
		String queue = "chaos-poison";
		long poison = 25;
		String deadLetterQueue = QueueNames.defaultDeadLetterQueue(queue);
		ConsumerSpec spec = ConsumerSpec.of(queue).maxAttempts(MAX_ATTEMPTS);
		try (ConsumerFleet fleet = new ConsumerFleet(this.database, "halt", spec);
				Producer producer = new Producer(this.database, queue,
						(key) -> (key == poison) ? new Job(key, 1, Fault.HALT.name()) : Job.of(key, 5))) {
			producer.send(pick(300, 3000));
			fleet.start(2);
			// Like a supervisor: whatever the poison halts is started again.
			await().atMost(Duration.ofMinutes(3)).pollInterval(Duration.ofMillis(200)).until(() -> {
				fleet.keepAlive(2);
				return this.database.count("SELECT count(*) FROM pgqueue.message WHERE queue = ? "
						+ "AND chaos.key_of(payload, headers) = ?", deadLetterQueue, poison) == 1;
			});
			fleet.keepAlive(2);
			Map<Long, Outcome> expected = Drain.expect(producer.sent(), Outcome.ACKED);
			expected.put(poison, Outcome.DEAD);
			ChaosReport report = this.drain.drainAndCheck("halt-poison", fleet, queue, expected);
			long halts = fleet.all().stream()
				.filter((c) -> !c.isAlive() && c.awaitExit(Duration.ZERO) == JobListener.HALT_STATUS)
				.count();
			System.out.println("  consumers halted by the poison: " + halts + "; dead letters: "
					+ this.database.jdbc().queryForList("SELECT chaos.key_of(payload, headers) || ': ' || last_error "
							+ "FROM pgqueue.message", String.class));
			report.assertPasses();
			assertThat(halts).isEqualTo(MAX_ATTEMPTS);
		}
	}

}
