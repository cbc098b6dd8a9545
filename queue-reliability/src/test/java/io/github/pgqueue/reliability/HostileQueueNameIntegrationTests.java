package io.github.pgqueue.reliability;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;

import io.github.pgqueue.QueueAdmin;
import io.github.pgqueue.QueueDefinition;
import io.github.pgqueue.QueueTemplate;
import org.assertj.core.api.ThrowableAssert.ThrowingCallable;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.catchThrowable;

/**
 * Queue names with quotes, semicolons, SQL, control characters or more than 63 characters: every
 * API call and every plain INSERT refuses them naming the value, a consumer configured with one
 * does not start, and nothing is written.
 */
class HostileQueueNameIntegrationTests {

	private static final List<String> HOSTILE = List.of("it's", "q\"uote", "q; DROP TABLE pgqueue.message; --",
			"x' OR '1'='1", "a".repeat(64), "b".repeat(1000), "", " ", "line\nbreak", "tab\there", "очередь",
			"../../etc/passwd", "$(reboot)", "nul\u0000byte");

	private final ChaosDatabase database = ChaosDatabase.get();

	@BeforeEach
	void reset() {
		this.database.reset();
	}

	@Test
	void hostileQueueNamesAreRefusedEverywhereAndWriteNothing() {
		String queue = "chaos-hostile";
		try (Producer producer = new Producer(this.database, queue, (key) -> Job.of(key, 1))) {
			producer.send(20);
			long rowsBefore = this.database.count("SELECT count(*) FROM pgqueue.message");
			QueueTemplate template = this.database.template();
			List<String> unrefused = new ArrayList<>();
			for (String name : HOSTILE) {
				Map<String, ThrowingCallable> calls = Map.of(
						"send", () -> template.send(name, Job.of(1, 0)),
						"sendBatch", () -> template.sendBatch(name, List.of(Job.of(1, 0))),
						"receive", () -> template.receive(name, Job.class),
						"cancel", () -> template.cancel(name, 1),
						"stats", () -> template.stats(name),
						"redrive", () -> new QueueAdmin(template.context()).redrive(name, 10),
						"declare", () -> new QueueAdmin(template.context()).declare(QueueDefinition.of(name)));
				calls.forEach((call, callable) -> {
					Throwable error = catchThrowable(callable);
					if (!(error instanceof IllegalArgumentException)
							|| !error.getMessage().contains("Invalid queue name")) {
						unrefused.add(call + "(" + name + "): " + error);
					}
				});
			}
			UserErrors.expect("send to a queue named with SQL",
					() -> template.send("q; DROP TABLE pgqueue.message; --", Job.of(1, 0)));
			UserErrors.expect("send to a 64-character queue name", () -> template.send("a".repeat(64), Job.of(1, 0)));
			Throwable insert = UserErrors.expect("plain INSERT with a hostile queue name",
					() -> new RawMessages(this.database, "x' OR '1'='1").insertJob(1));
			assertThat(insert).hasMessageContaining("queue_name");
			assertThat(unrefused).as("calls that did not refuse a hostile name").isEmpty();
			assertThat(this.database.count("SELECT count(*) FROM pgqueue.message")).isEqualTo(rowsBefore);

			ConsumerSpec spec = ConsumerSpec.of(queue)
				.property("pgqueue.queues[q; DROP TABLE pgqueue.message; --].max-attempts", "3");
			try (ConsumerFleet hostileFleet = new ConsumerFleet(this.database, "hostile-config", spec)) {
				ConsumerProcess consumer = hostileFleet.startOne();
				assertThat(consumer.awaitExit(Duration.ofSeconds(90))).as("exit code").isNotZero();
				String line = StartupFailures.firstLineContaining(consumer, "Invalid value");
				UserErrors.show("a consumer configured with a hostile queue name",
						line + " " + StartupFailures.firstLineContaining(consumer, "Invalid queue name"));
				assertThat(line).contains("for configuration property 'pgqueue.queues.q; DROP TABLE");
			}
			assertThat(this.database.count("SELECT count(*) FROM pgqueue.queue WHERE name <> ?", queue))
				.as("queue definitions written").isZero();
			assertThat(this.database.count("SELECT count(*) FROM pgqueue.message")).isEqualTo(rowsBefore);

			try (ConsumerFleet fleet = new ConsumerFleet(this.database, "hostile", ConsumerSpec.of(queue))) {
				fleet.start(1);
				new Drain(this.database)
					.drainAndCheck("hostile-queue-names", fleet, queue, Drain.expect(producer.sent(), Outcome.ACKED))
					.assertPasses();
			}
		}
	}

}
