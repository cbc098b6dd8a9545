package io.github.pgqueue.boot.autoconfigure;

import java.time.Duration;

import io.github.pgqueue.QueueTemplate;
import io.github.pgqueue.listener.QueueListenerEndpoint;
import io.github.pgqueue.listener.QueueListenerEndpointRegistry;

/**
 * The registry, which sizes the listeners' connections for its total concurrency before it
 * starts, and again for every endpoint registered while it runs (a lazy listener bean created
 * later), or refuses that endpoint with the numbers.
 */
final class PgQueueListenerEndpointRegistry extends QueueListenerEndpointRegistry {

	private final ListenerConnections connections;

	PgQueueListenerEndpointRegistry(QueueTemplate template, ListenerConnections connections,
			Duration shutdownTimeout) {
		super(template, connections.dataSource(), shutdownTimeout);
		this.connections = connections;
	}

	@Override
	public synchronized void registerListenerEndpoint(QueueListenerEndpoint endpoint) {
		if (isRunning() && endpoint.autoStartup()) {
			this.connections.prepare(totalConcurrency() + endpoint.concurrency());
		}
		super.registerListenerEndpoint(endpoint);
	}

	@Override
	public synchronized void start() {
		if (!isRunning()) {
			this.connections.prepare(totalConcurrency());
		}
		super.start();
	}

}
