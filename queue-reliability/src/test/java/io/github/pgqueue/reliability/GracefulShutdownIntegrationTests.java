package io.github.pgqueue.reliability;

import java.time.Duration;

import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

import static io.github.pgqueue.reliability.ChaosSettings.pick;
import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

/**
 * SIGTERM to consumer JVMs while their handlers run: the running handlers finish and are acked,
 * the messages they had claimed but not started go back, no handler starts once the listeners
 * stop, and nothing is delivered twice.
 */
class GracefulShutdownIntegrationTests {

	private final ChaosDatabase database = ChaosDatabase.get();

	@BeforeEach
	void reset() {
		this.database.reset();
	}

	@Test
	void sigtermWithMessagesInFlightStartsNoHandlerAfterItAndLosesNothing() {
		String queue = "chaos-graceful";
		int terminations = pick(2, 6);
		try (ConsumerFleet fleet = new ConsumerFleet(this.database, "graceful", ConsumerSpec.of(queue).batchSize(5));
				Producer producer = new Producer(this.database, queue, (key) -> Job.of(key, 150))) {
			// Enough work that the last victim still holds messages: 6 terminations 1.5 s apart, with
			// two consumers handling 150 ms jobs, drained 600 messages before the last one at times.
			producer.send(pick(150, 1200));
			fleet.start(2);
			for (int i = 0; i < terminations; i++) {
				ChaosDatabase.pause(Duration.ofMillis(1500));
				// A consumer that has just started may not have claimed yet: wait for its first claim.
				ConsumerProcess victim = fleet.anyReady();
				long inFlight = await().atMost(Duration.ofSeconds(30)).pollInterval(Duration.ofMillis(20))
					.until(() -> this.database.count("SELECT count(*) FROM chaos.held_by(chaos.backends_of(?))",
							victim.name()), (held) -> held > 0);
				assertThat(inFlight).as("messages %s holds when it gets SIGTERM", victim).isPositive();
				victim.terminate();
				int exit = victim.awaitExit(Duration.ofSeconds(60));
				assertThat(exit).as("exit code of %s after SIGTERM", victim).isEqualTo(143);
				assertThat(victim.output()).contains("Stopped listener 'chaos'");
				fleet.keepAlive(2);
			}
			ChaosReport report = new Drain(this.database).drainAndCheck("graceful-shutdown", fleet, queue,
					Drain.expect(producer.sent(), Outcome.ACKED));
			System.out.println("  attempts counted for claims that a shutdown released unhandled: " + this.database
				.count("SELECT coalesce(sum(attempt - 1), 0) FROM chaos.delivery"));
			report.assertPasses();
			assertThat(report.faulted()).as("a graceful stop is no fault").isZero();
			assertThat(report.duplicates()).isZero();
			// A poller checks that it may go on before each message, so a handler it had already
			// decided to start may find the listeners stopping; a second one would break the stop.
			System.out.println("  handlers that started while their listener was stopping: "
					+ this.database.count("SELECT count(*) FROM chaos.delivery WHERE NOT listener_running"));
			assertThat(this.database.jdbc().queryForList("""
					SELECT consumer || ' ' || thread || ': ' || count(*) FROM chaos.delivery
					 WHERE NOT listener_running GROUP BY consumer, thread HAVING count(*) > 1""", String.class))
				.as("pollers that started another handler after the listeners began to stop").isEmpty();
		}
	}

	@Test
	void sigtermWithHandlersThatOutliveTheShutdownTimeoutGivesTheirMessagesBackUnharmed() {
		String queue = "chaos-outlived";
		int terminations = pick(3, 8);
		// One attempt only: a stop that counted as a failure would dead-letter the message at once.
		ConsumerSpec spec = ConsumerSpec.of(queue).batchSize(5).maxAttempts(1)
			.property("pgqueue.listener.shutdown-timeout", "300ms");
		try (ConsumerFleet fleet = new ConsumerFleet(this.database, "outlived", spec);
				Producer producer = new Producer(this.database, queue,
						(key) -> Job.of(key, (key % 4 == 0) ? 2_000 : 20))) {
			producer.send(pick(120, 400));
			fleet.start(2);
			for (int i = 0; i < terminations; i++) {
				ConsumerProcess victim = fleet.anyReady();
				await().atMost(Duration.ofSeconds(30)).pollInterval(Duration.ofMillis(20))
					.until(() -> inSlowHandler(victim.name()));
				victim.terminate();
				int exit = victim.awaitExit(Duration.ofSeconds(60));
				assertThat(exit).as("exit code of %s after SIGTERM", victim).isEqualTo(143);
				fleet.keepAlive(2);
			}
			ChaosReport report = new Drain(this.database).drainAndCheck("shutdown-timeout-exceeded", fleet, queue,
					Drain.expect(producer.sent(), Outcome.ACKED));
			long interrupted = this.database.count("SELECT count(*) FROM chaos.fault WHERE reason = 'interrupted-by-stop'");
			System.out.println("  handlers interrupted by a stop: " + interrupted);
			report.assertPasses();
			assertThat(interrupted).as("handlers that outlived the shutdown timeout").isPositive();
			assertThat(this.database.count("SELECT count(*) FROM pgqueue.message WHERE last_error IS NOT NULL"))
				.as("messages whose interruption by a stop was recorded as a failure").isZero();
		}
	}

	/** Whether a consumer is in the middle of a 2 s handler it started a moment ago. */
	private boolean inSlowHandler(String consumer) {
		return this.database.count("""
				SELECT count(*) FROM chaos.delivery d
				 WHERE d.consumer = ? AND d.key % 4 = 0 AND d.recorded_at > clock_timestamp() - interval '1 second'
				   AND EXISTS (SELECT 1 FROM chaos.held_by(chaos.backends_of(?)) h
				                WHERE h.message_id = d.message_id AND h.attempt = d.attempt)""", consumer, consumer) > 0;
	}

}
