package io.github.pgqueue.reliability;

import java.util.List;
import java.util.Map;

import io.github.pgqueue.QueueContext;
import io.github.pgqueue.QueueTemplate;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

import static io.github.pgqueue.reliability.ChaosSettings.pick;
import static org.assertj.core.api.Assertions.assertThat;

/**
 * Payloads above the size limit: a send fails with the queue, the size and the limit and writes
 * nothing; a message written past the limit with plain SQL is dead-lettered by a consumer that
 * never reads it (the consumer's heap is far smaller than the payload).
 */
class PayloadSizeIntegrationTests {

	private static final int HUGE_MEGABYTES = 96;

	private final ChaosDatabase database = ChaosDatabase.get();

	@BeforeEach
	void reset() {
		this.database.reset();
	}

	@Test
	void aPayloadAboveTheLimitFailsAtSendAndIsDeadLetteredUnreadAtConsume() {
		String queue = "chaos-large";
		QueueTemplate limited = new QueueTemplate(QueueContext.builder(this.database.jdbc().getDataSource())
			.maxPayloadBytes(64 * 1024).build());
		Map<String, String> big = Map.of("blob", "x".repeat(100 * 1024));
		Throwable single = UserErrors.expect("send above a 64 KiB limit", () -> limited.send(queue, big));
		assertThat(single).isInstanceOf(IllegalArgumentException.class)
			.hasMessageContaining("'" + queue + "'").hasMessageContaining("102411 bytes")
			.hasMessageContaining("limit of 65536 bytes");
		UserErrors.expect("sendBatch with one payload above the limit",
				() -> limited.sendBatch(queue, List.of(Map.of("key", 1), big, Map.of("key", 2))));
		Throwable byDefault = UserErrors.expect("send of 2 MB with the default limit",
				() -> this.database.template().send(queue, Map.of("blob", "x".repeat(2 * 1024 * 1024))));
		assertThat(byDefault).hasMessageContaining("limit of 1048576 bytes");
		assertThat(this.database.count("SELECT count(*) FROM pgqueue.message")).as("rows written").isZero();

		RawMessages raw = new RawMessages(this.database, queue);
		int good = pick(50, 500);
		long huge = 100_000;
		for (long key = 1; key <= good; key++) {
			raw.insertJob(key);
			if (key == good / 2) {
				// Built by the server, so the test JVM never holds it either.
				this.database.jdbc().update("INSERT INTO pgqueue.message (queue, payload, headers) "
						+ "SELECT ?, jsonb_build_object('key', ?::bigint, 'blob', repeat('x', ? * 1024 * 1024)), "
						+ "jsonb_build_object('chaos-key', ?::text)", queue, huge, HUGE_MEGABYTES, huge);
			}
		}
		ConsumerSpec spec = ConsumerSpec.of(queue).jvmOption("-Xmx64m");
		try (ConsumerFleet fleet = new ConsumerFleet(this.database, "large", spec)) {
			fleet.start(1);
			Map<Long, Outcome> expected = Drain.expect(raw.sent().keySet(), Outcome.ACKED);
			expected.put(huge, Outcome.DEAD_UNDELIVERED);
			ChaosReport report = new Drain(this.database).drainAndCheck("payload-too-large", fleet, queue, expected);
			String error = this.database.jdbc().queryForObject(
					"SELECT last_error FROM pgqueue.message WHERE queue = ?", String.class, queue + ".dlq");
			UserErrors.show("a " + HUGE_MEGABYTES + " MB message written with SQL, consumer limit 1 MB, heap 64 MB",
					error);
			report.assertPasses();
			assertThat(error).contains("above the consumer's limit of 1048576 bytes").contains("not read");
			assertThat(fleet.all().get(0).output()).doesNotContain("OutOfMemoryError");
		}
	}

}
