package io.github.pgqueue.stream.binder;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.function.Consumer;
import java.util.stream.IntStream;

import io.github.pgqueue.QueueAdmin;
import io.github.pgqueue.QueueDefinition;
import io.github.pgqueue.QueueTemplate;
import io.github.pgqueue.listener.QueueListenerContainer;
import io.github.pgqueue.listener.QueueListenerEndpointRegistry;
import io.github.pgqueue.stream.binder.orders.Invoice;
import io.github.pgqueue.stream.binder.orders.Ledger;
import io.github.pgqueue.stream.binder.orders.Order;
import io.github.pgqueue.stream.binder.orders.OrdersApplication;
import io.github.pgqueue.test.EmbeddedPgQueue;
import io.github.pgqueue.test.QueueTestSupport;
import io.github.pgqueue.test.StoredMessage;
import io.micrometer.observation.tck.TestObservationRegistry;
import io.micrometer.observation.tck.TestObservationRegistryAssert;
import org.junit.jupiter.api.Test;

import org.springframework.beans.factory.annotation.Autowired;
import org.springframework.boot.test.context.SpringBootTest;
import org.springframework.cloud.stream.function.StreamBridge;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Import;
import org.springframework.messaging.Message;
import org.springframework.messaging.MessagingException;
import org.springframework.messaging.SubscribableChannel;
import org.springframework.messaging.support.ErrorMessage;
import org.springframework.messaging.support.MessageBuilder;
import org.springframework.transaction.PlatformTransactionManager;
import org.springframework.transaction.support.TransactionTemplate;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.awaitility.Awaitility.await;

/**
 * The binder in a Spring Boot application, on a real PostgreSQL: each Spring Cloud Stream setting
 * and what it becomes in pgqueue.
 */
@EmbeddedPgQueue
@SpringBootTest(classes = PgQueueBinderIntegrationTests.FeaturesApplication.class, properties = {
		"spring.cloud.stream.default-binder=pgqueue",
		"pgqueue.template.observation-enabled=true", "pgqueue.listener.observation-enabled=true",
		"spring.cloud.function.definition=invoice;record;flaky;batched;audit",
		// orders -> invoices -> ledger, per customer in order (OrdersApplication)
		"spring.cloud.stream.bindings.orders.destination=orders",
		"spring.cloud.stream.bindings.orders.producer.partition-key-expression=headers['customer']",
		"spring.cloud.stream.bindings.orders.producer.required-groups=billing",
		"spring.cloud.stream.bindings.invoice-in-0.destination=orders",
		"spring.cloud.stream.bindings.invoice-in-0.group=billing",
		"spring.cloud.stream.bindings.invoice-in-0.consumer.concurrency=3",
		"spring.cloud.stream.bindings.invoice-out-0.destination=invoices",
		"spring.cloud.stream.bindings.invoice-out-0.producer.partition-key-expression=headers['customer']",
		"spring.cloud.stream.bindings.invoice-out-0.producer.required-groups=ledger",
		"spring.cloud.stream.bindings.record-in-0.destination=invoices",
		"spring.cloud.stream.bindings.record-in-0.group=ledger",
		"spring.cloud.stream.bindings.record-in-0.consumer.concurrency=3",
		// retries and dead letters
		"spring.cloud.stream.bindings.flaky-in-0.destination=flaky",
		"spring.cloud.stream.bindings.to-flaky.destination=flaky",
		"spring.cloud.stream.bindings.flaky-in-0.group=g",
		"spring.cloud.stream.bindings.flaky-in-0.consumer.max-attempts=2",
		"spring.cloud.stream.bindings.flaky-in-0.consumer.back-off-initial-interval=50",
		"spring.cloud.stream.bindings.flaky-in-0.consumer.back-off-multiplier=1.5",
		"spring.cloud.stream.bindings.flaky-in-0.consumer.back-off-max-interval=100",
		// batch mode
		"spring.cloud.stream.bindings.batched-in-0.destination=batched",
		"spring.cloud.stream.bindings.to-batched.destination=batched",
		"spring.cloud.stream.bindings.batched-in-0.group=g",
		"spring.cloud.stream.bindings.batched-in-0.consumer.batch-mode=true",
		"spring.cloud.stream.pgqueue.bindings.batched-in-0.consumer.batch-size=5",
		// headers, a filter, transactional consumption
		"spring.cloud.stream.bindings.audit-in-0.destination=audit",
		"spring.cloud.stream.bindings.to-audit.destination=audit",
		"spring.cloud.stream.bindings.audit-in-0.group=g",
		"spring.cloud.stream.pgqueue.bindings.audit-in-0.consumer.mode=transactional",
		"spring.cloud.stream.pgqueue.bindings.audit-in-0.consumer.filter=tenant = 'acme'",
		// priority and delay of a producer
		"spring.cloud.stream.bindings.later.destination=later",
		"spring.cloud.stream.bindings.later.producer.required-groups=g",
		"spring.cloud.stream.pgqueue.bindings.later.producer.priority=3",
		"spring.cloud.stream.pgqueue.bindings.later.producer.delay=1h",
		// a producer's error channel
		"spring.cloud.stream.bindings.strict.destination=strict",
		"spring.cloud.stream.bindings.strict.producer.required-groups=g",
		"spring.cloud.stream.bindings.strict.producer.error-channel-enabled=true" })
class PgQueueBinderIntegrationTests {

	private static final Duration WAIT = Duration.ofSeconds(20);

	@Autowired
	private StreamBridge streamBridge;

	@Autowired
	private Ledger ledger;

	@Autowired
	private Received received;

	@Autowired
	private QueueAdmin admin;

	@Autowired
	private QueueTemplate template;

	@Autowired
	private QueueTestSupport queues;

	@Autowired
	private QueueListenerEndpointRegistry registry;

	@Autowired
	private PlatformTransactionManager transactionManager;

	@Autowired
	private SubscribableChannel errorChannel;

	@Autowired
	private TestObservationRegistry observations;

	@Test
	void aGroupIsADurableQueueBoundToTheDestinationAndConcurrencyIsItsPollers() {
		assertThat(this.admin.declaredQueues()).contains("orders.billing", "invoices.ledger", "flaky.g", "batched.g",
				"audit.g");
		QueueListenerContainer billing = this.registry.getListenerContainers().stream()
			.filter((c) -> c.endpoint().containerProperties().queues().equals(List.of("orders.billing")))
			.findFirst().orElseThrow();
		assertThat(billing.endpoint().containerProperties().concurrency()).isEqualTo(3);
		assertThat(billing.isRunning()).isTrue();
	}

	@Test
	void thePartitionKeyIsTheFifoGroupSoEachCustomersOrderHoldsAcrossConcurrentConsumers() {
		List<String> customers = List.of("ann", "bob", "cid");
		IntStream.range(0, 20).forEach((sequence) -> customers.forEach((customer) -> this.streamBridge.send("orders",
				MessageBuilder.withPayload(new Order(customer, sequence, 10)).setHeader("customer", customer).build())));

		await().atMost(WAIT).until(() -> this.ledger.size() == 60);
		Map<String, List<Invoice>> invoices = this.ledger.byCustomer();
		assertThat(invoices).containsOnlyKeys(customers);
		invoices.forEach((customer, list) -> assertThat(list).extracting(Invoice::sequence)
			.as(customer).containsExactlyElementsOf(IntStream.range(0, 20).boxed().toList()));
		assertThat(invoices.get("ann")).allMatch((invoice) -> invoice.total() == 20);
	}

	@Test
	void retrySettingsAreTheQueuePolicyAndAnExhaustedMessageReachesTheErrorChannelThenTheDeadLetterQueue() {
		List<ErrorMessage> errors = new CopyOnWriteArrayList<>();
		this.errorChannel.subscribe((message) -> errors.add((ErrorMessage) message));
		QueueDefinition policy = this.admin.list().stream().map(QueueAdmin.QueueInfo::definition)
			.filter((definition) -> definition.name().equals("flaky.g")).findFirst().orElseThrow();
		assertThat(policy).isEqualTo(new QueueDefinition("flaky.g", 2, Duration.ofMillis(50), 1.5,
				Duration.ofMillis(100), null));

		this.streamBridge.send("to-flaky", new Order("fail", 1, 1));

		await().atMost(WAIT).until(() -> this.queues.deadLetters("flaky.g", Object.class).stream()
			.anyMatch((dead) -> dead.lastError().contains("Failed 2 of 2")));
		StoredMessage<Object> dead = this.queues.deadLetters("flaky.g", Object.class).stream()
			.filter((message) -> message.lastError().contains("Failed 2 of 2")).findFirst().orElseThrow();
		assertThat(dead.payload()).isEqualTo(Map.of("customer", "fail", "sequence", 1, "amount", 1));
		assertThat(dead.lastError()).contains("Failed 2 of 2 attempts").contains("no such customer");
		assertThat(this.received.flaky).hasSize(2);
		await().atMost(WAIT).until(() -> !errors.isEmpty());
		assertThat(errors.get(0).getOriginalMessage().getHeaders().get(PgQueueBinderHeaders.QUEUE)).isEqualTo("flaky.g");
	}

	@Test
	void aPayloadThatDoesNotConvertIsDeadLetteredAtOnce() {
		this.received.flaky.clear();
		this.template.publish("flaky", "x", "this is not an order");

		await().atMost(WAIT).until(() -> this.queues.deadLetters("flaky.g", Object.class).stream()
			.anyMatch((dead) -> "this is not an order".equals(dead.payload())));
		StoredMessage<Object> dead = this.queues.deadLetters("flaky.g", Object.class).stream()
			.filter((message) -> "this is not an order".equals(message.payload())).findFirst().orElseThrow();
		assertThat(dead.lastError()).contains("does not convert");
		assertThat(this.received.flaky).as("never handed to the handler, never retried").isEmpty();
	}

	@Test
	void batchModeHandsTheHandlerListsOfConvertedPayloads() {
		IntStream.range(0, 12).forEach((i) -> this.streamBridge.send("to-batched", new Order("b", i, i)));

		await().atMost(WAIT).until(() -> this.received.batches.stream().mapToInt(List::size).sum() == 12);
		assertThat(this.received.batches).allMatch((batch) -> batch.size() <= 5);
		assertThat(this.received.batches.stream().flatMap(List::stream).map(Order::sequence).sorted().toList())
			.isEqualTo(IntStream.range(0, 12).boxed().toList());
	}

	@Test
	void headersTravelBothWaysAndTheFilterLeavesOtherMessagesInTheQueue() {
		String traceparent = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01";
		this.streamBridge.send("to-audit", MessageBuilder.withPayload("hello").setHeader("tenant", "acme")
			.setHeader("traceparent", traceparent).setHeader("attempts", 7).build());
		this.streamBridge.send("to-audit", MessageBuilder.withPayload("not ours").setHeader("tenant", "other").build());

		await().atMost(WAIT).until(() -> this.received.audit.stream().anyMatch((m) -> m.getPayload().equals("hello")));
		Message<String> message = this.received.audit.stream().filter((m) -> m.getPayload().equals("hello"))
			.findFirst().orElseThrow();
		assertThat(message.getPayload()).isEqualTo("hello");
		assertThat(message.getHeaders()).containsEntry("tenant", "acme").containsEntry("traceparent", traceparent)
			.containsEntry("attempts", "7").containsKey(PgQueueBinderHeaders.ID);
		assertThat(message.getHeaders().get("contentType").toString()).startsWith("application/json");
		// The consumer sees "hello" before the transaction that deletes it commits.
		await().atMost(WAIT).untilAsserted(() -> assertThat(this.queues.sent("audit.g", String.class))
			.extracting(StoredMessage::payload)
			.containsExactly("not ours"));
		assertThat(this.received.audit).noneMatch((m) -> m.getPayload().equals("not ours"));
	}

	@Test
	void sendsAndHandlerCallsAreObservedAsPgQueuesOwn() {
		this.streamBridge.send("to-audit", MessageBuilder.withPayload("observed").setHeader("tenant", "acme").build());

		await().atMost(WAIT).untilAsserted(() -> {
			TestObservationRegistryAssert.assertThat(this.observations).hasObservationWithNameEqualTo("pgqueue.send");
			TestObservationRegistryAssert.assertThat(this.observations).hasObservationWithNameEqualTo("pgqueue.process");
		});
	}

	@Test
	void aProducerInTheCallersTransactionSendsOnlyIfItCommits() {
		TransactionTemplate transaction = new TransactionTemplate(this.transactionManager);
		transaction.executeWithoutResult((status) -> {
			this.streamBridge.send("later", "rolled back");
			status.setRollbackOnly();
		});
		assertThat(this.queues.sent("later.g", String.class)).extracting(StoredMessage::payload)
			.doesNotContain("rolled back");

		transaction.executeWithoutResult((status) -> this.streamBridge.send("later", "committed"));
		assertThat(this.queues.sent("later.g", String.class)).extracting(StoredMessage::payload)
			.contains("committed").doesNotContain("rolled back");
	}

	@Test
	void producerPriorityAndDelayAreTheMessagesAndHeadersOverrideThem() {
		this.streamBridge.send("later", "by the producer's settings");
		this.streamBridge.send("later", MessageBuilder.withPayload("by its headers")
			.setHeader(PgQueueBinderHeaders.PRIORITY, 1).setHeader(PgQueueBinderHeaders.DELAY, 0).build());

		List<StoredMessage<String>> sent = this.queues.sent("later.g", String.class).stream()
			.filter((message) -> message.payload().startsWith("by ")).toList();
		assertThat(sent).extracting(StoredMessage::payload).containsExactly("by the producer's settings", "by its headers");
		assertThat(sent).extracting(StoredMessage::priority).containsExactly(3, 1);
		assertThat(sent.get(0).visibleAt()).isAfter(java.time.Instant.now().plus(Duration.ofMinutes(59)));
		assertThat(sent.get(1).visibleAt()).isBefore(java.time.Instant.now().plusSeconds(1));
	}

	@Test
	void aFailedSendOfAProducerWithItsErrorChannelEnabledReachesTheErrorChannelAndTheCaller() {
		List<ErrorMessage> errors = new CopyOnWriteArrayList<>();
		this.errorChannel.subscribe((message) -> errors.add((ErrorMessage) message));
		Message<String> bad = MessageBuilder.withPayload("no priority").setHeader(PgQueueBinderHeaders.PRIORITY, "high")
			.build();

		assertThatThrownBy(() -> this.streamBridge.send("strict", bad)).hasStackTraceContaining("pgqueue_priority");
		assertThatThrownBy(() -> this.streamBridge.send("later", bad)).hasStackTraceContaining("pgqueue_priority");

		List<ErrorMessage> strict = errors.stream()
			.filter((error) -> error.getPayload().getMessage().contains("destination 'strict'"))
			.toList();
		assertThat(strict).hasSize(1);
		assertThat(strict.get(0).getPayload()).isInstanceOf(MessagingException.class)
			.hasMessageContaining("pgqueue_priority must be an integer");
		assertThat(strict.get(0).getOriginalMessage().getHeaders()).containsEntry(PgQueueBinderHeaders.PRIORITY, "high");
		assertThat(errors).as("a producer without an error channel only throws")
			.noneMatch((error) -> error.getPayload().getMessage().contains("destination 'later'"));
		assertThat(this.queues.sent("strict.g", String.class)).isEmpty();
	}

	/** What the handlers of the features received. */
	static class Received {

		final List<Order> flaky = new CopyOnWriteArrayList<>();

		final List<List<Order>> batches = new CopyOnWriteArrayList<>();

		final List<Message<String>> audit = new CopyOnWriteArrayList<>();

	}

	@Import(OrdersApplication.class)
	static class FeaturesApplication {

		@Bean
		TestObservationRegistry observationRegistry() {
			return TestObservationRegistry.create();
		}

		@Bean
		Received received() {
			return new Received();
		}

		@Bean
		Consumer<Order> flaky(Received received) {
			return (order) -> {
				received.flaky.add(order);
				throw new IllegalStateException("no such customer: " + order.customer());
			};
		}

		@Bean
		Consumer<List<Order>> batched(Received received) {
			return (orders) -> received.batches.add(new ArrayList<>(orders));
		}

		@Bean
		Consumer<Message<String>> audit(Received received) {
			return received.audit::add;
		}

	}

}
