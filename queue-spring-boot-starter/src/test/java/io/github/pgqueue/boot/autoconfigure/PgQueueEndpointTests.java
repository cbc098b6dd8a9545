package io.github.pgqueue.boot.autoconfigure;

import java.util.List;
import java.util.Map;

import io.github.pgqueue.QueueAdmin;
import io.github.pgqueue.QueueTemplate;
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
				"spring.datasource.username=" + this.postgres.username(), "pgqueue.queues.endpoint-mail.max-attempts=4");

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
	void itListsQueuesAndListenersAndPausesResumesAndRedrivesAQueue() {
		this.runner.withPropertyValues("management.endpoints.web.exposure.include=pgqueue").run((context) -> {
			PgQueueEndpoint endpoint = context.getBean(PgQueueEndpoint.class);
			Map<String, Object> read = endpoint.pgqueue();
			Map<String, Object> queue = (Map<String, Object>) ((Map<String, Object>) read.get("queues"))
				.get("endpoint-mail");
			assertThat(queue).containsEntry("maxAttempts", 4).containsEntry("paused", false)
				.containsEntry("deadLetterQueue", "endpoint-mail.dlq");
			Map<String, Object> listener = (Map<String, Object>) ((Map<String, Object>) read.get("listeners"))
				.get("mailer");
			assertThat(listener).containsEntry("state", "running").containsEntry("queues", List.of("endpoint-mail"));

			endpoint.queue("endpoint-mail", "pause", null);
			assertThat(context.getBean(QueueAdmin.class).isPaused("endpoint-mail")).isTrue();
			endpoint.queue("endpoint-mail", "resume", null);
			assertThat(context.getBean(QueueAdmin.class).isPaused("endpoint-mail")).isFalse();

			context.getBean(QueueTemplate.class).send("endpoint-mail.dlq", "bounced");
			assertThat(endpoint.queue("endpoint-mail", "redrive", 10)).containsEntry("redriven", 0);
			assertThatExceptionOfType(InvalidEndpointRequestException.class)
				.isThrownBy(() -> endpoint.queue("endpoint-mail", "explode", null))
				.withMessageContaining("use pause, resume or redrive");
			assertThatExceptionOfType(InvalidEndpointRequestException.class)
				.isThrownBy(() -> endpoint.queue("nowhere", "pause", null))
				.withMessageContaining("Queue 'nowhere' does not exist");
		});
	}

}
