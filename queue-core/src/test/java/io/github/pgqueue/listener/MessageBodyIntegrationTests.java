package io.github.pgqueue.listener;

import java.time.Duration;
import java.util.List;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;

import io.github.pgqueue.ConsumptionMode;
import io.github.pgqueue.JacksonPayloadConverter;
import io.github.pgqueue.JaxbPayloadConverter;
import io.github.pgqueue.Lease;
import io.github.pgqueue.PayloadConverter;
import io.github.pgqueue.QueueContext;
import io.github.pgqueue.QueueDefinition;
import io.github.pgqueue.QueueMessage;
import io.github.pgqueue.QueueTemplate;
import io.github.pgqueue.SendOptions;
import io.github.pgqueue.testing.EmbeddedPostgres;
import io.github.pgqueue.testing.ListenerFixture;
import io.github.pgqueue.testing.PostgresExtension;
import jakarta.xml.bind.annotation.XmlAccessType;
import jakarta.xml.bind.annotation.XmlAccessorType;
import jakarta.xml.bind.annotation.XmlRootElement;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;

import org.springframework.jdbc.core.JdbcTemplate;

import static io.github.pgqueue.testing.Db.count;
import static io.github.pgqueue.testing.Db.lastError;
import static io.github.pgqueue.testing.Db.queueOf;
import static io.github.pgqueue.testing.ListenerFixture.batchEndpoint;
import static io.github.pgqueue.testing.ListenerFixture.endpoint;
import static io.github.pgqueue.testing.ListenerFixture.properties;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatIllegalArgumentException;
import static org.awaitility.Awaitility.await;

/**
 * Bodies that are not JSON: text and XML, kept in the jsonb column as one JSON string with their
 * content type in a header, readable from SQL, and read by listeners and {@code receive}.
 */
@ExtendWith(PostgresExtension.class)
class MessageBodyIntegrationTests {

	private static final String XML_HEADERS = "{\"pgqueue-content-type\": \"application/xml\"}";

	private final EmbeddedPostgres postgres = EmbeddedPostgres.get();

	private final JdbcTemplate jdbc = new JdbcTemplate(this.postgres.dataSource());

	@RegisterExtension
	final ListenerFixture listeners = ListenerFixture.consumers("bodies", 4)
		.withTemplate((app) -> new QueueTemplate(QueueContext.builder(app)
			.payloadConverter(new JaxbPayloadConverter(new JacksonPayloadConverter())).build()));

	private final QueueTemplate xmlTemplate = this.listeners.template();

	@Test
	void aStringIsATextBodyThatSqlReadsAsText() {
		QueueTemplate template = QueueTemplate.builder(this.postgres.dataSource()).build();
		long id = template.send("notes", "Hello, \"world\" <3");
		assertThat(this.jdbc.queryForMap("SELECT payload #>> '{}' AS text, headers->>'pgqueue-content-type' AS type "
				+ "FROM pgqueue.message WHERE id = ?", id))
			.containsEntry("text", "Hello, \"world\" <3").containsEntry("type", "text/plain");
		try (Lease<String> lease = template.receive("notes", String.class).orElseThrow()) {
			assertThat(lease.payload()).isEqualTo("Hello, \"world\" <3");
			assertThat(lease.message().header(PayloadConverter.CONTENT_TYPE_HEADER)).isEqualTo("text/plain");
			lease.ack();
		}
	}

	@Test
	void anXmlMappedObjectIsAnXmlBodyThatSqlCastsToXml() {
		long id = this.xmlTemplate.send("orders", new Order("A-17", 3));
		assertThat(this.jdbc.queryForObject("SELECT headers->>'pgqueue-content-type' FROM pgqueue.message WHERE id = ?",
				String.class, id)).isEqualTo("application/xml");
		assertThat(this.jdbc.queryForObject("SELECT (xpath('/order/sku/text()', (payload #>> '{}')::xml))[1]::text "
				+ "FROM pgqueue.message WHERE id = ?", String.class, id)).isEqualTo("A-17");
		try (Lease<Order> lease = this.xmlTemplate.receive("orders", Order.class).orElseThrow()) {
			assertThat(lease.payload()).isEqualTo(new Order("A-17", 3));
			lease.ack();
		}
		long again = this.xmlTemplate.send("orders", new Order("B-2", 1));
		try (Lease<String> lease = this.xmlTemplate.receive("orders", String.class).orElseThrow()) {
			assertThat(lease.message().id()).isEqualTo(again);
			assertThat(lease.payload()).isEqualTo("<order><sku>B-2</sku><quantity>1</quantity></order>");
			lease.ack();
		}
	}

	@Test
	void jsonPayloadsKeepTheirBodyAndGetNoHeader() {
		long id = this.xmlTemplate.send("orders", new JsonOrder("C-9", 2));
		assertThat(this.jdbc.queryForMap("SELECT payload::text AS payload, headers::text AS headers FROM pgqueue.message "
				+ "WHERE id = ?", id)).containsEntry("payload", "{\"sku\": \"C-9\", \"quantity\": 2}")
			.containsEntry("headers", "{}");
	}

	/** A listener's own converter reads its payloads; the context's is left to the rest. */
	@ParameterizedTest
	@EnumSource(ConsumptionMode.class)
	void aListenersOwnConverterReadsItsPayloads(ConsumptionMode mode) throws Exception {
		PayloadConverter storedText = new PayloadConverter() {

			@Override
			public String write(Object payload) {
				throw new UnsupportedOperationException();
			}

			@Override
			public Object read(String json, java.lang.reflect.Type type) {
				return "as stored: " + json;
			}

		};
		this.xmlTemplate.send("raw", new JsonOrder("E-4", 7));
		BlockingQueue<Object> received = new LinkedBlockingQueue<>();
		start(QueueListenerEndpoint.builder("raw-" + mode)
			.listener(String.class, (message, ack) -> received.add(message.payload()))
			.payloadConverter(storedText)
			.containerProperties(properties("raw").mode(mode).build())
			.build());
		assertThat(received.poll(20, TimeUnit.SECONDS)).isEqualTo("as stored: {\"sku\": \"E-4\", \"quantity\": 7}");
	}

	@ParameterizedTest
	@EnumSource(ConsumptionMode.class)
	void aListenerReadsAnXmlBodyInsertedWithPlainSql(ConsumptionMode mode) throws Exception {
		insertXml("orders", "<order><sku>D-1</sku><quantity>5</quantity></order>");
		BlockingQueue<QueueMessage<Object>> received = new LinkedBlockingQueue<>();
		start(endpoint("orders", Order.class, (message, ack) -> received.add(message), properties("orders").mode(mode)));
		QueueMessage<Object> message = received.poll(20, TimeUnit.SECONDS);
		assertThat(message).isNotNull();
		assertThat(message.payload()).isEqualTo(new Order("D-1", 5));
		assertThat(message.header(PayloadConverter.CONTENT_TYPE_HEADER)).isEqualTo("application/xml");
		await().atMost(Duration.ofSeconds(10)).until(() -> count("orders") == 0);
	}

	@Test
	void aBatchListenerReadsXmlAndTextBodiesAndLeavesOutTheMalformedOne() throws Exception {
		this.xmlTemplate.sendBatch("orders", List.of(new Order("E-1", 1), new Order("E-2", 2)));
		long malformed = insertXml("orders", "<order><sku>E-3</sku>");
		BlockingQueue<List<QueueMessage<Object>>> batches = new LinkedBlockingQueue<>();
		start(batchEndpoint("orders", Order.class, batches::add, properties("orders")));
		List<QueueMessage<Object>> batch = batches.poll(20, TimeUnit.SECONDS);
		assertThat(batch).extracting(QueueMessage::payload).containsExactly(new Order("E-1", 1), new Order("E-2", 2));
		await().atMost(Duration.ofSeconds(10)).until(() -> "orders.dlq".equals(queueOf(malformed)));
		assertThat(lastError(malformed)).contains("Cannot read application/xml body as " + Order.class.getName());
	}

	@Test
	void aMalformedXmlBodyIsDeadLetteredWithTheParserErrorAndTheListenerGoesOn() throws Exception {
		long malformed = insertXml("orders", "<order><sku>F-1</sku><quantity>1</quantity></ordre>");
		long next = this.xmlTemplate.send("orders", new Order("F-2", 1));
		BlockingQueue<Long> handled = new LinkedBlockingQueue<>();
		start(endpoint("orders", Order.class, (message, ack) -> handled.add(message.id()), properties("orders")));
		assertThat(handled.poll(20, TimeUnit.SECONDS)).isEqualTo(next);
		await().atMost(Duration.ofSeconds(10)).until(() -> "orders.dlq".equals(queueOf(malformed)));
		assertThat(lastError(malformed)).startsWith("Cannot read application/xml body as " + Order.class.getName() + ": ")
			.contains("ParseError at [row,col]:[1,46] Message: The element type \"order\" must be terminated");
		assertThat(handled).isEmpty();
	}

	@Test
	void receiveDeadLettersAMalformedXmlBodyAndReturnsTheNextMessage() {
		long malformed = insertXml("orders", "not xml at all");
		long next = this.xmlTemplate.send("orders", new Order("G-1", 1));
		try (Lease<Order> lease = this.xmlTemplate.receive("orders", Order.class).orElseThrow()) {
			assertThat(lease.message().id()).isEqualTo(next);
			lease.ack();
		}
		assertThat(queueOf(malformed)).isEqualTo("orders.dlq");
		assertThat(lastError(malformed)).startsWith("Cannot read application/xml body as " + Order.class.getName());
	}

	@Test
	void anXmlBodyWithAnExternalEntityIsNotResolved() {
		long id = insertXml("orders", "<!DOCTYPE order [<!ENTITY secret SYSTEM \"file:///etc/hostname\">]>"
				+ "<order><sku>&secret;</sku><quantity>1</quantity></order>");
		assertThat(this.xmlTemplate.receive("orders", Order.class)).isEmpty();
		assertThat(queueOf(id)).isEqualTo("orders.dlq");
		assertThat(lastError(id)).startsWith("Cannot read application/xml body").contains("secret");
	}

	@Test
	void anXmlBodyIsReadAsAStringWithoutAnXmlConverter() {
		QueueTemplate json = QueueTemplate.builder(this.postgres.dataSource()).build();
		insertXml("orders", "<order><sku>H-1</sku></order>");
		try (Lease<String> lease = json.receive("orders", String.class).orElseThrow()) {
			assertThat(lease.payload()).isEqualTo("<order><sku>H-1</sku></order>");
			lease.ack();
		}
		long id = insertXml("orders", "<order><sku>H-2</sku></order>");
		assertThat(json.receive("orders", JsonOrder.class)).isEmpty();
		assertThat(lastError(id)).contains("reads XML bodies only as String");
	}

	@Test
	void aStringPayloadMayNameAnXmlContentType() {
		QueueTemplate json = QueueTemplate.builder(this.postgres.dataSource()).build();
		long id = json.send("orders", "<order><sku>I-1</sku><quantity>4</quantity></order>", SendOptions.builder()
			.header(PayloadConverter.CONTENT_TYPE_HEADER, "application/xml").build());
		assertThat(this.jdbc.queryForObject("SELECT headers->>'pgqueue-content-type' FROM pgqueue.message WHERE id = ?",
				String.class, id)).isEqualTo("application/xml");
		try (Lease<Order> lease = this.xmlTemplate.receive("orders", Order.class).orElseThrow()) {
			assertThat(lease.payload()).isEqualTo(new Order("I-1", 4));
			lease.ack();
		}
	}

	@Test
	void aContentTypeHeaderTheConverterDoesNotWriteIsRefused() {
		assertThatIllegalArgumentException()
			.isThrownBy(() -> this.xmlTemplate.send("orders", new JsonOrder("J-1", 1), SendOptions.builder()
				.header(PayloadConverter.CONTENT_TYPE_HEADER, "application/xml").build()))
			.withMessageContaining("is 'application/xml', but the payload converter writes this "
					+ JsonOrder.class.getName() + " as JSON");
		assertThatIllegalArgumentException()
			.isThrownBy(() -> this.xmlTemplate.sendBatch("orders", List.of(new Order("J-2", 1), new JsonOrder("J-3", 1))))
			.withMessageContaining("must be of one content type, but payload 0 (" + Order.class.getName()
					+ ") is application/xml and payload 1 (" + JsonOrder.class.getName() + ") is JSON");
		assertThat(count("orders")).isZero();
	}

	@Test
	void aBodyWhoseContentTypeSaysTextButIsAJsonObjectCannotBeReadAsXml() {
		long id = this.jdbc.queryForObject("INSERT INTO pgqueue.message (queue, payload, headers) VALUES ('orders', "
				+ "'{\"sku\": \"K-1\"}', ?::jsonb) RETURNING id", Long.class, XML_HEADERS);
		assertThat(this.xmlTemplate.receive("orders", Order.class)).isEmpty();
		assertThat(lastError(id)).isEqualTo("Cannot read application/xml body: the payload column must hold its text "
				+ "as one JSON string, but holds a JSON object");
	}

	private long insertXml(String queue, String xml) {
		return this.jdbc.queryForObject("INSERT INTO pgqueue.message (queue, payload, headers) "
				+ "VALUES (?, to_jsonb(?::text), ?::jsonb) RETURNING id", Long.class, queue, xml, XML_HEADERS);
	}

	private void start(QueueListenerEndpoint endpoint) {
		this.listeners.admin().declare(QueueDefinition.of("orders").withMaxAttempts(2));
		this.listeners.start(endpoint);
	}

	/** An order mapped to XML with JAXB. */
	@XmlRootElement(name = "order")
	@XmlAccessorType(XmlAccessType.FIELD)
	public static class Order {

		private String sku;

		private int quantity;

		public Order() {
		}

		Order(String sku, int quantity) {
			this.sku = sku;
			this.quantity = quantity;
		}

		@Override
		public boolean equals(Object other) {
			return other instanceof Order order && order.sku.equals(this.sku) && order.quantity == this.quantity;
		}

		@Override
		public int hashCode() {
			return this.sku.hashCode() * 31 + this.quantity;
		}

		@Override
		public String toString() {
			return "Order[" + this.sku + ", " + this.quantity + "]";
		}

	}

	/** An order sent as JSON. */
	public record JsonOrder(String sku, int quantity) {
	}

}
