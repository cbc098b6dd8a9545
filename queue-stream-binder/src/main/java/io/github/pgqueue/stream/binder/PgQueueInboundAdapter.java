package io.github.pgqueue.stream.binder;

import java.util.concurrent.atomic.AtomicLong;

import io.github.pgqueue.listener.ContainerProperties;
import io.github.pgqueue.listener.QueueListenerContainer;
import io.github.pgqueue.listener.QueueListenerEndpoint;
import io.github.pgqueue.listener.QueueListenerEndpointRegistry;

import org.springframework.integration.core.Pausable;
import org.springframework.integration.endpoint.MessageProducerSupport;

/**
 * The consumer side of a binding: a pgqueue listener on the group's queue, registered with the
 * application's listener registry while the binding runs, that hands each message (or each claimed
 * batch) to the binding's channel on its poller thread. A handler that returns acks the message;
 * one that throws fails the attempt, and {@link BindingErrorHandler} decides what follows.
 */
final class PgQueueInboundAdapter extends MessageProducerSupport implements Pausable {

	private static final AtomicLong SEQUENCE = new AtomicLong();

	private final QueueListenerEndpointRegistry registry;

	private final String id;

	private final QueueListenerEndpoint endpoint;

	PgQueueInboundAdapter(QueueListenerEndpointRegistry registry, ContainerProperties.Builder container, boolean batch,
			MessageMapping mapping) {
		this.registry = registry;
		// registered when the binding starts: the registry starts it at once if it runs, else when it
		// starts, after sizing the pollers' connections for every listener it holds
		ContainerProperties properties = container.autoStartup(true).build();
		this.id = "binding-" + properties.queues().get(0) + "-" + SEQUENCE.incrementAndGet();
		QueueListenerEndpoint.Builder builder = QueueListenerEndpoint.builder(this.id).containerProperties(properties);
		builder.payloadConverter(MessageMapping.STORED_TEXT);
		if (batch) {
			builder.batchListener(String.class, (messages) -> sendMessage(mapping.toBatchMessage(messages)));
		}
		else {
			builder.listener(String.class, (message, ack) -> sendMessage(mapping.toMessage(message)));
		}
		this.endpoint = builder.build();
	}

	/** The id of the listener while the binding runs. */
	String listenerId() {
		return this.id;
	}

	@Override
	public String getComponentType() {
		return "pgqueue:inbound-channel-adapter";
	}

	@Override
	protected void doStart() {
		this.registry.registerListenerEndpoint(this.endpoint);
	}

	@Override
	protected void doStop() {
		this.registry.unregisterListenerEndpoint(this.id);
	}

	@Override
	public void pause() {
		QueueListenerContainer container = this.registry.getListenerContainer(this.id);
		if (container != null) {
			container.pause();
		}
	}

	@Override
	public void resume() {
		QueueListenerContainer container = this.registry.getListenerContainer(this.id);
		if (container != null) {
			container.resume();
		}
	}

	@Override
	public boolean isPaused() {
		QueueListenerContainer container = this.registry.getListenerContainer(this.id);
		return container != null && container.isPaused();
	}

}
