package io.github.pgqueue.boot.autoconfigure;

import io.github.pgqueue.listener.QueueListenerContainer;
import io.github.pgqueue.listener.QueueListenerEndpointRegistry;

import org.springframework.boot.health.contributor.AbstractHealthIndicator;
import org.springframework.boot.health.contributor.Health;

/**
 * Reports pgqueue's listeners: down while a running listener has lost its database session or
 * the LISTEN connection is gone (they reconnect by themselves; this shows the outage).
 */
public class PgQueueHealthIndicator extends AbstractHealthIndicator {

	private final QueueListenerEndpointRegistry registry;

	public PgQueueHealthIndicator(QueueListenerEndpointRegistry registry) {
		super("pgqueue health check failed");
		this.registry = registry;
	}

	@Override
	protected void doHealthCheck(Health.Builder builder) {
		boolean up = true;
		boolean anyRunning = false;
		for (QueueListenerContainer container : this.registry.getListenerContainers()) {
			String state = !container.isRunning() ? "stopped" : !container.isConnected() ? "reconnecting"
					: container.isPaused() ? "paused" : "polling";
			up &= !state.equals("reconnecting");
			anyRunning |= container.isRunning();
			builder.withDetail("listener." + container.endpoint().id(), state);
		}
		if (this.registry.isRunning() && anyRunning) {
			boolean listening = this.registry.isListening();
			builder.withDetail("notifications", listening ? "listening" : "reconnecting");
			up &= listening;
		}
		if (up) {
			builder.up();
		}
		else {
			builder.down();
		}
	}

}
