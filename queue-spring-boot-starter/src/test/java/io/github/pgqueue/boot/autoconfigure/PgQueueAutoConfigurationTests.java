package io.github.pgqueue.boot.autoconfigure;

import java.time.Duration;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;

import javax.sql.DataSource;

import io.github.pgqueue.Acknowledgment;
import io.github.pgqueue.QueueAdmin;
import io.github.pgqueue.QueueDefinition;
import io.github.pgqueue.QueueMessage;
import io.github.pgqueue.QueueTemplate;
import io.github.pgqueue.RateLimit;
import io.github.pgqueue.annotation.Header;
import io.github.pgqueue.annotation.QueueListener;
import io.github.pgqueue.listener.FailureAction;
import io.github.pgqueue.listener.QueueErrorHandler;
import io.github.pgqueue.listener.QueueListenerEndpointRegistry;
import io.github.pgqueue.testing.EmbeddedPostgres;
import io.github.pgqueue.testing.PostgresExtension;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;

import org.springframework.boot.autoconfigure.AutoConfigurations;
import org.springframework.boot.context.properties.source.InvalidConfigurationPropertyValueException;
import org.springframework.boot.flyway.autoconfigure.FlywayAutoConfiguration;
import org.springframework.boot.jdbc.autoconfigure.DataSourceAutoConfiguration;
import org.springframework.boot.test.context.FilteredClassLoader;
import org.springframework.boot.test.context.runner.ApplicationContextRunner;
import org.springframework.jdbc.core.JdbcTemplate;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.tuple;
import static org.awaitility.Awaitility.await;

@ExtendWith(PostgresExtension.class)
class PgQueueAutoConfigurationTests {

	private final EmbeddedPostgres postgres = EmbeddedPostgres.get();

	private final ApplicationContextRunner runner = new ApplicationContextRunner()
		.withConfiguration(AutoConfigurations.of(DataSourceAutoConfiguration.class, PgQueueAutoConfiguration.class))
		.withPropertyValues("spring.datasource.url=" + this.postgres.jdbcUrl(),
				"spring.datasource.username=" + this.postgres.username(), "pgqueue.queues.emails.max-attempts=3");

	/** Every message of the startup failure's cause chain, with the exception types. */
	private static String failureMessages(org.springframework.boot.test.context.assertj.AssertableApplicationContext context) {
		StringBuilder messages = new StringBuilder();
		for (Throwable t = context.getStartupFailure(); t != null; t = t.getCause()) {
			messages.append(t.getClass().getSimpleName()).append(": ").append(t.getMessage()).append('\n');
		}
		return messages.toString();
	}

	@Test
	void backsOffWithoutADataSource() {
		new ApplicationContextRunner().withConfiguration(AutoConfigurations.of(PgQueueAutoConfiguration.class))
			.run((context) -> assertThat(context).hasNotFailed().doesNotHaveBean(QueueTemplate.class));
	}

	@Test
	void backsOffWithoutSpringJdbc() {
		this.runner.withClassLoader(new FilteredClassLoader(JdbcTemplate.class))
			.run((context) -> assertThat(context).doesNotHaveBean(QueueTemplate.class));
	}

	@Test
	void providesTheTemplateTheRegistryAndTheSchema() {
		this.runner.run((context) -> {
			assertThat(context).hasSingleBean(QueueTemplate.class)
				.hasSingleBean(QueueListenerEndpointRegistry.class)
				.hasSingleBean(PgQueueSchemaInitializer.class);
			QueueTemplate template = context.getBean(QueueTemplate.class);
			long id = template.send("emails", "hello");
			assertThat(template.receive("emails", String.class)).hasValueSatisfying((lease) -> {
				assertThat(lease.message().id()).isEqualTo(id);
				assertThat(lease.message().maxAttempts()).as("from pgqueue.queues.emails").isEqualTo(3);
				lease.ack();
			});
		});
	}

	@Test
	void canBeDisabled() {
		this.runner.withPropertyValues("pgqueue.enabled=false")
			.run((context) -> assertThat(context).hasNotFailed().doesNotHaveBean(QueueTemplate.class)
				.doesNotHaveBean(QueueListenerEndpointRegistry.class));
	}

	@Test
	void honoursAUserDefinedTemplate() {
		this.runner.withBean("myTemplate", QueueTemplate.class,
				() -> QueueTemplate.builder(this.postgres.dataSource()).build())
			.run((context) -> assertThat(context).hasSingleBean(QueueTemplate.class).hasBean("myTemplate"));
	}

	@Test
	void bindsProperties() {
		this.runner
			.withPropertyValues("pgqueue.listener.poll-interval=250ms", "pgqueue.listener.batch-size=50",
					"pgqueue.listener.concurrency=3", "pgqueue.queues.orders.backoff.initial=2s",
					"pgqueue.queues.orders.backoff.multiplier=3", "pgqueue.queues.orders.dead-letter-queue=orders-failed",
					"pgqueue.queues.orders.deduplication-window=5m")
			.run((context) -> {
				PgQueueProperties properties = context.getBean(PgQueueProperties.class);
				assertThat(properties.getListener().getPollInterval()).isEqualTo(Duration.ofMillis(250));
				assertThat(properties.getListener().getBatchSize()).isEqualTo(50);
				assertThat(properties.getListener().getConcurrency()).isEqualTo(3);
				assertThat(properties.getQueues().get("orders").getBackoff().getInitial()).isEqualTo(Duration.ofSeconds(2));
				assertThat(properties.getQueues().get("orders").getBackoff().getMultiplier()).isEqualTo(3.0);
				assertThat(new QueueAdmin(context.getBean(QueueTemplate.class).context()).deadLetterQueueOf("orders")).isEqualTo("orders-failed");
				assertThat(new QueueAdmin(context.getBean(QueueTemplate.class).context()).list())
					.filteredOn((queue) -> queue.definition().name().equals("orders"))
					.singleElement()
					.satisfies((queue) -> assertThat(queue.definition().deduplicationWindow())
						.isEqualTo(Duration.ofMinutes(5)));
			});
	}

	@Test
	void exchangesFromPropertiesRouteToTheirBoundQueues() {
		this.runner
			.withPropertyValues("pgqueue.queues.billing.max-attempts=5", "pgqueue.exchanges.orders.type=topic",
					"pgqueue.exchanges.orders.bindings[0].queue=billing",
					"pgqueue.exchanges.orders.bindings[0].routing-key=order.*",
					"pgqueue.exchanges.orders.bindings[1].queue=emails",
					"pgqueue.exchanges.orders.bindings[1].routing-key=order.created")
			.run((context) -> {
				QueueTemplate template = context.getBean(QueueTemplate.class);
				assertThat(template.publish("orders", "order.created", "o-1")).isEqualTo(2);
				assertThat(template.publish("orders", "order.shipped", "o-2")).isEqualTo(1);
				assertThat(template.stats("billing").ready()).isEqualTo(2);
				assertThat(template.stats("emails").ready()).isEqualTo(1);
			});
	}

	@Test
	void anExchangeDeclaredToFailOnUnroutablePublishesDoesSo() {
		this.runner
			.withPropertyValues("pgqueue.queues.billing.max-attempts=5", "pgqueue.exchanges.payments.type=direct",
					"pgqueue.exchanges.payments.unroutable=fail", "pgqueue.exchanges.payments.bindings[0].queue=billing",
					"pgqueue.exchanges.payments.bindings[0].routing-key=paid")
			.run((context) -> {
				QueueTemplate template = context.getBean(QueueTemplate.class);
				assertThat(template.publish("payments", "paid", "p-1")).isEqualTo(1);
				org.assertj.core.api.Assertions
					.assertThatExceptionOfType(io.github.pgqueue.UnroutableMessageException.class)
					.isThrownBy(() -> template.publish("payments", "refunded", "p-2"));
			});
	}

	@Test
	void bindingToAnUndeclaredQueueOrABadPatternFailsStartupNamingTheProperty() {
		this.runner.withPropertyValues("pgqueue.exchanges.orders.bindings[0].queue=billing")
			.run((context) -> assertThat(failureMessages(context)).contains("pgqueue.exchanges.orders.bindings[0].queue")
				.contains("declared: [emails]"));
		this.runner
			.withPropertyValues("pgqueue.exchanges.orders.type=topic", "pgqueue.exchanges.orders.bindings[0].queue=emails",
					"pgqueue.exchanges.orders.bindings[0].routing-key=a..b")
			.run((context) -> assertThat(failureMessages(context))
				.contains("pgqueue.exchanges.orders.bindings[0].routing-key"));
	}

	@Test
	void invalidPropertyFailsStartupNamingTheProperty() {
		this.runner.withPropertyValues("pgqueue.queues.emails.max-attempts=0").run((context) -> assertThat(failureMessages(context))
			.contains(InvalidConfigurationPropertyValueException.class.getSimpleName())
			.contains("pgqueue.queues.emails.max-attempts"));
		this.runner.withPropertyValues("pgqueue.schema=bad;schema").run((context) -> assertThat(failureMessages(context))
			.contains("pgqueue.schema"));
		this.runner.withPropertyValues("pgqueue.queues[bad name].max-attempts=2").run((context) -> assertThat(failureMessages(context))
			.contains("pgqueue.queues.bad name"));
		this.runner.withPropertyValues("pgqueue.queues.emails.mode=exactly-once").run((context) -> assertThat(failureMessages(context))
			.contains("pgqueue.queues.emails.mode"));
		this.runner.withPropertyValues("pgqueue.queues.emails.transaction-timeout=0s").run((context) -> assertThat(failureMessages(context))
			.contains("pgqueue.queues.emails.transaction-timeout"));
		this.runner.withPropertyValues("pgqueue.queues.emails.deduplication-window=-5m").run((context) -> assertThat(failureMessages(context))
			.contains("pgqueue.queues.emails.deduplication-window").contains("at least 1ms"));
		this.runner.withPropertyValues("pgqueue.queues.emails.deduplication-window=five minutes").run((context) -> assertThat(failureMessages(context))
			.contains("pgqueue.queues.emails.deduplication-window"));
	}

	@Test
	void aRateLimitIsDeclaredWithTheQueueAndABadOneFailsStartupNamingTheProperty() {
		this.runner.withPropertyValues("pgqueue.queues.emails.rate-limit=6000/m").run((context) -> {
			assertThat(context).hasNotFailed();
			assertThat(context.getBean(QueueAdmin.class).list()).singleElement()
				.satisfies((info) -> assertThat(info.definition().rateLimit()).isEqualTo(RateLimit.perMinute(6000)));
		});
		for (String bad : List.of("0/s", "-5/s", "100/x", "100", "fast")) {
			this.runner.withPropertyValues("pgqueue.queues.emails.rate-limit=" + bad)
				.run((context) -> assertThat(failureMessages(context))
					.contains(InvalidConfigurationPropertyValueException.class.getSimpleName())
					.contains("pgqueue.queues.emails.rate-limit")
					.contains("'" + bad + "'"));
		}
		this.runner.withPropertyValues("pgqueue.queues.emails.rate-limit=100/x")
			.run((context) -> assertThat(failureMessages(context)).contains("unknown unit 'x'"));
		this.runner.withPropertyValues("pgqueue.queues.emails.rate-limit=0/s")
			.run((context) -> assertThat(failureMessages(context)).contains("at least 1 message per second, was 0"));
	}

	@Test
	void aConcurrencyKeyAndItsLimitPerKeyAreDeclaredWithTheQueue() {
		this.runner.withPropertyValues("pgqueue.queues.emails.concurrency-key=tenant",
				"pgqueue.queues.emails.max-in-flight-per-key=2", "pgqueue.queues.invoices.concurrency-key=region")
			.run((context) -> {
				assertThat(context).hasNotFailed();
				assertThat(context.getBean(QueueAdmin.class).list()).extracting((info) -> info.definition().name(),
						(info) -> info.definition().concurrencyKey())
					.containsExactly(tuple("emails", new QueueDefinition.ConcurrencyKey("tenant", 2)),
							tuple("invoices", new QueueDefinition.ConcurrencyKey("region", null)));
			});
		this.runner.run((context) -> assertThat(context.getBean(QueueAdmin.class).list())
			.filteredOn((info) -> info.definition().name().equals("emails")).singleElement()
			.satisfies((info) -> assertThat(info.definition().concurrencyKey()).as("taken out of the properties")
				.isNull()));
	}

	@Test
	void aRateLimitPerKeyIsDeclaredWithTheQueueAndABadOneFailsStartupNamingTheProperty() {
		this.runner.withPropertyValues("pgqueue.queues.emails.concurrency-key=tenant",
				"pgqueue.queues.emails.rate-limit-per-key=10/s", "pgqueue.queues.emails.rate-limit=100/s")
			.run((context) -> {
				assertThat(context).hasNotFailed();
				assertThat(context.getBean(QueueAdmin.class).list())
					.filteredOn((info) -> info.definition().name().equals("emails")).singleElement()
					.satisfies((info) -> {
						assertThat(info.definition().concurrencyKey())
							.isEqualTo(new QueueDefinition.ConcurrencyKey("tenant", null, RateLimit.perSecond(10)));
						assertThat(info.definition().rateLimit()).isEqualTo(RateLimit.perSecond(100));
					});
			});
		this.runner.withPropertyValues("pgqueue.queues.emails.concurrency-key=tenant",
				"pgqueue.queues.emails.rate-limit-per-key=0/m")
			.run((context) -> assertThat(failureMessages(context))
				.contains("Property pgqueue.queues.emails.rate-limit-per-key with value '0/m' is invalid"));
		this.runner.withPropertyValues("pgqueue.queues.emails.rate-limit-per-key=5/s")
			.run((context) -> assertThat(failureMessages(context))
				.contains("pgqueue.queues.emails.rate-limit-per-key is set but pgqueue.queues.emails.concurrency-key "
						+ "is not; name the header whose value is the key"));
	}

	@Test
	void aLimitPerKeyWithoutAConcurrencyKeyFailsStartupNamingBothProperties() {
		this.runner.withPropertyValues("pgqueue.queues.emails.max-in-flight-per-key=2")
			.run((context) -> assertThat(failureMessages(context))
				.contains(InvalidConfigurationPropertyValueException.class.getSimpleName())
				.contains("pgqueue.queues.emails.max-in-flight-per-key is set but pgqueue.queues.emails.concurrency-key "
						+ "is not; name the header whose value is the key"));
	}

	@Test
	void aBadConcurrencyKeyOrLimitPerKeyFailsStartupNamingTheProperty() {
		for (String bad : List.of("0", "-1")) {
			this.runner.withPropertyValues("pgqueue.queues.emails.concurrency-key=tenant",
					"pgqueue.queues.emails.max-in-flight-per-key=" + bad)
				.run((context) -> assertThat(failureMessages(context))
					.contains(InvalidConfigurationPropertyValueException.class.getSimpleName())
					.contains("Property pgqueue.queues.emails.max-in-flight-per-key with value '" + bad + "' is invalid")
					.contains("Queue 'emails': max in flight per key must be at least 1, was " + bad));
		}
		this.runner.withPropertyValues("pgqueue.queues.emails.concurrency-key=tenant",
				"pgqueue.queues.emails.max-in-flight-per-key=two")
			.run((context) -> assertThat(failureMessages(context)).contains("pgqueue.queues.emails.max-in-flight-per-key"));
		this.runner.withPropertyValues("pgqueue.queues.emails.concurrency-key=" + "h".repeat(201))
			.run((context) -> assertThat(failureMessages(context))
				.contains(InvalidConfigurationPropertyValueException.class.getSimpleName())
				.contains("pgqueue.queues.emails.concurrency-key")
				.contains("concurrency key header must be at most 200 characters, was 201"));
		this.runner.withPropertyValues("pgqueue.queues.emails.concurrency-key= ")
			.run((context) -> assertThat(failureMessages(context)).contains("pgqueue.queues.emails.concurrency-key")
				.contains("concurrency key header must name a header"));
	}

	static class Listeners {

		final List<String> received = new CopyOnWriteArrayList<>();

		@QueueListener(queues = "emails", concurrency = "2")
		void onEmail(String body, @Header("tenant") String tenant, QueueMessage<String> message) {
			this.received.add(body + "/" + tenant + "/" + message.attempt());
		}

	}

	@Test
	void queueListenerMethodReceivesPayloadHeaderAndMessage() {
		this.runner.withBean(Listeners.class).run((context) -> {
			assertThat(context).hasNotFailed();
			context.getBean(QueueTemplate.class).send("emails", "hi",
					io.github.pgqueue.SendOptions.builder().header("tenant", "acme").build());
			Listeners listeners = context.getBean(Listeners.class);
			await().atMost(Duration.ofSeconds(10)).until(() -> !listeners.received.isEmpty());
			assertThat(listeners.received).containsExactly("hi/acme/1");
		});
	}

	static class UnknownQueueListener {

		@QueueListener(queues = "emials")
		void onEmail(String body) {
		}

	}

	@Test
	void listenerOnAnUnknownQueueFailsStartupNamingBeanAndMethod() {
		this.runner.withBean("typo", UnknownQueueListener.class).run((context) -> assertThat(failureMessages(context))
			.contains("UnknownQueueListener.onEmail of bean 'typo'")
			.contains("unknown queue 'emials'")
			.contains("pgqueue.queues"));
	}

	static class UnbindableListener {

		@QueueListener(queues = "emails")
		void onEmail(String body, String other) {
		}

	}

	@Test
	void listenerWithAnUnbindableSignatureFailsStartup() {
		this.runner.withBean("unbindable", UnbindableListener.class).run((context) -> assertThat(failureMessages(context))
			.contains("UnbindableListener.onEmail of bean 'unbindable' cannot be bound")
			.contains("both look like the payload"));
	}

	static class ManualWithoutAcknowledgment {

		@QueueListener(queues = "emails", ackMode = io.github.pgqueue.AckMode.MANUAL)
		void onEmail(String body) {
		}

	}

	@Test
	void manualAckModeWithoutAcknowledgmentParameterFailsStartup() {
		this.runner.withBean(ManualWithoutAcknowledgment.class).run((context) -> assertThat(failureMessages(context))
			.contains("no Acknowledgment parameter"));
	}

	static class DuplicateIds {

		@QueueListener(queues = "emails", id = "same")
		void one(String body) {
		}

		@QueueListener(queues = "emails.dlq", id = "same")
		void two(String body, Acknowledgment ack) {
		}

	}

	@Test
	void duplicateListenerIdsFailStartup() {
		this.runner.withBean(DuplicateIds.class).run((context) -> assertThat(failureMessages(context))
			.contains("already has id 'same'"));
	}

	static class NamedErrorHandler {

		@QueueListener(queues = "emails", errorHandler = "missingHandler")
		void onEmail(String body) {
		}

	}

	@Test
	void unknownErrorHandlerBeanFailsStartup() {
		this.runner.withBean(NamedErrorHandler.class).run((context) -> assertThat(failureMessages(context))
			.contains("no QueueErrorHandler bean"));
	}

	@Test
	void namedErrorHandlerIsUsed() {
		QueueErrorHandler deadAtOnce = (message, error, backoff) -> FailureAction.deadLetter("no retries here");
		this.runner.withBean("missingHandler", QueueErrorHandler.class, () -> deadAtOnce)
			.withBean(FailingListener.class)
			.run((context) -> {
				long id = context.getBean(QueueTemplate.class).send("emails", "x");
				JdbcTemplate jdbc = new JdbcTemplate(context.getBean(DataSource.class));
				await().atMost(Duration.ofSeconds(10))
					.until(() -> jdbc.queryForList("SELECT last_error FROM pgqueue.message WHERE id = ? AND queue = 'emails.dlq'",
							String.class, id), (errors) -> errors.equals(List.of("no retries here")));
			});
	}

	static class FailingListener {

		@QueueListener(queues = "emails", errorHandler = "missingHandler")
		void onEmail(String body) {
			throw new IllegalStateException("always");
		}

	}

	@Test
	void sharedPoolTooSmallForTheConcurrencyFailsStartupWithTheNumbers() {
		this.runner.withBean(Listeners.class)
			.withPropertyValues("pgqueue.listener.dedicated-pool=false", "spring.datasource.hikari.maximum-pool-size=3")
			.run((context) -> assertThat(failureMessages(context))
				.contains("need 3 connections (2 pollers + 1 LISTEN)")
				.contains("maximum-pool-size is 3")
				.contains("at least 5"));
	}

	@Test
	void listenerUrlWithoutADedicatedPoolFailsStartupSayingSo() {
		this.runner.withBean(Listeners.class)
			.withPropertyValues("pgqueue.listener.dedicated-pool=false",
					"pgqueue.listener.jdbc-url=jdbc:postgresql://localhost:1/direct")
			.run((context) -> assertThat(failureMessages(context))
				.contains("pgqueue.listener.jdbc-url is set, but pgqueue.listener.dedicated-pool is false"));
	}

	@Test
	void listenersTakeTheirConnectionsFromTheirOwnUrl() {
		this.runner.withBean(Listeners.class)
			.withPropertyValues("pgqueue.listener.jdbc-url=" + this.postgres.jdbcUrl() + "?ApplicationName=own-url")
			.run((context) -> {
				assertThat(context).hasNotFailed();
				await().atMost(Duration.ofSeconds(10)).until(() -> new JdbcTemplate(this.postgres.dataSource())
					.queryForObject("SELECT count(*) FROM pg_stat_activity WHERE application_name = 'own-url' "
							+ "AND query LIKE 'LISTEN%'", Integer.class) == 1);
			});
	}

	static class Greedy {

		@QueueListener(queues = "emails", concurrency = "400")
		void onEmail(String body) {
		}

	}

	@Test
	void concurrencyBeyondWhatPostgresCanServeFailsStartupWithTheNumbers() {
		this.runner.withBean(Greedy.class).run((context) -> assertThat(failureMessages(context))
			.contains("pgqueue listeners need 401 connections (400 pollers + 1 LISTEN), but PostgreSQL has only")
			.contains("max_connections"));
	}

	@Test
	void databaseDownAtStartupFailsWithAClearMessage() throws Exception {
		int closedPort;
		try (java.net.ServerSocket socket = new java.net.ServerSocket(0)) {
			closedPort = socket.getLocalPort();
		}
		new ApplicationContextRunner()
			.withConfiguration(AutoConfigurations.of(DataSourceAutoConfiguration.class, PgQueueAutoConfiguration.class))
			.withPropertyValues("spring.datasource.url=jdbc:postgresql://localhost:" + closedPort + "/postgres",
					"spring.datasource.hikari.connection-timeout=500")
			.run((context) -> assertThat(failureMessages(context))
				.contains("pgqueue could not create or migrate its schema 'pgqueue'")
				.contains("Check spring.datasource"));
	}

	@Test
	void applicationWithItsOwnFlywayMigrationsKeepsThemAndGetsPgQueuesToo() {
		this.postgres.execute("DROP SCHEMA IF EXISTS app CASCADE");
		this.runner.withConfiguration(AutoConfigurations.of(FlywayAutoConfiguration.class))
			.withPropertyValues("spring.flyway.schemas=app")
			.run((context) -> {
				assertThat(context).hasNotFailed().hasSingleBean(org.flywaydb.core.Flyway.class);
				JdbcTemplate jdbc = new JdbcTemplate(context.getBean(DataSource.class));
				assertThat(jdbc.queryForObject("SELECT count(*) FROM app.flyway_schema_history WHERE version = '1'",
						Long.class)).isEqualTo(1);
				assertThat(jdbc.queryForObject("SELECT to_regclass('app.app_order') IS NOT NULL", Boolean.class)).isTrue();
				assertThat(jdbc.queryForObject("SELECT count(*) FROM pgqueue.pgqueue_schema_history WHERE version = '1'",
						Long.class)).isEqualTo(1);
				assertThat(context.getBean(QueueTemplate.class).send("emails", "works")).isPositive();
			});
	}

}
