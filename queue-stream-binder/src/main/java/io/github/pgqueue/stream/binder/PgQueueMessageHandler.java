package io.github.pgqueue.stream.binder;

import java.time.Duration;

import io.github.pgqueue.QueueOperations;
import io.github.pgqueue.SendOptions;

import org.springframework.context.Lifecycle;
import org.springframework.expression.EvaluationContext;
import org.springframework.expression.Expression;
import org.springframework.integration.handler.AbstractMessageHandler;
import org.springframework.messaging.Message;
import org.springframework.messaging.MessageChannel;
import org.springframework.messaging.MessageHandlingException;
import org.springframework.messaging.MessagingException;
import org.springframework.messaging.support.ErrorMessage;

/**
 * The producer side of a binding: publishes each message to the destination's exchange on the
 * caller's thread, so that a send inside the caller's transaction commits or rolls back with it.
 * The partition key becomes the message's FIFO group. With the producer's
 * {@code errorChannelEnabled}, a send that fails also goes, as an {@link ErrorMessage}, to the
 * binding's error channel {@code <destination>.errors}; the caller gets the exception either way,
 * since the send is synchronous.
 */
final class PgQueueMessageHandler extends AbstractMessageHandler implements Lifecycle {

	/** What a message's partition key is: from the producer's expression or extractor, else its header. */
	@FunctionalInterface
	interface PartitionKeys {

		Object keyOf(Message<?> message);

	}

	private final QueueOperations queues;

	private final String exchange;

	private final String routingKey;

	private final PgQueueProducerProperties properties;

	private final PartitionKeys partitionKeys;

	private final MessageMapping mapping;

	private final MessageChannel errorChannel;

	private volatile boolean running;

	PgQueueMessageHandler(QueueOperations queues, String exchange, PgQueueProducerProperties properties,
			PartitionKeys partitionKeys, MessageMapping mapping, MessageChannel errorChannel) {
		this.queues = queues;
		this.errorChannel = errorChannel;
		this.exchange = exchange;
		this.routingKey = (properties.getRoutingKey() != null) ? properties.getRoutingKey() : exchange;
		this.properties = properties;
		this.partitionKeys = partitionKeys;
		this.mapping = mapping;
	}

	/** Partition keys from {@code expression}, or from the {@value PgQueueBinderHeaders#PARTITION_KEY} header without one. */
	static PartitionKeys keys(Expression expression, EvaluationContext context) {
		if (expression == null) {
			return (message) -> message.getHeaders().get(PgQueueBinderHeaders.PARTITION_KEY);
		}
		return (message) -> expression.getValue(context, message);
	}

	@Override
	protected void handleMessageInternal(Message<?> message) {
		try {
			publish(message);
		}
		catch (RuntimeException ex) {
			if (this.errorChannel != null) {
				MessagingException failure = (ex instanceof MessagingException messaging
						&& messaging.getFailedMessage() != null) ? messaging
								: new MessageHandlingException(message, "Cannot send to destination '" + this.exchange
										+ "': " + ex.getMessage(), ex);
				try {
					this.errorChannel.send(new ErrorMessage(failure, message));
				}
				catch (RuntimeException channelFailure) {
					// the send's own failure is what the caller must see; the error flow's goes with it
					ex.addSuppressed(channelFailure);
				}
			}
			throw ex;
		}
	}

	private void publish(Message<?> message) {
		MessageMapping.Outbound outbound;
		SendOptions.Builder options = SendOptions.builder();
		try {
			outbound = this.mapping.toOutbound(message);
			outbound.headers().forEach(options::header);
			options.priority(priority(message)).delay(delay(message));
			Object key = this.partitionKeys.keyOf(message);
			if (key != null) {
				options.group(key.toString());
			}
		}
		catch (IllegalArgumentException ex) {
			throw new MessageHandlingException(message, "Cannot send to destination '" + this.exchange + "': "
					+ ex.getMessage(), ex);
		}
		this.queues.publish(this.exchange, this.routingKey, outbound.body(), options.build());
	}

	private int priority(Message<?> message) {
		Object value = message.getHeaders().get(PgQueueBinderHeaders.PRIORITY);
		if (value == null) {
			return this.properties.getPriority();
		}
		if (value instanceof Number number) {
			return number.intValue();
		}
		try {
			return Integer.parseInt(value.toString().trim());
		}
		catch (NumberFormatException ex) {
			throw new IllegalArgumentException("Header " + PgQueueBinderHeaders.PRIORITY + " must be an integer, was '"
					+ value + "'", ex);
		}
	}

	private Duration delay(Message<?> message) {
		Object value = message.getHeaders().get(PgQueueBinderHeaders.DELAY);
		if (value == null) {
			return this.properties.getDelay();
		}
		if (value instanceof Duration duration) {
			return duration;
		}
		if (value instanceof Number number) {
			return Duration.ofMillis(number.longValue());
		}
		try {
			return Duration.ofMillis(Long.parseLong(value.toString().trim()));
		}
		catch (NumberFormatException ex) {
			throw new IllegalArgumentException("Header " + PgQueueBinderHeaders.DELAY
					+ " must be a Duration or milliseconds, was '" + value + "'", ex);
		}
	}

	@Override
	public void start() {
		this.running = true;
	}

	@Override
	public void stop() {
		this.running = false;
	}

	@Override
	public boolean isRunning() {
		return this.running;
	}

}
