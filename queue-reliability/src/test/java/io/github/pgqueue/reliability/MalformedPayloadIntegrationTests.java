package io.github.pgqueue.reliability;

import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

import static io.github.pgqueue.reliability.ChaosSettings.pick;
import static org.assertj.core.api.Assertions.assertThat;

/**
 * Payloads written with plain SQL that a listener cannot take: JSON that is not JSON, JSON that
 * is not the listener's type, and JSON that names a class to instantiate.
 */
class MalformedPayloadIntegrationTests {

	private static final String CANARY = Canary.class.getName();

	private final ChaosDatabase database = ChaosDatabase.get();

	private final Drain drain = new Drain(this.database);

	@BeforeEach
	void reset() {
		this.database.reset();
	}

	@Test
	void malformedJsonIsRefusedOrDeadLetteredAndTheConsumerGoesOn() {
		String queue = "chaos-malformed";
		RawMessages raw = new RawMessages(this.database, queue);
		Throwable syntax = UserErrors.expect("INSERT of a payload that is not JSON",
				() -> raw.insert(99_999, "{\"key\": 1,"));
		assertThat(syntax).hasMessageContaining("invalid input syntax for type json");
		assertThat(this.database.pending(queue)).isZero();

		Map<Long, String> wrongShape = new LinkedHashMap<>();
		wrongShape.put(100_001L, "\"just a string\"");
		wrongShape.put(100_002L, "[1, 2, 3]");
		wrongShape.put(100_003L, "{\"key\": \"not a number\"}");
		wrongShape.put(100_004L, "{\"key\": 123456789012345678901234567890}");
		wrongShape.put(100_005L, "{\"key\": 5, \"workMillis\": {\"nested\": true}}");
		long nullPayload = 100_006L;
		int good = pick(100, 1000);
		for (long key = 1; key <= good; key++) {
			raw.insertJob(key);
			if (key == good / 2) {
				wrongShape.forEach(raw::insert);
				raw.insert(nullPayload, "null");
			}
		}
		try (ConsumerFleet fleet = new ConsumerFleet(this.database, "malformed",
				ConsumerSpec.of(queue).maxAttempts(2))) {
			fleet.start(1);
			Map<Long, Outcome> expected = Drain.expect(raw.sent().keySet(), Outcome.ACKED);
			wrongShape.keySet().forEach((key) -> expected.put(key, Outcome.DEAD_UNDELIVERED));
			// JSON null converts (to null): the listener gets it, fails, and the retries dead-letter it.
			expected.put(nullPayload, Outcome.DEAD);
			ChaosReport report = this.drain.drainAndCheck("malformed-json", fleet, queue, expected);
			this.database.jdbc().queryForList("SELECT payload::text, last_error FROM pgqueue.message ORDER BY id")
				.forEach((row) -> UserErrors.show("dead letter " + row.get("payload"), (String) row.get("last_error")));
			report.assertPasses();
			assertThat(this.database.jdbc().queryForList("SELECT last_error FROM pgqueue.message WHERE "
					+ "(headers->>'chaos-key')::bigint <> ?", String.class, nullPayload))
				.hasSize(wrongShape.size())
				.allMatch((error) -> error.startsWith("Cannot read payload as " + Job.class.getName()));
		}
	}

	@Test
	void aPayloadThatNamesAClassInstantiatesNothing() {
		String queue = "chaos-polymorphic";
		RawMessages raw = new RawMessages(this.database, queue);
		List<String> hostile = List.of(
				"{\"@class\": \"" + CANARY + "\", \"command\": \"touch /tmp/pgqueue-pwned\"}",
				"[\"" + CANARY + "\", {\"command\": \"touch /tmp/pgqueue-pwned\"}]",
				"{\"" + CANARY + "\": {\"command\": \"touch /tmp/pgqueue-pwned\"}}",
				"{\"@type\": \"" + CANARY + "\", \"command\": \"x\"}",
				"{\"@c\": \".Canary\", \"command\": \"x\"}",
				"[\"java.lang.ProcessBuilder\", {\"command\": [\"touch\", \"/tmp/pgqueue-pwned\"]}]",
				"{\"@class\": \"java.net.URL\", \"val\": \"http://127.0.0.1:1/\"}");
		long key = 1;
		for (int round = 0; round < pick(5, 50); round++) {
			for (String json : hostile) {
				raw.insert(key++, json);
			}
		}
		this.database.template().send(queue, Map.of("@class", CANARY, "command", "x"),
				io.github.pgqueue.SendOptions.builder().header("chaos-key", Long.toString(key)).build());
		try (ConsumerFleet fleet = new ConsumerFleet(this.database, "polymorphic",
				ConsumerSpec.of(queue).property("chaos.listener", "untyped"))) {
			fleet.start(1);
			Map<Long, Outcome> expected = Drain.expect(raw.sent().keySet(), Outcome.ACKED);
			expected.put(key, Outcome.ACKED);
			ChaosReport report = this.drain.drainAndCheck("polymorphic-payload", fleet, queue, expected);
			List<String> types = this.database.jdbc()
				.queryForList("SELECT DISTINCT payload_type FROM chaos.delivery ORDER BY 1", String.class);
			UserErrors.show("payloads naming a class", "no error; the listener got " + types
					+ " and no class the JSON names was instantiated");
			report.assertPasses();
			assertThat(types).containsExactly("java.util.ArrayList", "java.util.LinkedHashMap");
			assertThat(this.database.count("SELECT max(canaries) FROM chaos.delivery")).isZero();
			assertThat(fleet.all().get(0).output()).doesNotContain("CANARY INSTANTIATED");
		}
	}

}
