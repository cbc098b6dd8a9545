package io.github.pgqueue;

import java.time.Instant;
import java.time.ZoneId;
import java.time.ZoneOffset;
import java.time.ZonedDateTime;

import org.junit.jupiter.api.Test;

import org.springframework.scheduling.support.CronExpression;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatIllegalArgumentException;

/** A schedule's definition refuses bad input with one sentence naming it; missed ticks are planned right. */
class ScheduleDefinitionTests {

	@Test
	void aDefinitionHasItsDefaults() {
		ScheduleDefinition definition = ScheduleDefinition.builder("nightly").cron("@daily").queue("reports").build();
		assertThat(definition.zone().getId()).isEqualTo("UTC");
		assertThat(definition.payload()).isEqualTo("{}");
		assertThat(definition.headers()).isEmpty();
		assertThat(definition.missed()).isEqualTo(ScheduleDefinition.Missed.FIRE_ONCE);
		assertThat(definition.toBuilder().build()).isEqualTo(definition);
	}

	@Test
	void badInputIsRefusedNamingTheScheduleAndWhatIsWrong() {
		assertThatIllegalArgumentException().isThrownBy(() -> ScheduleDefinition.builder("night ly"))
			.withMessage("Invalid schedule name 'night ly': use 1 to 63 letters, digits, '_', '.' or '-'");
		assertThatIllegalArgumentException().isThrownBy(() -> ScheduleDefinition.builder("nightly").cron("0 0 2 * *"))
			.withMessageStartingWith("Cron expression '0 0 2 * *' of schedule 'nightly' does not parse (")
			.withMessageEndingWith("); use six fields (second minute hour day-of-month month day-of-week) such as "
					+ "'0 0 2 * * *', or a macro such as '@daily'");
		assertThatIllegalArgumentException().isThrownBy(() -> ScheduleDefinition.builder("nightly").cron("0 0 0 30 2 *"))
			.withMessage("Cron expression '0 0 0 30 2 *' of schedule 'nightly' never matches a date; check its "
					+ "day-of-month and month fields");
		assertThatIllegalArgumentException().isThrownBy(() -> ScheduleDefinition.builder("nightly").zone("Mars/Base"))
			.withMessage("Zone 'Mars/Base' of schedule 'nightly' is unknown; use a region such as 'Europe/Paris', "
					+ "'UTC', or an offset such as '+02:00'");
		assertThatIllegalArgumentException()
			.isThrownBy(() -> ScheduleDefinition.builder("nightly").cron("@daily").build())
			.withMessage("Schedule 'nightly' has no target; give it a queue, or an exchange and a routing key");
		assertThatIllegalArgumentException().isThrownBy(() -> ScheduleDefinition.builder("nightly").queue("a b"))
			.withMessage("Schedule 'nightly' queue: Invalid queue name 'a b': use 1 to 63 letters, digits, '_', '.' "
					+ "or '-'");
		assertThatIllegalArgumentException().isThrownBy(() -> ScheduleDefinition.builder("nightly").payload("daily"))
			.withMessageStartingWith("Payload of schedule 'nightly' is not JSON (");
		assertThatIllegalArgumentException()
			.isThrownBy(() -> ScheduleDefinition.builder("nightly").header("pgqueue-schedule", "x"))
			.withMessage("Header 'pgqueue-schedule' of schedule 'nightly' starts with 'pgqueue-', which pgqueue's own "
					+ "headers do; name it otherwise");
		assertThatIllegalArgumentException().isThrownBy(() -> ScheduleDefinition.Missed.of("sometimes"))
			.withMessage("Unknown missed-tick policy 'sometimes'; use fire-once or skip");
	}

	@Test
	void aTickWhoseNextIsNotDueIsLateAndSent() {
		CronExpression hourly = CronExpression.parse("0 0 * * * *");
		Instant due = Instant.parse("2030-01-01T10:00:00Z");
		ScheduleFiring.Plan plan = ScheduleFiring.plan(hourly, ZoneOffset.UTC, ScheduleDefinition.Missed.SKIP, due,
				due.plusSeconds(1800));
		assertThat(plan).isEqualTo(new ScheduleFiring.Plan(due, due.plusSeconds(3600), null));
	}

	@Test
	void aTickWithinTheGraceIsSentEvenWhenTheNextIsDue() {
		CronExpression everySecond = CronExpression.parse("* * * * * *");
		Instant due = Instant.parse("2030-01-01T10:00:00Z");
		ScheduleFiring.Plan plan = ScheduleFiring.plan(everySecond, ZoneOffset.UTC, ScheduleDefinition.Missed.SKIP, due,
				due.plus(ScheduleFiring.GRACE).minusMillis(1));
		assertThat(plan).isEqualTo(new ScheduleFiring.Plan(due, due.plusSeconds(1), null));
	}

	@Test
	void missedTicksFireOnceForTheLatestOrAreSkipped() {
		CronExpression everyFiveMinutes = CronExpression.parse("0 */5 * * * *");
		ZoneId paris = ZoneId.of("Europe/Paris");
		Instant due = ZonedDateTime.parse("2030-03-31T01:00:00+01:00[Europe/Paris]").toInstant();
		Instant now = due.plusSeconds(3 * 24 * 3600 + 7 * 60 + 30); // three days later, through a change of time
		Instant latest = ZonedDateTime.ofInstant(now, paris).withMinute(5).withSecond(0).toInstant();
		assertThat(ScheduleFiring.plan(everyFiveMinutes, paris, ScheduleDefinition.Missed.FIRE_ONCE, due, now))
			.isEqualTo(new ScheduleFiring.Plan(latest, latest.plusSeconds(300), due));
		assertThat(ScheduleFiring.plan(everyFiveMinutes, paris, ScheduleDefinition.Missed.SKIP, due, now))
			.isEqualTo(new ScheduleFiring.Plan(null, latest.plusSeconds(300), due));
		assertThat(ScheduleFiring.latestTick(everyFiveMinutes, paris, due, latest)).isEqualTo(latest);
	}

}
