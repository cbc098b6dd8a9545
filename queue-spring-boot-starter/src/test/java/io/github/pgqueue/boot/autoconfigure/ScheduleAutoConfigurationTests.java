package io.github.pgqueue.boot.autoconfigure;

import java.time.Duration;
import java.util.Map;

import io.github.pgqueue.QueueAdmin;
import io.github.pgqueue.ScheduleDefinition;
import io.github.pgqueue.ScheduleInfo;
import io.github.pgqueue.ScheduleRunner;
import io.github.pgqueue.testing.Db;
import io.github.pgqueue.testing.EmbeddedPostgres;
import io.github.pgqueue.testing.PostgresExtension;
import io.micrometer.core.instrument.MeterRegistry;
import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;

import org.springframework.boot.autoconfigure.AutoConfigurations;
import org.springframework.boot.context.properties.source.InvalidConfigurationPropertyValueException;
import org.springframework.boot.jdbc.autoconfigure.DataSourceAutoConfiguration;
import org.springframework.boot.test.context.assertj.AssertableApplicationContext;
import org.springframework.boot.test.context.runner.ApplicationContextRunner;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

/** {@code pgqueue.schedules}: bound, validated naming the property, declared at startup and sent. */
@ExtendWith(PostgresExtension.class)
class ScheduleAutoConfigurationTests {

	private final EmbeddedPostgres postgres = EmbeddedPostgres.get();

	private final ApplicationContextRunner runner = new ApplicationContextRunner()
		.withConfiguration(AutoConfigurations.of(DataSourceAutoConfiguration.class, PgQueueAutoConfiguration.class))
		.withBean(MeterRegistry.class, SimpleMeterRegistry::new)
		.withPropertyValues("spring.datasource.url=" + this.postgres.jdbcUrl(),
				"spring.datasource.username=" + this.postgres.username(), "pgqueue.queues.reports.max-attempts=3",
				"pgqueue.schedules.nightly.cron=* * * * * *", "pgqueue.schedules.nightly.zone=Europe/Paris",
				"pgqueue.schedules.nightly.queue=reports", "pgqueue.schedules.nightly.payload={\"report\": \"daily\"}",
				"pgqueue.schedules.nightly.headers.tenant=acme", "pgqueue.schedules.nightly.missed=skip");

	@Test
	void aScheduleOfThePropertiesIsDeclaredAtStartupAndSentAndCounted() {
		this.runner.run((context) -> {
			assertThat(context).hasSingleBean(ScheduleRunner.class);
			ScheduleInfo info = context.getBean(QueueAdmin.class).schedule("nightly").orElseThrow();
			assertThat(info.definition()).isEqualTo(ScheduleDefinition.builder("nightly").cron("* * * * * *")
				.zone("Europe/Paris").queue("reports").payload("{\"report\": \"daily\"}").header("tenant", "acme")
				.missed(ScheduleDefinition.Missed.SKIP).build());
			await().atMost(Duration.ofSeconds(10)).until(() -> Db.count("reports") >= 1);
			Map<String, Object> message = Db.jdbc().queryForMap("SELECT payload::text, headers ->> 'tenant' AS tenant, "
					+ "headers ->> 'pgqueue-schedule' AS schedule FROM pgqueue.message LIMIT 1");
			assertThat(message).containsEntry("payload", "{\"report\": \"daily\"}").containsEntry("tenant", "acme")
				.containsEntry("schedule", "nightly");
			MeterRegistry meters = context.getBean(MeterRegistry.class);
			await().atMost(Duration.ofSeconds(5))
				.until(() -> meters.find("pgqueue.schedule.sent").tag("schedule", "nightly").counter() != null);
		});
	}

	@Test
	void aRestartWithTheSameScheduleKeepsItsTickAndItsPause() {
		this.runner.withPropertyValues("pgqueue.scheduler.enabled=false", "pgqueue.schedules.nightly.cron=0 0 2 * * *")
			.run((context) -> {
				assertThat(context).doesNotHaveBean(ScheduleRunner.class);
				context.getBean(QueueAdmin.class).pauseSchedule("nightly");
			});
		ScheduleInfo before = schedule();
		this.runner.withPropertyValues("pgqueue.scheduler.enabled=false", "pgqueue.schedules.nightly.cron=0 0 2 * * *",
				"pgqueue.schedules.nightly.payload=[1]").run((context) -> assertThat(context).hasNotFailed());
		ScheduleInfo after = schedule();
		assertThat(after.nextFireAt()).isEqualTo(before.nextFireAt());
		assertThat(after.paused()).isTrue();
		assertThat(after.definition().payload()).isEqualTo("[1]");
		this.runner.withPropertyValues("pgqueue.scheduler.enabled=false", "pgqueue.schedules.nightly.cron=0 0 3 * * *")
			.run((context) -> assertThat(context).hasNotFailed());
		assertThat(schedule().nextFireAt().atZone(java.time.ZoneId.of("Europe/Paris")).getHour()).isEqualTo(3);
	}

	@Test
	void badInputFailsStartupWithOneSentenceNamingTheProperty() {
		assertFails("pgqueue.schedules.nightly.cron=0 0 2 * *", "pgqueue.schedules.nightly.cron",
				"Cron expression '0 0 2 * *' of schedule 'nightly' does not parse");
		assertFails("pgqueue.schedules.nightly.zone=Mars/Base", "pgqueue.schedules.nightly.zone",
				"Zone 'Mars/Base' of schedule 'nightly' is unknown; use a region such as 'Europe/Paris', 'UTC', or an "
						+ "offset such as '+02:00'");
		assertFails("pgqueue.schedules.nightly.missed=sometimes", "pgqueue.schedules.nightly.missed",
				"Unknown missed-tick policy 'sometimes'; use fire-once or skip");
		assertFails("pgqueue.schedules.nightly.payload=daily", "pgqueue.schedules.nightly.payload",
				"Payload of schedule 'nightly' is not JSON");
		assertFails("pgqueue.schedules.nightly.queue=", "pgqueue.schedules.nightly.queue",
				"Give schedule 'nightly' a queue to send to, or an exchange and a routing-key to publish with");
		assertFails("pgqueue.schedules.nightly.queue=undeclared", "pgqueue.schedules.nightly.queue",
				"Schedule 'nightly' sends to queue 'undeclared', which is not declared; declare it first");
		assertFails("pgqueue.schedules.nightly.exchange=orders", "pgqueue.schedules.nightly.exchange",
				"Give schedule 'nightly' a queue or an exchange, not both");
		assertFails("pgqueue.schedules[night ly].cron=@daily", "pgqueue.schedules.night ly",
				"Invalid schedule name 'night ly': use 1 to 63 letters, digits, '_', '.' or '-'");
		assertFails("pgqueue.schedules.reports.nightly.cron=@daily", "pgqueue.schedules.reports.nightly.cron",
				"'nightly.cron' is not a property of schedule 'reports'");
	}

	private void assertFails(String property, String name, String reason) {
		this.runner.withPropertyValues(property).run((context) -> {
			Throwable root = rootCause(context);
			assertThat(root).isInstanceOf(InvalidConfigurationPropertyValueException.class);
			assertThat(((InvalidConfigurationPropertyValueException) root).getName()).isEqualTo(name);
			assertThat(((InvalidConfigurationPropertyValueException) root).getReason()).startsWith(reason);
		});
	}

	private static Throwable rootCause(AssertableApplicationContext context) {
		Throwable failure = context.getStartupFailure();
		assertThat(failure).as("startup failed").isNotNull();
		while (failure.getCause() != null) {
			failure = failure.getCause();
		}
		return failure;
	}

	private ScheduleInfo schedule() {
		return new QueueAdmin(io.github.pgqueue.QueueContext.of(this.postgres.dataSource())).schedule("nightly")
			.orElseThrow();
	}

}
