package io.github.pgqueue.boot.autoconfigure;

import java.time.Duration;
import java.util.List;
import java.util.Objects;
import java.util.concurrent.CopyOnWriteArrayList;

import io.github.pgqueue.JacksonPayloadConverter;
import io.github.pgqueue.JaxbPayloadConverter;
import io.github.pgqueue.PayloadConverter;
import io.github.pgqueue.QueueMessage;
import io.github.pgqueue.QueueTemplate;
import io.github.pgqueue.annotation.QueueListener;
import io.github.pgqueue.testing.EmbeddedPostgres;
import io.github.pgqueue.testing.PostgresExtension;
import jakarta.xml.bind.JAXBContext;
import jakarta.xml.bind.annotation.XmlAccessType;
import jakarta.xml.bind.annotation.XmlAccessorType;
import jakarta.xml.bind.annotation.XmlRootElement;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;

import org.springframework.boot.autoconfigure.AutoConfigurations;
import org.springframework.boot.jdbc.autoconfigure.DataSourceAutoConfiguration;
import org.springframework.boot.test.context.FilteredClassLoader;
import org.springframework.boot.test.context.runner.ApplicationContextRunner;
import org.springframework.jdbc.core.JdbcTemplate;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

/** Text and XML bodies in a Spring Boot application: the converter chosen, and listeners that read them. */
@ExtendWith(PostgresExtension.class)
class MessageBodyAutoConfigurationTests {

	private final EmbeddedPostgres postgres = EmbeddedPostgres.get();

	private final ApplicationContextRunner runner = new ApplicationContextRunner()
		.withConfiguration(AutoConfigurations.of(DataSourceAutoConfiguration.class, PgQueueAutoConfiguration.class))
		.withPropertyValues("spring.datasource.url=" + this.postgres.jdbcUrl(),
				"spring.datasource.username=" + this.postgres.username(), "pgqueue.listener.poll-interval=200ms",
				"pgqueue.queues.notes.max-attempts=1", "pgqueue.queues.invoices.max-attempts=1",
				"pgqueue.queues.invoice-batches.max-attempts=1");

	@Test
	void readsAndWritesXmlWithJaxbWhenJaxbIsOnTheClasspath() {
		this.runner.run((context) -> {
			assertThat(context).getBean(PayloadConverter.class).isInstanceOf(JaxbPayloadConverter.class);
			assertThat(context.getBean(QueueTemplate.class).context().payloadConverter())
				.isSameAs(context.getBean(PayloadConverter.class));
		});
	}

	@Test
	void writesJsonAndTextOnlyWithoutJaxb() {
		this.runner.withClassLoader(new FilteredClassLoader(JAXBContext.class))
			.run((context) -> assertThat(context).getBean(PayloadConverter.class)
				.isExactlyInstanceOf(JacksonPayloadConverter.class));
	}

	@Test
	void usesThePayloadConverterOfTheApplication() {
		PayloadConverter own = new JacksonPayloadConverter();
		this.runner.withBean(PayloadConverter.class, () -> own).run((context) -> {
			assertThat(context).hasSingleBean(PayloadConverter.class);
			assertThat(context.getBean(QueueTemplate.class).context().payloadConverter()).isSameAs(own);
		});
	}

	@Test
	void listenersReceiveTextAndXmlBodiesAndAMalformedOneIsDeadLettered() {
		this.runner.withBean(Handlers.class).run((context) -> {
			QueueTemplate template = context.getBean(QueueTemplate.class);
			JdbcTemplate jdbc = new JdbcTemplate(this.postgres.dataSource());
			Handlers handlers = context.getBean(Handlers.class);
			template.send("notes", "call back at 5");
			template.send("invoices", new Invoice("INV-1", 120));
			long malformed = jdbc.queryForObject("INSERT INTO pgqueue.message (queue, payload, headers) VALUES "
					+ "('invoices', to_jsonb('<invoice><number>INV-2'::text), "
					+ "'{\"pgqueue-content-type\": \"application/xml\"}') RETURNING id", Long.class);
			template.sendBatch("invoice-batches", List.of(new Invoice("INV-3", 1), new Invoice("INV-4", 2)));

			await().atMost(Duration.ofSeconds(20)).until(() -> handlers.notes.size() == 1
					&& handlers.invoices.size() == 1 && handlers.batches.size() == 2);
			assertThat(handlers.notes).containsExactly("call back at 5");
			assertThat(handlers.invoices).singleElement().satisfies((message) -> {
				assertThat(message.payload()).isEqualTo(new Invoice("INV-1", 120));
				assertThat(message.header(PayloadConverter.CONTENT_TYPE_HEADER)).isEqualTo("application/xml");
			});
			assertThat(handlers.batches).containsExactly(new Invoice("INV-3", 1), new Invoice("INV-4", 2));
			await().atMost(Duration.ofSeconds(10)).until(() -> "invoices.dlq".equals(jdbc.queryForObject(
					"SELECT queue FROM pgqueue.message WHERE id = ?", String.class, malformed)));
			assertThat(jdbc.queryForObject("SELECT last_error FROM pgqueue.message WHERE id = ?", String.class, malformed))
				.startsWith("Cannot read application/xml body as " + Invoice.class.getName() + ": ParseError");
		});
	}

	static class Handlers {

		final List<String> notes = new CopyOnWriteArrayList<>();

		final List<QueueMessage<Invoice>> invoices = new CopyOnWriteArrayList<>();

		final List<Invoice> batches = new CopyOnWriteArrayList<>();

		@QueueListener(queues = "notes")
		void onNote(String text) {
			this.notes.add(text);
		}

		@QueueListener(queues = "invoices")
		void onInvoice(QueueMessage<Invoice> message) {
			this.invoices.add(message);
		}

		@QueueListener(queues = "invoice-batches", batch = true)
		void onInvoices(List<Invoice> invoices) {
			this.batches.addAll(invoices);
		}

	}

	/** An invoice mapped to XML with JAXB. */
	@XmlRootElement(name = "invoice")
	@XmlAccessorType(XmlAccessType.FIELD)
	public static class Invoice {

		private String number;

		private int cents;

		public Invoice() {
		}

		Invoice(String number, int cents) {
			this.number = number;
			this.cents = cents;
		}

		@Override
		public boolean equals(Object other) {
			return other instanceof Invoice invoice && Objects.equals(invoice.number, this.number)
					&& invoice.cents == this.cents;
		}

		@Override
		public int hashCode() {
			return Objects.hash(this.number, this.cents);
		}

		@Override
		public String toString() {
			return "Invoice[" + this.number + ", " + this.cents + "]";
		}

	}

}
