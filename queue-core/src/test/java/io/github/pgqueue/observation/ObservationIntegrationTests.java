package io.github.pgqueue.observation;

import java.time.Duration;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.atomic.AtomicReference;

import com.zaxxer.hikari.HikariDataSource;
import io.github.pgqueue.ConsumptionMode;
import io.github.pgqueue.ExchangeDefinition.Binding;
import io.github.pgqueue.ExchangeDefinition;
import io.github.pgqueue.QueueAdmin;
import io.github.pgqueue.QueueContext;
import io.github.pgqueue.QueueDefinition;
import io.github.pgqueue.QueueTemplate;
import io.github.pgqueue.listener.BatchListenerFailedException;
import io.github.pgqueue.listener.ContainerProperties;
import io.github.pgqueue.listener.QueueBatchListener;
import io.github.pgqueue.listener.QueueListenerEndpoint;
import io.github.pgqueue.listener.QueueListenerEndpointRegistry;
import io.github.pgqueue.listener.QueueMessageListener;
import io.github.pgqueue.testing.EmbeddedPostgres;
import io.github.pgqueue.testing.PostgresExtension;
import io.micrometer.common.KeyValues;
import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import io.micrometer.observation.Observation;
import io.micrometer.observation.tck.TestObservationRegistry;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;

import static io.micrometer.observation.tck.TestObservationRegistryAssert.assertThat;
import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

/**
 * The {@code pgqueue.send} and {@code pgqueue.process} observations on real PostgreSQL: recorded
 * with their tags in both consumption modes when enabled, nothing when not, and a custom
 * convention replaces the default; {@code publish} counts each routed copy under its queue. A
 * batch listener's call is one observation with the batch's size and its worst outcome.
 */
@ExtendWith(PostgresExtension.class)
class ObservationIntegrationTests {

	private final EmbeddedPostgres postgres = EmbeddedPostgres.get();

	private final HikariDataSource app = this.postgres.pool("obs-app", 6);

	private final HikariDataSource consumers = this.postgres.pool("obs-consumers", 6);

	private final TestObservationRegistry observations = TestObservationRegistry.create();

	private QueueListenerEndpointRegistry registry;

	@AfterEach
	void stop() {
		if (this.registry != null) {
			this.registry.stop();
		}
		this.consumers.close();
		this.app.close();
	}

	@Test
	void sendsAreObservedWithQueueAndOperation() {
		QueueTemplate template = template(true, null);
		new QueueAdmin(template.context()).declare(QueueDefinition.of("emails"));
		template.send("emails", "hello");
		template.sendBatch("emails", List.of("a", "b"));

		assertThat(this.observations).hasNumberOfObservationsWithNameEqualTo("pgqueue.send", 2)
			.hasAnObservation((observation) -> observation.hasNameEqualTo("pgqueue.send")
				.hasContextualNameEqualTo("emails send")
				.hasLowCardinalityKeyValue("queue", "emails")
				.hasLowCardinalityKeyValue("exchange", "none")
				.hasLowCardinalityKeyValue("operation", "send"))
			.hasAnObservation((observation) -> observation.hasNameEqualTo("pgqueue.send")
				.hasLowCardinalityKeyValue("operation", "send_batch"));
	}

	@Test
	void aPublishIsObservedWithItsExchangeAndCountedUnderEveryRoutedQueue() {
		SimpleMeterRegistry meters = new SimpleMeterRegistry();
		QueueTemplate template = QueueTemplate.builder(QueueContext.builder(this.app).meterRegistry(meters)
			.observationRegistry(this.observations).build()).observationEnabled(true).build();
		new QueueAdmin(template.context()).declare(QueueDefinition.of("billing"));
		new QueueAdmin(template.context()).declare(QueueDefinition.of("shipping"));
		new QueueAdmin(template.context()).declare(new ExchangeDefinition("orders", ExchangeDefinition.Type.FANOUT,
				List.of(new Binding("billing", null), new Binding("shipping", null))));

		assertThat(template.publish("orders", "order.created", "order-1")).isEqualTo(2);

		assertThat(this.observations).hasSingleObservationThat()
			.hasNameEqualTo("pgqueue.send")
			.hasContextualNameEqualTo("orders send")
			.hasLowCardinalityKeyValue("exchange", "orders")
			.hasLowCardinalityKeyValue("queue", "none")
			.hasLowCardinalityKeyValue("operation", "publish")
			.hasHighCardinalityKeyValue("routing.key", "order.created");
		assertThat(meters.counter("pgqueue.messages.sent", "queue", "billing").count()).isEqualTo(1.0);
		assertThat(meters.counter("pgqueue.messages.sent", "queue", "shipping").count()).isEqualTo(1.0);
	}

	@Test
	void aFailedSendIsObservedWithItsError() {
		QueueTemplate template = template(true, null);
		org.assertj.core.api.Assertions.assertThatIllegalArgumentException()
			.isThrownBy(() -> template.publish("nowhere", "key", "lost"));
		assertThat(this.observations).hasSingleObservationThat()
			.hasNameEqualTo("pgqueue.send")
			.assertThatError()
			.isInstanceOf(IllegalArgumentException.class);
	}

	@ParameterizedTest
	@EnumSource(ConsumptionMode.class)
	void handlerCallsAreObservedWithQueueListenerAndOutcome(ConsumptionMode mode) {
		QueueTemplate template = template(false, null);
		new QueueAdmin(template.context()).declare(QueueDefinition.of("emails").withMaxAttempts(1));
		template.send("emails", "fine");
		template.send("emails", "poison");
		start(template, endpoint("mailer", mode, (message, ack) -> {
			if (message.payload().equals("poison")) {
				throw new IllegalStateException("bounced");
			}
		}, true));

		// In transactional mode the poison's failure rolls back the batch's writes since the claim,
		// so the handler of the message before it runs again: one more call, one more observation.
		int calls = (mode == ConsumptionMode.TRANSACTIONAL) ? 3 : 2;
		await().atMost(Duration.ofSeconds(20)).untilAsserted(() -> assertThat(this.observations)
			.hasNumberOfObservationsWithNameEqualTo("pgqueue.process", calls));
		assertThat(this.observations)
			.hasAnObservation((observation) -> observation.hasNameEqualTo("pgqueue.process")
				.hasContextualNameEqualTo("emails process")
				.hasLowCardinalityKeyValue("queue", "emails")
				.hasLowCardinalityKeyValue("listener.id", "mailer")
				.hasLowCardinalityKeyValue("outcome", "success")
				.hasHighCardinalityKeyValue("attempt", "1")
				.doesNotHaveError())
			.hasAnObservation((observation) -> observation.hasNameEqualTo("pgqueue.process")
				.hasLowCardinalityKeyValue("outcome", "dead")
				.assertThatError()
				.hasMessage("bounced"));
		assertThat(this.observations).doesNotHaveAnyRemainingCurrentObservation();
	}

	@ParameterizedTest
	@EnumSource(ConsumptionMode.class)
	void aBatchListenerCallIsOneObservationWithTheBatchSize(ConsumptionMode mode) {
		QueueTemplate template = template(false, null);
		new QueueAdmin(template.context()).declare(QueueDefinition.of("emails"));
		template.sendBatch("emails", List.of("a", "b", "c"));
		AtomicReference<Observation.Context> current = new AtomicReference<>();
		start(template, batchEndpoint(mode, (messages) -> {
			Observation observation = this.observations.getCurrentObservation();
			current.set((observation != null) ? observation.getContext() : null);
		}));

		await().atMost(Duration.ofSeconds(20)).untilAsserted(() -> assertThat(this.observations)
			.hasSingleObservationThat()
			.hasNameEqualTo("pgqueue.process")
			.hasContextualNameEqualTo("emails process")
			.hasLowCardinalityKeyValue("queue", "emails")
			.hasLowCardinalityKeyValue("listener.id", "batcher")
			.hasLowCardinalityKeyValue("outcome", "success")
			.hasHighCardinalityKeyValue("batch.size", "3")
			.doesNotHaveHighCardinalityKeyValueWithKey("message.id")
			.doesNotHaveHighCardinalityKeyValueWithKey("attempt")
			.doesNotHaveError());
		assertThat(current.get()).as("the batch's observation is current in the listener")
			.isInstanceOf(QueueBatchProcessObservationContext.class);
		assertThat(this.observations).doesNotHaveAnyRemainingCurrentObservation();
	}

	@ParameterizedTest
	@EnumSource(ConsumptionMode.class)
	void aFailedBatchIsObservedWithItsWorstOutcomeAndTheListenersError(ConsumptionMode mode) {
		QueueTemplate template = template(false, null);
		new QueueAdmin(template.context()).declare(QueueDefinition.of("emails").withMaxAttempts(1));
		template.sendBatch("emails", List.of("a", "poison", "c"));
		start(template, batchEndpoint(mode, (messages) -> {
			for (int i = 0; i < messages.size(); i++) {
				if (messages.get(i).payload().equals("poison")) {
					throw new BatchListenerFailedException("bounced", i);
				}
			}
		}));

		// The poison is dead-lettered and the others are acked (session) or given back, then taken
		// again in a batch that succeeds: the first batch's outcome is the worst of its messages'.
		await().atMost(Duration.ofSeconds(20)).untilAsserted(() -> assertThat(this.observations)
			.hasAnObservation((observation) -> observation.hasNameEqualTo("pgqueue.process")
				.hasLowCardinalityKeyValue("outcome", "dead")
				.hasHighCardinalityKeyValue("batch.size", "3")
				.assertThatError()
				.isInstanceOf(BatchListenerFailedException.class)
				.hasMessage("bounced"))
			.hasAnObservation((observation) -> observation.hasNameEqualTo("pgqueue.process")
				.hasLowCardinalityKeyValue("outcome", "success")
				.hasHighCardinalityKeyValue("batch.size", (mode == ConsumptionMode.SESSION) ? "1" : "2")
				.doesNotHaveError()));
		assertThat(this.observations).hasNumberOfObservationsWithNameEqualTo("pgqueue.process", 2);
	}

	@Test
	void nothingIsObservedByDefault() {
		QueueTemplate template = new QueueTemplate(QueueContext.builder(this.app).observationRegistry(this.observations).build());
		new QueueAdmin(template.context()).declare(QueueDefinition.of("emails"));
		List<Object> handled = new CopyOnWriteArrayList<>();
		start(template, QueueListenerEndpoint.builder("quiet")
				.listener(String.class, (message, ack) -> handled.add(message.payload()))
				.containerProperties(ContainerProperties.builder(List.of("emails"))
					.pollInterval(Duration.ofMillis(50))
					.build())
				.build());
		template.send("emails", "hello");

		await().atMost(Duration.ofSeconds(20)).until(() -> handled.size() == 1);
		assertThat(this.observations).doesNotHaveAnyObservation();
	}

	@Test
	void customConventionsReplaceTheDefaults() {
		QueueTemplate template = template(true, new DefaultQueueSendObservationConvention() {

			@Override
			public String getName() {
				return "shop.send";
			}

			@Override
			public KeyValues getLowCardinalityKeyValues(QueueSendObservationContext context) {
				return super.getLowCardinalityKeyValues(context).and("team", "checkout");
			}

		});
		new QueueAdmin(template.context()).declare(QueueDefinition.of("emails"));
		this.registry = new QueueListenerEndpointRegistry(template.context(), this.consumers, Duration.ofSeconds(5));
		this.registry.setObservationConvention(new QueueProcessObservationConvention() {

			@Override
			public KeyValues getLowCardinalityKeyValues(QueueProcessObservationContext context) {
				return KeyValues.of("mailbox", context.getQueue());
			}

		});
		this.registry.registerListenerEndpoint(endpoint("mailer", ConsumptionMode.SESSION, (message, ack) -> {
		}, true));
		this.registry.start();
		template.send("emails", "hello");

		await().atMost(Duration.ofSeconds(20)).untilAsserted(() -> assertThat(this.observations)
			.hasObservationWithNameEqualTo("pgqueue.process")
			.that()
			.hasLowCardinalityKeyValue("mailbox", "emails")
			.doesNotHaveLowCardinalityKeyValueWithKey("outcome"));
		assertThat(this.observations).hasObservationWithNameEqualTo("shop.send")
			.that()
			.hasLowCardinalityKeyValue("team", "checkout")
			.hasLowCardinalityKeyValue("queue", "emails");
	}

	private QueueTemplate template(boolean sendObservation, QueueSendObservationConvention convention) {
		return QueueTemplate.builder(QueueContext.builder(this.app)
			.observationRegistry(this.observations).build())
			.observationEnabled(sendObservation)
			.observationConvention(convention)
			.build();
	}

	private QueueListenerEndpoint endpoint(String id, ConsumptionMode mode, QueueMessageListener listener,
			boolean observationEnabled) {
		return QueueListenerEndpoint.builder(id)
				.listener(String.class, listener)
				.containerProperties(ContainerProperties.builder(List.of("emails"))
					.pollInterval(Duration.ofMillis(50))
					.mode(mode)
					.observationEnabled(observationEnabled)
					.build())
				.build();
	}

	private QueueListenerEndpoint batchEndpoint(ConsumptionMode mode, QueueBatchListener listener) {
		return QueueListenerEndpoint.builder("batcher")
				.batchListener(String.class, listener)
				.containerProperties(ContainerProperties.builder(List.of("emails"))
					.pollInterval(Duration.ofMillis(50))
					.mode(mode)
					.observationEnabled(true)
					.build())
				.build();
	}

	private void start(QueueTemplate template, QueueListenerEndpoint endpoint) {
		this.registry = new QueueListenerEndpointRegistry(template.context(), this.consumers, Duration.ofSeconds(5));
		this.registry.registerListenerEndpoint(endpoint);
		this.registry.start();
	}

}
