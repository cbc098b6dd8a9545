package io.github.pgqueue.stream.binder;

import java.time.Duration;
import java.util.HashMap;
import java.util.Map;
import java.util.Optional;

import io.github.pgqueue.Lease;
import io.github.pgqueue.QueueOperations;

import org.springframework.integration.IntegrationMessageHeaderAccessor;
import org.springframework.integration.acks.AcknowledgmentCallback;
import org.springframework.integration.core.MessageSource;
import org.springframework.messaging.Message;
import org.springframework.messaging.support.GenericMessage;

/**
 * The consumer side of a polled binding ({@code PollableMessageSource}): each receive claims the
 * group queue's next message (that matches the binding's filter) as a {@link Lease}, on a session
 * of its own, and hands its bytes on with an acknowledgment callback that completes it. Accepted,
 * it is acked; requeued, it is released with its attempt counted (so a message requeued again and
 * again reaches the queue's max attempts and is dead-lettered); rejected, it goes to the queue's
 * dead-letter queue. The lease keeps a connection of the pool until the message is acknowledged.
 */
final class PgQueueMessageSource implements MessageSource<byte[]> {

	private final QueueOperations queues;

	private final String queue;

	private final String filter;

	private final MessageMapping mapping;

	/**
	 * @param queues a template whose payload converter hands the stored text on
	 * ({@link MessageMapping#STORED_TEXT})
	 */
	PgQueueMessageSource(QueueOperations queues, String queue, String filter, MessageMapping mapping) {
		this.queues = queues;
		this.queue = queue;
		this.filter = filter;
		this.mapping = mapping;
	}

	@Override
	public Message<byte[]> receive() {
		Optional<Lease<String>> received = (this.filter != null) ? this.queues.receive(this.queue, this.filter, String.class)
				: this.queues.receive(this.queue, String.class);
		if (received.isEmpty()) {
			return null;
		}
		Lease<String> lease = received.get();
		try {
			Message<byte[]> message = this.mapping.toMessage(lease.message());
			Map<String, Object> headers = new HashMap<>(message.getHeaders());
			headers.put(IntegrationMessageHeaderAccessor.ACKNOWLEDGMENT_CALLBACK, new LeaseAcknowledgment(lease));
			return new GenericMessage<>(message.getPayload(), headers);
		}
		catch (RuntimeException ex) {
			// a body the mapping cannot read is released, its attempt counted, and the error thrown
			lease.nack(Duration.ZERO);
			lease.close();
			throw ex;
		}
	}

	/** Completes a leased message as the polled consumer acknowledges it, then returns its connection. */
	private static final class LeaseAcknowledgment implements AcknowledgmentCallback {

		private final Lease<String> lease;

		private volatile boolean acknowledged;

		private volatile boolean autoAck = true;

		LeaseAcknowledgment(Lease<String> lease) {
			this.lease = lease;
		}

		@Override
		public void acknowledge(Status status) {
			if (this.acknowledged) {
				return;
			}
			this.acknowledged = true;
			try {
				switch (status) {
					case ACCEPT -> this.lease.ack();
					case REQUEUE -> this.lease.nack(Duration.ZERO);
					case REJECT -> this.lease.reject("Rejected by the polled consumer");
				}
			}
			finally {
				this.lease.close();
			}
		}

		@Override
		public boolean isAcknowledged() {
			return this.acknowledged;
		}

		@Override
		public void noAutoAck() {
			this.autoAck = false;
		}

		@Override
		public boolean isAutoAck() {
			return this.autoAck;
		}

	}

}
