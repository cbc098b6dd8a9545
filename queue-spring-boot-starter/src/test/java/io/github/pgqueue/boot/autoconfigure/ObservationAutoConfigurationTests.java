package io.github.pgqueue.boot.autoconfigure;

import java.io.IOException;
import java.io.InputStream;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;

import io.github.pgqueue.QueueTemplate;
import io.github.pgqueue.annotation.QueueListener;
import io.github.pgqueue.observation.DefaultQueueProcessObservationConvention;
import io.github.pgqueue.observation.QueueProcessObservationContext;
import io.github.pgqueue.observation.QueueProcessObservationConvention;
import io.github.pgqueue.testing.EmbeddedPostgres;
import io.github.pgqueue.testing.PostgresExtension;
import io.micrometer.common.KeyValues;
import io.micrometer.observation.ObservationRegistry;
import io.micrometer.observation.tck.TestObservationRegistry;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;

import org.springframework.boot.autoconfigure.AutoConfigurations;
import org.springframework.boot.jdbc.autoconfigure.DataSourceAutoConfiguration;
import org.springframework.boot.test.context.runner.ApplicationContextRunner;

import static io.micrometer.observation.tck.TestObservationRegistryAssert.assertThat;
import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

/**
 * Observations in a Spring Boot application on a real PostgreSQL: off unless
 * {@code pgqueue.template.observation-enabled} and {@code pgqueue.listener.observation-enabled}
 * say so, recorded in the context's {@link ObservationRegistry}, with a convention bean applied.
 */
@ExtendWith(PostgresExtension.class)
class ObservationAutoConfigurationTests {

	private final EmbeddedPostgres postgres = EmbeddedPostgres.get();

	private final TestObservationRegistry observations = TestObservationRegistry.create();

	private final ApplicationContextRunner runner = new ApplicationContextRunner()
		.withConfiguration(AutoConfigurations.of(DataSourceAutoConfiguration.class, PgQueueAutoConfiguration.class))
		.withBean(ObservationRegistry.class, () -> this.observations)
		.withBean(Emails.class)
		.withPropertyValues("spring.datasource.url=" + this.postgres.jdbcUrl(),
				"spring.datasource.username=" + this.postgres.username(), "pgqueue.queues.emails.max-attempts=2",
				"pgqueue.listener.poll-interval=100ms");

	static class Emails {

		final List<Object> handled = new CopyOnWriteArrayList<>();

		@QueueListener(queues = "emails", id = "mailer")
		void on(String email) {
			this.handled.add(email);
		}

	}

	@Test
	void nothingIsObservedByDefault() {
		this.runner.run((context) -> {
			context.getBean(QueueTemplate.class).send("emails", "hello");
			await().atMost(Duration.ofSeconds(10)).until(() -> context.getBean(Emails.class).handled.size() == 1);
			assertThat(this.observations).doesNotHaveAnyObservation();
		});
	}

	@Test
	void sendsAndHandlerCallsAreObservedWhenEnabled() {
		this.runner
			.withPropertyValues("pgqueue.template.observation-enabled=true", "pgqueue.listener.observation-enabled=true")
			.run((context) -> {
				context.getBean(QueueTemplate.class).send("emails", "hello");
				await().atMost(Duration.ofSeconds(10))
					.untilAsserted(() -> assertThat(this.observations).hasObservationWithNameEqualTo("pgqueue.process")
						.that()
						.hasLowCardinalityKeyValue("listener.id", "mailer")
						.hasLowCardinalityKeyValue("outcome", "success"));
				assertThat(this.observations).hasObservationWithNameEqualTo("pgqueue.send")
					.that()
					.hasLowCardinalityKeyValue("queue", "emails");
			});
	}

	@Test
	void theListenerPropertyAloneObservesOnlyHandlerCalls() {
		this.runner.withPropertyValues("pgqueue.listener.observation-enabled=true").run((context) -> {
			context.getBean(QueueTemplate.class).send("emails", "hello");
			await().atMost(Duration.ofSeconds(10)).untilAsserted(
					() -> assertThat(this.observations).hasObservationWithNameEqualTo("pgqueue.process"));
			assertThat(this.observations).hasNumberOfObservationsWithNameEqualTo("pgqueue.send", 0);
		});
	}

	@Test
	void aConventionBeanReplacesTheDefault() {
		this.runner.withPropertyValues("pgqueue.listener.observation-enabled=true")
			.withBean(QueueProcessObservationConvention.class, () -> new DefaultQueueProcessObservationConvention() {

				@Override
				public KeyValues getLowCardinalityKeyValues(QueueProcessObservationContext context) {
					return super.getLowCardinalityKeyValues(context).and("tenant", "acme");
				}

			})
			.run((context) -> {
				context.getBean(QueueTemplate.class).send("emails", "hello");
				await().atMost(Duration.ofSeconds(10))
					.untilAsserted(() -> assertThat(this.observations).hasObservationWithNameEqualTo("pgqueue.process")
						.that()
						.hasLowCardinalityKeyValue("tenant", "acme")
						.hasLowCardinalityKeyValue("queue", "emails"));
			});
	}

	@Test
	void bothPropertiesHaveMetadata() throws IOException {
		try (InputStream in = getClass().getResourceAsStream("/META-INF/spring-configuration-metadata.json")) {
			assertThat(in).isNotNull();
			String metadata = new String(in.readAllBytes(), StandardCharsets.UTF_8);
			assertThat(metadata).contains("\"pgqueue.template.observation-enabled\"",
					"\"pgqueue.listener.observation-enabled\"");
		}
	}

}
