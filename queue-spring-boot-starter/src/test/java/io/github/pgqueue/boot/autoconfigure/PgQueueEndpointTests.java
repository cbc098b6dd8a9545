package io.github.pgqueue.boot.autoconfigure;

import java.util.List;
import java.util.Map;

import io.github.pgqueue.QueueAdmin;
import io.github.pgqueue.QueueTemplate;
import io.github.pgqueue.SendOptions;
import io.github.pgqueue.annotation.QueueListener;
import io.github.pgqueue.testing.EmbeddedPostgres;
import io.github.pgqueue.testing.PostgresExtension;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;

import org.springframework.boot.actuate.endpoint.InvalidEndpointRequestException;
import org.springframework.boot.autoconfigure.AutoConfigurations;
import org.springframework.boot.jdbc.autoconfigure.DataSourceAutoConfiguration;
import org.springframework.boot.test.context.runner.ApplicationContextRunner;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatExceptionOfType;

/** The {@code pgqueue} actuator endpoint: off unless exposed; reads queues and listeners; pauses, resumes, redrives. */
@ExtendWith(PostgresExtension.class)
class PgQueueEndpointTests {

	private final EmbeddedPostgres postgres = EmbeddedPostgres.get();

	private final ApplicationContextRunner runner = new ApplicationContextRunner()
		.withConfiguration(AutoConfigurations.of(DataSourceAutoConfiguration.class, PgQueueAutoConfiguration.class))
		.withBean(Mailer.class)
		.withPropertyValues("spring.datasource.url=" + this.postgres.jdbcUrl(),
				"spring.datasource.username=" + this.postgres.username(), "pgqueue.queues.endpoint-mail.max-attempts=4",
				"pgqueue.queues.endpoint-mail.deduplication-window=10m",

				"pgqueue.scheduler.enabled=false", "pgqueue.schedules.digest.cron=@daily",
				"pgqueue.schedules.digest.queue=endpoint-mail");

	static class Mailer {

		@QueueListener(queues = "endpoint-mail", id = "mailer")
		void on(String mail) {
		}

	}

	@Test
	void theEndpointIsNotAvailableUnlessExposed() {
		this.runner.run((context) -> assertThat(context).doesNotHaveBean(PgQueueEndpoint.class));
	}

	@Test
	@SuppressWarnings("unchecked")
	void itShowsEachQueuesRateLimitAndHowManyMessagesWaitForIt() {
		this.runner.withPropertyValues("management.endpoints.web.exposure.include=pgqueue",
				"pgqueue.queues.endpoint-limited.rate-limit=1/m").run((context) -> {
			context.getBean(QueueTemplate.class).sendBatch("endpoint-limited", List.of("a", "b", "c", "d", "e"));
			Map<String, Object> queues = (Map<String, Object>) context.getBean(PgQueueEndpoint.class).pgqueue().get("queues");
			assertThat((Map<String, Object>) queues.get("endpoint-limited")).containsEntry("rateLimit", "1/m")
				.containsEntry("rateLimitBurst", 1)
				.as("a full bucket of one token: the other four wait")
				.containsEntry("waitingForRateLimit", 4L);
			assertThat((Map<String, Object>) queues.get("endpoint-mail")).doesNotContainKeys("rateLimit",
					"waitingForRateLimit");
		});
	}

	@Test
	@SuppressWarnings("unchecked")
	void itShowsEachQueuesConcurrencyKeyItsLimitPerKeyAndHowManyMessagesWaitForIt() {
		this.runner.withPropertyValues("management.endpoints.web.exposure.include=pgqueue",
				"pgqueue.queues.endpoint-limited.concurrency-key=tenant",
				"pgqueue.queues.endpoint-limited.max-in-flight-per-key=2",
				"pgqueue.queues.endpoint-keyed.concurrency-key=region",
				"pgqueue.queues.endpoint-paced.concurrency-key=tenant",
				"pgqueue.queues.endpoint-paced.rate-limit-per-key=3/s").run((context) -> {
			QueueTemplate template = context.getBean(QueueTemplate.class);
			template.sendBatch("endpoint-limited", List.of("a", "b", "c", "d"),
					SendOptions.builder().header("tenant", "acme").build());
			template.send("endpoint-limited", "e", SendOptions.builder().header("tenant", "globex").build());
			template.sendBatch("endpoint-keyed", List.of("a", "b", "c"), SendOptions.builder().header("region", "eu").build());
			Map<String, Object> queues = (Map<String, Object>) context.getBean(PgQueueEndpoint.class).pgqueue().get("queues");
			assertThat((Map<String, Object>) queues.get("endpoint-limited")).containsEntry("concurrencyKey", "tenant")
				.containsEntry("maxInFlightPerKey", 2)
				.as("acme's 4 messages, 2 beyond the limit")
				.containsEntry("waitingForKeyLimit", 2L);
			template.sendBatch("endpoint-paced", List.of("a", "b", "c", "d", "e"),
					SendOptions.builder().header("tenant", "acme").build());
			queues = (Map<String, Object>) context.getBean(PgQueueEndpoint.class).pgqueue().get("queues");
			assertThat((Map<String, Object>) queues.get("endpoint-paced")).containsEntry("rateLimitPerKey", "3/s")
				.containsEntry("maxInFlightPerKey", null)
				.as("acme's 5 messages, 2 beyond its bucket's 3 tokens")
				.containsEntry("waitingForKeyLimit", 2L);
			assertThat((Map<String, Object>) queues.get("endpoint-limited")).containsEntry("rateLimitPerKey", null);
			assertThat((Map<String, Object>) queues.get("endpoint-keyed")).as("a key without a limit per key")
				.containsEntry("concurrencyKey", "region")
				.containsEntry("maxInFlightPerKey", null)
				.doesNotContainKey("waitingForKeyLimit");
			assertThat((Map<String, Object>) queues.get("endpoint-mail")).doesNotContainKeys("concurrencyKey",
					"maxInFlightPerKey", "waitingForKeyLimit");
		});
	}

	@Test
	@SuppressWarnings("unchecked")
	void itListsQueuesAndListenersAndPausesResumesAndRedrivesAQueue() {
		this.runner.withPropertyValues("management.endpoints.web.exposure.include=pgqueue").run((context) -> {
			PgQueueEndpoint endpoint = context.getBean(PgQueueEndpoint.class);
			Map<String, Object> read = endpoint.pgqueue();
			Map<String, Object> queue = (Map<String, Object>) ((Map<String, Object>) read.get("queues"))
				.get("endpoint-mail");
			assertThat(queue).containsEntry("maxAttempts", 4).containsEntry("paused", false)
				.containsEntry("deadLetterQueue", "endpoint-mail.dlq")
				.containsEntry("deduplicationWindow", "PT10M");
			Map<String, Object> listener = (Map<String, Object>) ((Map<String, Object>) read.get("listeners"))
				.get("mailer");
			assertThat(listener).containsEntry("state", "running").containsEntry("queues", List.of("endpoint-mail"));
			Map<String, Object> schedule = (Map<String, Object>) ((Map<String, Object>) read.get("schedules"))
				.get("digest");
			assertThat(schedule).containsEntry("cron", "@daily").containsEntry("zone", "UTC")
				.containsEntry("queue", "endpoint-mail").containsEntry("missed", "fire-once")
				.containsEntry("paused", false).containsEntry("lastFiredAt", null).containsEntry("fired", 0L)
				.containsKey("nextFireAt");

			endpoint.queue("endpoint-mail", "pause", null, null);
			assertThat(context.getBean(QueueAdmin.class).isPaused("endpoint-mail")).isTrue();
			endpoint.queue("endpoint-mail", "resume", null, null);
			assertThat(context.getBean(QueueAdmin.class).isPaused("endpoint-mail")).isFalse();

			context.getBean(QueueTemplate.class).send("endpoint-mail.dlq", "bounced");
			assertThat(endpoint.queue("endpoint-mail", "redrive", 10, null)).containsEntry("redriven", 0);
			assertThatExceptionOfType(InvalidEndpointRequestException.class)
				.isThrownBy(() -> endpoint.queue("endpoint-mail", "explode", null, null))
				.withMessageContaining("use pause, resume, redrive or resend");
			assertThatExceptionOfType(InvalidEndpointRequestException.class)
				.isThrownBy(() -> endpoint.queue("nowhere", "pause", null, null))
				.withMessageContaining("Queue 'nowhere' does not exist");
		});
	}

	@Test
	@SuppressWarnings("unchecked")
	void itReadsAQueuesArchiveAndSendsAnArchivedMessageAgain() {
		this.runner.withPropertyValues("management.endpoints.web.exposure.include=pgqueue",
				"pgqueue.queues.endpoint-kept.retention=2d").run((context) -> {
			PgQueueEndpoint endpoint = context.getBean(PgQueueEndpoint.class);
			QueueTemplate template = context.getBean(QueueTemplate.class);
			long id = template.send("endpoint-kept", "kept", io.github.pgqueue.SendOptions.builder()
				.header("tenant", "acme").build());
			template.send("endpoint-kept", "other");
			context.getBean(QueueAdmin.class).purge("endpoint-kept", QueueAdmin.Purge.ALL);

			Map<String, Object> queue = (Map<String, Object>) ((Map<String, Object>) endpoint.pgqueue().get("queues"))
				.get("endpoint-kept");
			assertThat(queue).containsEntry("retention", "PT48H");
			assertThat((List<io.github.pgqueue.ArchivedMessage>) endpoint.archive("endpoint-kept", null, null, null, null)
				.get("archive")).hasSize(2);
			assertThat((List<io.github.pgqueue.ArchivedMessage>) endpoint.archive("endpoint-kept", null, "tenant", "acme",
					null)
				.get("archive")).singleElement()
				.satisfies((message) -> assertThat(message.id()).isEqualTo(id));
			assertThat(endpoint.queue("endpoint-kept", "resend", null, id)).containsKey("sent");
			assertThat(template.stats("endpoint-kept").ready()).isEqualTo(1);
			assertThatExceptionOfType(InvalidEndpointRequestException.class)
				.isThrownBy(() -> endpoint.queue("endpoint-kept", "resend", null, null))
				.withMessage("Action resend for queue 'endpoint-kept' needs the id of an archived message");
			assertThatExceptionOfType(InvalidEndpointRequestException.class)
				.isThrownBy(() -> endpoint.queue("endpoint-kept", "resend", null, 999_999L))
				.withMessageContaining("holds no message 999999");
			assertThatExceptionOfType(InvalidEndpointRequestException.class)
				.isThrownBy(() -> endpoint.archive("endpoint-kept", null, null, null, 5000))
				.withMessageContaining("limit must be 1 to 1000");
		});
	}

}
