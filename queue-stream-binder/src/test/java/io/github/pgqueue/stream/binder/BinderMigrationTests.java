package io.github.pgqueue.stream.binder;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.stream.IntStream;

import io.github.pgqueue.stream.binder.orders.Invoice;
import io.github.pgqueue.stream.binder.orders.Ledger;
import io.github.pgqueue.stream.binder.orders.Order;
import io.github.pgqueue.stream.binder.orders.OrdersApplication;
import io.github.pgqueue.testing.EmbeddedPostgres;
import org.junit.jupiter.api.Test;

import org.springframework.boot.builder.SpringApplicationBuilder;
import org.springframework.cloud.stream.function.StreamBridge;
import org.springframework.context.ConfigurableApplicationContext;
import org.springframework.kafka.test.EmbeddedKafkaKraftBroker;
import org.springframework.messaging.support.MessageBuilder;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

/**
 * The migration path: {@link OrdersApplication}, code and bindings unchanged, runs on the pgqueue
 * binder and on the Kafka binder (an in-JVM Kafka broker); the same orders give the same
 * invoices, each customer's in the order its orders were sent. Only the binder is chosen
 * differently, as swapping the binder dependency would.
 */
class BinderMigrationTests {

	private static final List<String> CUSTOMERS = List.of("ann", "bob", "cid", "dan");

	private static final int ORDERS_PER_CUSTOMER = 15;

	/** The application's own configuration, the same on every binder. */
	private static final String[] BINDINGS = {
			"spring.main.banner-mode=off",
			"spring.cloud.function.definition=invoice;record",
			"spring.cloud.stream.bindings.orders.destination=orders",
			"spring.cloud.stream.bindings.orders.producer.partition-key-expression=headers['customer']",
			"spring.cloud.stream.bindings.orders.producer.partition-count=3",
			"spring.cloud.stream.bindings.orders.producer.required-groups=billing",
			"spring.cloud.stream.bindings.invoice-in-0.destination=orders",
			"spring.cloud.stream.bindings.invoice-in-0.group=billing",
			"spring.cloud.stream.bindings.invoice-in-0.consumer.concurrency=3",
			"spring.cloud.stream.bindings.invoice-out-0.destination=invoices",
			"spring.cloud.stream.bindings.invoice-out-0.producer.partition-key-expression=headers['customer']",
			"spring.cloud.stream.bindings.invoice-out-0.producer.partition-count=3",
			"spring.cloud.stream.bindings.invoice-out-0.producer.required-groups=ledger",
			"spring.cloud.stream.bindings.record-in-0.destination=invoices",
			"spring.cloud.stream.bindings.record-in-0.group=ledger",
			"spring.cloud.stream.bindings.record-in-0.consumer.concurrency=3" };

	@Test
	void theSameApplicationGivesTheSameInvoicesInTheSamePerCustomerOrderOnPgQueueAndOnKafka() {
		EmbeddedPostgres postgres = EmbeddedPostgres.get();
		postgres.reset();
		String[] database = { "spring.datasource.url=" + postgres.jdbcUrl(),
				"spring.datasource.username=" + postgres.username() };

		Map<String, List<Invoice>> onPgQueue = run(database, "spring.cloud.stream.default-binder=pgqueue");

		EmbeddedKafkaKraftBroker kafka = new EmbeddedKafkaKraftBroker(1, 3, "orders", "invoices");
		kafka.afterPropertiesSet();
		Map<String, List<Invoice>> onKafka;
		try {
			onKafka = run(database, "spring.cloud.stream.default-binder=kafka",
					"spring.cloud.stream.kafka.binder.brokers=" + kafka.getBrokersAsString());
		}
		finally {
			kafka.destroy();
		}

		assertThat(onPgQueue).isEqualTo(onKafka).containsOnlyKeys(CUSTOMERS);
		onPgQueue.forEach((customer, invoices) -> assertThat(invoices).extracting(Invoice::sequence).as(customer)
			.containsExactlyElementsOf(IntStream.range(0, ORDERS_PER_CUSTOMER).boxed().toList()));
	}

	/** Runs the application with {@code properties} on top of its bindings; what its ledger recorded. */
	private static Map<String, List<Invoice>> run(String[] database, String... properties) {
		List<String> all = new ArrayList<>(List.of(BINDINGS));
		all.addAll(List.of(database));
		all.addAll(List.of(properties));
		try (ConfigurableApplicationContext application = new SpringApplicationBuilder(OrdersApplication.class)
			.properties(all.toArray(String[]::new))
			.run()) {
			StreamBridge streamBridge = application.getBean(StreamBridge.class);
			for (int sequence = 0; sequence < ORDERS_PER_CUSTOMER; sequence++) {
				for (String customer : CUSTOMERS) {
					streamBridge.send("orders", MessageBuilder.withPayload(new Order(customer, sequence, 10 + sequence))
						.setHeader("customer", customer).build());
				}
			}
			Ledger ledger = application.getBean(Ledger.class);
			await().atMost(Duration.ofSeconds(60)).until(() -> ledger.size() == CUSTOMERS.size() * ORDERS_PER_CUSTOMER);
			return ledger.byCustomer();
		}
	}

}
