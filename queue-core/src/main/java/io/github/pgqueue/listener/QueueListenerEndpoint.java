package io.github.pgqueue.listener;

import java.lang.reflect.Type;
import java.util.Objects;

import io.github.pgqueue.AckMode;
import io.github.pgqueue.PayloadConverter;
import io.github.pgqueue.internal.HeaderFilter;

/**
 * One listener: what a container calls for each message (or each claimed batch) and the payload
 * type it converts them to, under an id, with the {@link ContainerProperties} that say how to run
 * it (spring-kafka's {@code MethodKafkaListenerEndpoint}). Build one with {@link #builder(String)}:
 * <pre class="code">
 * QueueListenerEndpoint.builder("emails")
 *     .listener(Email.class, (message, ack) -&gt; send((Email) message.payload()))
 *     .containerProperties(ContainerProperties.builder("emails").concurrency(4).build())
 *     .build();
 * </pre>
 */
public final class QueueListenerEndpoint {

	private final String id;

	private final Type payloadType;

	private final QueueMessageListener listener;

	private final QueueBatchListener batchListener;

	private final ContainerProperties containerProperties;

	private final PayloadConverter payloadConverter;

	private QueueListenerEndpoint(Builder builder) {
		this.id = builder.id;
		this.payloadType = Objects.requireNonNull(builder.payloadType, () -> "Listener '" + this.id
				+ "' needs a message listener or a batch listener, with its payload type");
		this.listener = builder.listener;
		this.batchListener = builder.batchListener;
		this.payloadConverter = builder.payloadConverter;
		this.containerProperties = Objects.requireNonNull(builder.containerProperties,
				() -> "Listener '" + this.id + "' needs container properties, at least the queues it consumes");
		if (this.batchListener != null && this.containerProperties.ackMode() != AckMode.AUTO) {
			throw new IllegalArgumentException("Listener '" + this.id + "' is a batch listener; it acknowledges "
					+ "automatically (ackMode AUTO), not " + this.containerProperties.ackMode());
		}
		headerFilter(); // fails here, at startup, if the filter is not valid
	}

	/** Starts building the endpoint of listener {@code id}. */
	public static Builder builder(String id) {
		return new Builder(id);
	}

	/** The unique id of the listener, used in thread names, logs and metrics. */
	public String id() {
		return this.id;
	}

	/** The type payloads are converted to. */
	public Type payloadType() {
		return this.payloadType;
	}

	/** What reads this listener's payloads, or null for the context's {@link PayloadConverter}. */
	public PayloadConverter payloadConverter() {
		return this.payloadConverter;
	}

	/** What handles each message, or null for a batch listener. */
	public QueueMessageListener listener() {
		return this.listener;
	}

	/** What handles each claimed batch at once, or null for a message listener. */
	public QueueBatchListener batchListener() {
		return this.batchListener;
	}

	/** Whether the listener handles each claimed batch at once. */
	public boolean isBatch() {
		return this.batchListener != null;
	}

	/** How the container runs the listener. */
	public ContainerProperties containerProperties() {
		return this.containerProperties;
	}

	/** The parsed filter, or null when the endpoint takes every message. */
	HeaderFilter headerFilter() {
		return HeaderFilter.parse(this.containerProperties.filter(), " of listener '" + this.id + "'");
	}

	/** Builds a {@link QueueListenerEndpoint}: one listener, and the container properties. */
	public static final class Builder {

		private final String id;

		private Type payloadType;

		private QueueMessageListener listener;

		private QueueBatchListener batchListener;

		private ContainerProperties containerProperties;

		private PayloadConverter payloadConverter;

		private Builder(String id) {
			this.id = Objects.requireNonNull(id, "Listener id must not be null");
		}

		/** Handles one message at a time, its payload converted to {@code payloadType}. */
		public Builder listener(Type payloadType, QueueMessageListener listener) {
			return listeners(payloadType, Objects.requireNonNull(listener, "listener"), null);
		}

		/**
		 * Handles each claimed batch (up to the batch size, of one queue) at once, its payloads
		 * converted to {@code payloadType}; acknowledgment is automatic.
		 */
		public Builder batchListener(Type payloadType, QueueBatchListener batchListener) {
			return listeners(payloadType, null, Objects.requireNonNull(batchListener, "batchListener"));
		}

		private Builder listeners(Type payloadType, QueueMessageListener listener, QueueBatchListener batchListener) {
			if (this.listener != null || this.batchListener != null) {
				throw new IllegalStateException("Listener '" + this.id + "' already has a "
						+ ((this.listener != null) ? "message" : "batch") + " listener; give it exactly one");
			}
			this.payloadType = Objects.requireNonNull(payloadType, "payloadType");
			this.listener = listener;
			this.batchListener = batchListener;
			return this;
		}

		/** How the container runs the listener: its queues, pollers, modes and error handler. */
		public Builder containerProperties(ContainerProperties containerProperties) {
			this.containerProperties = Objects.requireNonNull(containerProperties, "containerProperties");
			return this;
		}

		/**
		 * What reads this listener's payloads instead of the context's {@link PayloadConverter}
		 * (spring-kafka's per-listener message converter); null, the default, for the context's.
		 */
		public Builder payloadConverter(PayloadConverter payloadConverter) {
			this.payloadConverter = payloadConverter;
			return this;
		}

		/**
		 * The endpoint.
		 * @throws IllegalArgumentException if a batch listener is given an ack mode other than
		 * {@link AckMode#AUTO}, or the filter is not valid
		 * @throws NullPointerException if the listener or the container properties are missing
		 */
		public QueueListenerEndpoint build() {
			return new QueueListenerEndpoint(this);
		}

	}

}
