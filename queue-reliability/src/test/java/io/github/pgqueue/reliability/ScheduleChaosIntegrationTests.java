package io.github.pgqueue.reliability;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.StandardOpenOption;
import java.sql.Timestamp;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;

import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

import static io.github.pgqueue.reliability.ChaosSettings.pick;
import static org.assertj.core.api.Assertions.assertThat;

/**
 * A schedule every second, run by three consumer JVMs, one of them killed with kill -9 in the
 * middle and started again: every tick between the moment all three run and the end is sent
 * exactly once (told by its {@code pgqueue-scheduled-at} header), none is missing, and no tick is
 * ever sent twice. The ticks are sent to a queue no listener consumes, so that the table holds
 * every message sent.
 */
class ScheduleChaosIntegrationTests {

	private static final String TICKS = "chaos-ticks";

	private final ChaosDatabase database = ChaosDatabase.get();

	@BeforeEach
	void reset() {
		this.database.reset();
	}

	@Test
	void eachTickIsSentOnceByThreeJvmsOneKilledAndRestarted() throws IOException {
		Duration half = pick(Duration.ofSeconds(5), Duration.ofSeconds(60));
		ConsumerSpec spec = ConsumerSpec.of("chaos-schedule-idle")
			.property("pgqueue.queues." + TICKS + ".max-attempts", "1")
			.property("pgqueue.schedules.every-second.cron", "* * * * * *")
			.property("pgqueue.schedules.every-second.queue", TICKS)
			.property("pgqueue.schedules.every-second.payload", "{\"kind\": \"tick\"}");
		try (ConsumerFleet fleet = new ConsumerFleet(this.database, "schedule", spec)) {
			List<ConsumerProcess> consumers = fleet.start(3);
			Instant from = now();
			ChaosDatabase.pause(half);
			ConsumerProcess victim = consumers.get(1);
			victim.kill();
			Instant killedAt = now();
			ConsumerProcess restarted = fleet.startOne();
			fleet.awaitReady(restarted);
			Instant restartedAt = now();
			ChaosDatabase.pause(half);
			Instant to = now();
			fleet.stop();

			Map<Instant, Long> sent = new TreeMap<>();
			List<Double> lateness = new ArrayList<>();
			this.database.jdbc().query("""
					SELECT headers ->> 'pgqueue-scheduled-at' AS tick, created_at FROM pgqueue.message
					 WHERE queue = ? AND headers ->> 'pgqueue-schedule' = 'every-second'""", (rs) -> {
				Instant tick = Instant.parse(rs.getString("tick"));
				sent.merge(tick, 1L, Long::sum);
				lateness.add(Duration.between(tick, rs.getTimestamp("created_at").toInstant()).toMillis() / 1000.0);
			}, TICKS);
			// The edges: before all three ran (startup) and the last second (the stop).
			List<Instant> expected = new ArrayList<>();
			for (Instant tick = from.plusSeconds(1).truncatedTo(java.time.temporal.ChronoUnit.SECONDS); tick
				.isBefore(to.minusSeconds(1)); tick = tick.plusSeconds(1)) {
				expected.add(tick);
			}
			List<Instant> missing = expected.stream().filter((tick) -> !sent.containsKey(tick)).toList();
			List<Instant> twice = sent.entrySet().stream().filter((entry) -> entry.getValue() > 1)
				.map(Map.Entry::getKey).toList();
			lateness.sort(Double::compare);
			String line = "CHAOS scenario=schedule ticks=" + expected.size() + " sent=" + sent.size() + " missing="
					+ missing.size() + " twice=" + twice.size() + " killed_at=" + killedAt + " restarted_after="
					+ Duration.between(killedAt, restartedAt).toMillis() + "ms lateness_p50="
					+ lateness.get(lateness.size() / 2) + "s lateness_max=" + lateness.get(lateness.size() - 1) + "s";
			System.out.println(line);
			Files.createDirectories(ChaosSettings.workDirectory());
			Files.writeString(ChaosSettings.workDirectory().resolve("report.txt"), line + "\n", StandardCharsets.UTF_8,
					StandardOpenOption.CREATE, StandardOpenOption.APPEND);
			assertThat(twice).as("ticks sent more than once").isEmpty();
			assertThat(missing).as("ticks between %s and %s not sent", from, to).isEmpty();
			assertThat(expected).as("ticks of the window").hasSizeGreaterThanOrEqualTo((int) (2 * half.toSeconds()));
			assertThat(this.database.count("SELECT fired FROM pgqueue.schedule WHERE name = 'every-second'"))
				.as("the schedule's own count").isEqualTo(sent.size());
		}
	}

	private Instant now() {
		return this.database.jdbc().queryForObject("SELECT clock_timestamp()", Timestamp.class).toInstant();
	}

}
