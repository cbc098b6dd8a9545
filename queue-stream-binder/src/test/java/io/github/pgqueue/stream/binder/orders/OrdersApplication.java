package io.github.pgqueue.stream.binder.orders;

import java.util.function.Consumer;
import java.util.function.Function;

import org.springframework.boot.SpringBootConfiguration;
import org.springframework.boot.autoconfigure.EnableAutoConfiguration;
import org.springframework.context.annotation.Bean;

/**
 * A small functional application written against Spring Cloud Stream only: orders become
 * invoices, invoices go to the ledger. Nothing in it names a broker; the binder on the classpath
 * (and {@code spring.cloud.stream.default-binder}) decides where it runs.
 */
@SpringBootConfiguration
@EnableAutoConfiguration
public class OrdersApplication {

	@Bean
	Ledger ledger() {
		return new Ledger();
	}

	@Bean
	Function<Order, Invoice> invoice() {
		return (order) -> new Invoice(order.customer(), order.sequence(), order.amount() * 2);
	}

	@Bean
	Consumer<Invoice> record(Ledger ledger) {
		return ledger::record;
	}

}
