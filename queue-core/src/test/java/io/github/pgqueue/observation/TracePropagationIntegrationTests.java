package io.github.pgqueue.observation;

import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;

import com.zaxxer.hikari.HikariDataSource;
import io.github.pgqueue.ConsumptionMode;
import io.github.pgqueue.QueueAdmin;
import io.github.pgqueue.QueueContext;
import io.github.pgqueue.QueueDefinition;
import io.github.pgqueue.QueueMessage;
import io.github.pgqueue.QueueTemplate;
import io.github.pgqueue.listener.ContainerProperties;
import io.github.pgqueue.listener.QueueListenerEndpoint;
import io.github.pgqueue.listener.QueueListenerEndpointRegistry;
import io.github.pgqueue.testing.EmbeddedPostgres;
import io.github.pgqueue.testing.PostgresExtension;
import io.micrometer.observation.Observation;
import io.micrometer.observation.ObservationHandler.FirstMatchingCompositeObservationHandler;
import io.micrometer.observation.ObservationRegistry;
import io.micrometer.tracing.Span;
import io.micrometer.tracing.handler.DefaultTracingObservationHandler;
import io.micrometer.tracing.handler.PropagatingReceiverTracingObservationHandler;
import io.micrometer.tracing.handler.PropagatingSenderTracingObservationHandler;
import io.micrometer.tracing.otel.bridge.OtelCurrentTraceContext;
import io.micrometer.tracing.otel.bridge.OtelPropagator;
import io.micrometer.tracing.otel.bridge.OtelTracer;
import io.opentelemetry.api.trace.SpanKind;
import io.opentelemetry.api.trace.propagation.W3CTraceContextPropagator;
import io.opentelemetry.context.propagation.ContextPropagators;
import io.opentelemetry.sdk.testing.exporter.InMemorySpanExporter;
import io.opentelemetry.sdk.trace.SdkTracerProvider;
import io.opentelemetry.sdk.trace.data.SpanData;
import io.opentelemetry.sdk.trace.export.SimpleSpanProcessor;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.extension.ExtendWith;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;

import org.springframework.jdbc.core.JdbcTemplate;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

/**
 * Trace context travels in the message's headers: with Micrometer Tracing's propagating
 * handlers (the OpenTelemetry bridge, W3C propagation, spans kept in memory) the consumer span
 * is a child of the producer span, in both modes, and a message inserted by plain SQL with a
 * {@code traceparent} header continues that trace. A batch listener's call starts a trace of
 * its own, its messages keeping their senders' trace context in their headers.
 */
@ExtendWith(PostgresExtension.class)
class TracePropagationIntegrationTests {

	private final EmbeddedPostgres postgres = EmbeddedPostgres.get();

	private final HikariDataSource app = this.postgres.pool("trace-app", 6);

	private final HikariDataSource consumers = this.postgres.pool("trace-consumers", 6);

	private final InMemorySpanExporter spans = InMemorySpanExporter.create();

	private final SdkTracerProvider tracerProvider = SdkTracerProvider.builder()
		.addSpanProcessor(SimpleSpanProcessor.create(this.spans))
		.build();

	private final OtelTracer tracer;

	private final ObservationRegistry observations = ObservationRegistry.create();

	/** The trace and span the handler saw as current, by message payload. */
	private final Map<String, String> seenInHandler = new ConcurrentHashMap<>();

	private QueueListenerEndpointRegistry registry;

	TracePropagationIntegrationTests() {
		io.opentelemetry.api.trace.Tracer otel = this.tracerProvider.get("pgqueue-test");
		this.tracer = new OtelTracer(otel, new OtelCurrentTraceContext(), (event) -> {
		});
		OtelPropagator propagator = new OtelPropagator(
				ContextPropagators.create(W3CTraceContextPropagator.getInstance()), otel);
		this.observations.observationConfig()
			.observationHandler(new FirstMatchingCompositeObservationHandler(
					new PropagatingSenderTracingObservationHandler<>(this.tracer, propagator),
					new PropagatingReceiverTracingObservationHandler<>(this.tracer, propagator),
					new DefaultTracingObservationHandler(this.tracer)));
	}

	@AfterEach
	void stop() {
		if (this.registry != null) {
			this.registry.stop();
		}
		this.tracerProvider.close();
		this.consumers.close();
		this.app.close();
	}

	@ParameterizedTest
	@EnumSource(ConsumptionMode.class)
	void theConsumerSpanIsAChildOfTheProducerSpan(ConsumptionMode mode) {
		QueueTemplate template = template();
		new QueueAdmin(template.context()).declare(QueueDefinition.of("emails"));
		Observation request = Observation.start("checkout", this.observations);
		try (Observation.Scope scope = request.openScope()) {
			template.send("emails", "welcome");
		}
		finally {
			request.stop();
		}
		String headers = new JdbcTemplate(this.app).queryForObject("SELECT headers::text FROM pgqueue.message",
				String.class);
		assertThat(headers).contains("traceparent");
		start(template, mode);

		SpanData consumer = await().atMost(Duration.ofSeconds(20)).until(() -> span("emails process"),
				(span) -> span != null);
		SpanData producer = span("emails send");
		SpanData checkout = span("checkout");
		assertThat(producer.getKind()).isEqualTo(SpanKind.PRODUCER);
		assertThat(producer.getParentSpanId()).isEqualTo(checkout.getSpanId());
		assertThat(consumer.getKind()).isEqualTo(SpanKind.CONSUMER);
		assertThat(consumer.getTraceId()).isEqualTo(producer.getTraceId());
		assertThat(consumer.getParentSpanId()).isEqualTo(producer.getSpanId());
		assertThat(this.seenInHandler.get("welcome")).as("the consumer span is current in the handler")
			.isEqualTo(consumer.getTraceId() + "/" + consumer.getSpanId());
	}

	@ParameterizedTest
	@EnumSource(ConsumptionMode.class)
	void aPlainSqlInsertWithATraceparentContinuesThatTrace(ConsumptionMode mode) {
		QueueTemplate template = template();
		new QueueAdmin(template.context()).declare(QueueDefinition.of("emails"));
		String traceId = "4bf92f3577b34da6a3ce929d0e0e4736";
		String parentId = "00f067aa0ba902b7";
		new JdbcTemplate(this.app).update("INSERT INTO pgqueue.message (queue, payload, headers) VALUES "
				+ "('emails', '\"from-sql\"', jsonb_build_object('traceparent', ?::text))",
				"00-" + traceId + "-" + parentId + "-01");
		start(template, mode);

		SpanData consumer = await().atMost(Duration.ofSeconds(20)).until(() -> span("emails process"),
				(span) -> span != null);
		assertThat(consumer.getTraceId()).isEqualTo(traceId);
		assertThat(consumer.getParentSpanId()).isEqualTo(parentId);
		assertThat(this.seenInHandler.get("from-sql")).startsWith(traceId + "/");
	}

	@ParameterizedTest
	@EnumSource(ConsumptionMode.class)
	void aBatchListenerCallStartsATraceOfItsOwn(ConsumptionMode mode) {
		QueueTemplate template = template();
		new QueueAdmin(template.context()).declare(QueueDefinition.of("emails"));
		Observation request = Observation.start("checkout", this.observations);
		try (Observation.Scope scope = request.openScope()) {
			template.send("emails", "first");
			template.send("emails", "second");
		}
		finally {
			request.stop();
		}
		Map<String, String> traceparents = new ConcurrentHashMap<>();
		this.registry = new QueueListenerEndpointRegistry(template.context(), this.consumers, Duration.ofSeconds(5));
		this.registry.registerListenerEndpoint(QueueListenerEndpoint.builder("mailer")
				.batchListener(String.class, (messages) -> {
				Span current = this.tracer.currentSpan();
				this.seenInHandler.put("batch", (current != null)
						? current.context().traceId() + "/" + current.context().spanId() : "none");
				for (QueueMessage<Object> message : messages) {
					traceparents.put((String) message.payload(), message.headers().get("traceparent"));
				}
			})
				.containerProperties(ContainerProperties.builder(List.of("emails"))
					.pollInterval(Duration.ofMillis(50))
					.mode(mode)
					.observationEnabled(true)
					.build())
				.build());
		this.registry.start();

		SpanData batch = await().atMost(Duration.ofSeconds(20)).until(() -> span("emails process"),
				(span) -> span != null);
		SpanData checkout = span("checkout");
		assertThat(batch.getKind()).isEqualTo(SpanKind.CONSUMER);
		assertThat(batch.getTraceId()).isNotEqualTo(checkout.getTraceId());
		assertThat(batch.getParentSpanContext().isValid()).as("the batch span is a root").isFalse();
		assertThat(batch.getAttributes().asMap().toString()).contains("batch.size=2");
		assertThat(this.seenInHandler.get("batch")).isEqualTo(batch.getTraceId() + "/" + batch.getSpanId());
		assertThat(traceparents).containsOnlyKeys("first", "second")
			.allSatisfy((payload, traceparent) -> assertThat(traceparent).contains(checkout.getTraceId()));
	}

	private QueueTemplate template() {
		return QueueTemplate.builder(QueueContext.builder(this.app).observationRegistry(this.observations).build()).observationEnabled(true).build();
	}

	private void start(QueueTemplate template, ConsumptionMode mode) {
		this.registry = new QueueListenerEndpointRegistry(template.context(), this.consumers, Duration.ofSeconds(5));
		this.registry.registerListenerEndpoint(QueueListenerEndpoint.builder("mailer")
				.listener(String.class, (message, ack) -> {
					Span current = this.tracer.currentSpan();
					this.seenInHandler.put((String) message.payload(), (current != null)
							? current.context().traceId() + "/" + current.context().spanId() : "none");
				})
				.containerProperties(ContainerProperties.builder(List.of("emails"))
					.pollInterval(Duration.ofMillis(50))
					.mode(mode)
					.observationEnabled(true)
					.build())
				.build());
		this.registry.start();
	}

	private SpanData span(String name) {
		return this.spans.getFinishedSpanItems().stream().filter((span) -> span.getName().equals(name)).findFirst()
			.orElse(null);
	}

}
