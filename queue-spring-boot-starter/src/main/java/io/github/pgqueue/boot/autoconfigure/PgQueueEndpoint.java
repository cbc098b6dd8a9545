package io.github.pgqueue.boot.autoconfigure;

import java.util.LinkedHashMap;
import java.util.Map;

import io.github.pgqueue.QueueAdmin;
import io.github.pgqueue.QueueStats;
import io.github.pgqueue.listener.QueueListenerContainer;
import io.github.pgqueue.listener.QueueListenerEndpointRegistry;
import org.jspecify.annotations.Nullable;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import org.springframework.boot.actuate.endpoint.InvalidEndpointRequestException;
import org.springframework.boot.actuate.endpoint.annotation.Endpoint;
import org.springframework.boot.actuate.endpoint.annotation.ReadOperation;
import org.springframework.boot.actuate.endpoint.annotation.Selector;
import org.springframework.boot.actuate.endpoint.annotation.WriteOperation;

/**
 * The {@code pgqueue} actuator endpoint: reads the queues with their stats and the listeners with
 * their state; writes pause or resume a queue (for every consumer) and redrive its dead letters.
 * Like every endpoint but health, it is not exposed over the web unless
 * {@code management.endpoints.web.exposure.include} names it.
 */
@Endpoint(id = "pgqueue")
public class PgQueueEndpoint {

	private static final Logger logger = LoggerFactory.getLogger(PgQueueEndpoint.class);

	private final QueueAdmin admin;

	private final QueueListenerEndpointRegistry registry;

	public PgQueueEndpoint(QueueAdmin admin, QueueListenerEndpointRegistry registry) {
		this.admin = admin;
		this.registry = registry;
	}

	/**
	 * The declared queues with their policy (a limited queue's rate limit, its burst and how many of
	 * its ready messages wait for the limit), pause state and stats, and the listeners with their state.
	 */
	@ReadOperation
	public Map<String, Object> pgqueue() {
		Map<String, Object> queues = new LinkedHashMap<>();
		Map<String, QueueAdmin.RateLimitState> limits = new LinkedHashMap<>();
		this.admin.rateLimits().forEach((state) -> limits.put(state.queue(), state));
		for (QueueAdmin.QueueInfo info : this.admin.list()) {
			QueueStats stats = info.stats();
			Map<String, Object> queue = new LinkedHashMap<>();
			queue.put("paused", info.paused());
			queue.put("ready", stats.ready());
			queue.put("scheduled", stats.scheduled());
			queue.put("inFlight", stats.inFlight());
			queue.put("deadLettered", stats.deadLettered());
			queue.put("oldestReadyAge", stats.oldestReadyAge().toString());
			queue.put("maxAttempts", info.definition().maxAttempts());
			queue.put("deadLetterQueue", info.definition().effectiveDeadLetterQueue());
			QueueAdmin.RateLimitState limit = limits.get(info.definition().name());
			if (limit != null) {
				queue.put("rateLimit", limit.limit().toString());
				queue.put("rateLimitBurst", limit.limit().burst());
				queue.put("waitingForRateLimit", limit.waiting());
			}
			queues.put(info.definition().name(), queue);
		}
		Map<String, Object> listeners = new LinkedHashMap<>();
		for (QueueListenerContainer container : this.registry.getListenerContainers()) {
			Map<String, Object> listener = new LinkedHashMap<>();
			listener.put("queues", container.endpoint().containerProperties().queues());
			listener.put("state", !container.isRunning() ? "stopped" : container.isPaused() ? "paused" : "running");
			listener.put("connected", container.isConnected());
			listener.put("concurrency", container.endpoint().containerProperties().concurrency());
			listener.put("mode", container.endpoint().containerProperties().mode().name().toLowerCase(java.util.Locale.ROOT));
			listeners.put(container.endpoint().id(), listener);
		}
		return Map.of("queues", queues, "listeners", listeners);
	}

	/**
	 * Acts on one queue: {@code {"action": "pause"}}, {@code "resume"}, or {@code "redrive"} (with
	 * an optional {@code "max"}, default 1000).
	 */
	@WriteOperation
	public Map<String, Object> queue(@Selector String queue, String action, @Nullable Integer max) {
		Map<String, Object> result = new LinkedHashMap<>();
		result.put("queue", queue);
		result.put("action", action);
		try {
			switch ((action != null) ? action : "") {
				case "pause" -> this.admin.pause(queue);
				case "resume" -> this.admin.resume(queue);
				case "redrive" -> result.put("redriven", this.admin.redrive(queue, (max != null) ? max : 1000));
				default -> throw new InvalidEndpointRequestException(((action != null) ? "Unknown action '" + action
						+ "'" : "No action") + " for queue '" + queue + "'; use pause, resume or redrive",
						"Unknown action; use pause, resume or redrive");
			}
		}
		catch (IllegalArgumentException | IllegalStateException ex) {
			throw new InvalidEndpointRequestException(ex.getMessage(), ex.getMessage());
		}
		logger.info("Actuator endpoint pgqueue: {} queue '{}'", action, queue);
		return result;
	}

}
