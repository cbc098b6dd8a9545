package io.github.pgqueue.boot.autoconfigure;

import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

import io.github.pgqueue.ArchiveSearch;
import io.github.pgqueue.ArchivedMessage;
import io.github.pgqueue.MessageArchive;
import io.github.pgqueue.QueueAdmin;
import io.github.pgqueue.QueueDefinition;
import io.github.pgqueue.QueueStats;
import io.github.pgqueue.ScheduleDefinition;
import io.github.pgqueue.ScheduleInfo;
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
 * The {@code pgqueue} actuator endpoint: reads the queues with their stats, the listeners with
 * their state, the schedules with their next tick, and a queue's archive; writes pause or resume a
 * queue (for every consumer), redrive its dead letters and send an archived message again.
 * Like every endpoint but health, it is not exposed over the web unless
 * {@code management.endpoints.web.exposure.include} names it.
 */
@Endpoint(id = "pgqueue")
public class PgQueueEndpoint {

	private static final Logger logger = LoggerFactory.getLogger(PgQueueEndpoint.class);

	private final QueueAdmin admin;

	private final QueueListenerEndpointRegistry registry;

	private final MessageArchive archive;

	public PgQueueEndpoint(QueueAdmin admin, QueueListenerEndpointRegistry registry, MessageArchive archive) {
		this.admin = admin;
		this.registry = registry;
		this.archive = archive;
	}

	/**
	 * The declared queues with their policy (a limited queue's rate limit, its burst and how many of
	 * its ready messages wait for the limit; a keyed queue's concurrency key header and its limit per
	 * key, null for none, and with a limit per key how many of its messages wait for it), pause state
	 * and stats, the listeners with their state,
	 * and the schedules with their next tick and what they sent.
	 */
	@ReadOperation
	public Map<String, Object> pgqueue() {
		Map<String, Object> queues = new LinkedHashMap<>();
		Map<String, QueueAdmin.RateLimitState> limits = new LinkedHashMap<>();
		this.admin.rateLimits().forEach((state) -> limits.put(state.queue(), state));
		Map<String, QueueAdmin.KeyLimitState> keyLimits = new LinkedHashMap<>();
		this.admin.keyLimits().forEach((state) -> keyLimits.put(state.queue(), state));
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
			queue.put("deduplicationWindow", (info.definition().deduplicationWindow() != null)
					? info.definition().deduplicationWindow().toString() : null);
			queue.put("retention", (info.definition().retention() != null) ? info.definition().retention().toString()
					: null);
			QueueAdmin.RateLimitState limit = limits.get(info.definition().name());
			if (limit != null) {
				queue.put("rateLimit", limit.limit().toString());
				queue.put("rateLimitBurst", limit.limit().burst());
				queue.put("waitingForRateLimit", limit.waiting());
			}
			QueueDefinition.ConcurrencyKey key = info.definition().concurrencyKey();
			if (key != null) {
				queue.put("concurrencyKey", key.header());
				queue.put("maxInFlightPerKey", key.maxInFlight());
				queue.put("rateLimitPerKey", (key.rateLimit() != null) ? key.rateLimit().toString() : null);
			}
			QueueAdmin.KeyLimitState keyLimit = keyLimits.get(info.definition().name());
			if (keyLimit != null) {
				queue.put("waitingForKeyLimit", keyLimit.waiting());
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
		Map<String, Object> schedules = new LinkedHashMap<>();
		for (ScheduleInfo info : this.admin.schedules()) {
			ScheduleDefinition definition = info.definition();
			Map<String, Object> schedule = new LinkedHashMap<>();
			schedule.put("cron", definition.cron());
			schedule.put("zone", definition.zone().getId());
			if (definition.queue() != null) {
				schedule.put("queue", definition.queue());
			}
			else {
				schedule.put("exchange", definition.exchange());
				schedule.put("routingKey", definition.routingKey());
			}
			schedule.put("missed", definition.missed().value());
			schedule.put("paused", info.paused());
			schedule.put("nextFireAt", String.valueOf(info.nextFireAt()));
			schedule.put("lastFiredAt", (info.lastFiredAt() != null) ? info.lastFiredAt().toString() : null);
			schedule.put("fired", info.fired());
			schedules.put(definition.name(), schedule);
		}
		return Map.of("queues", queues, "listeners", listeners, "schedules", schedules);
	}

	/**
	 * A queue's archive, newest completion first: every archived message, or the one with
	 * {@code id}, or those whose header {@code header} is {@code value}; at most {@code limit}
	 * (default 100, at most 1 000).
	 */
	@ReadOperation
	public Map<String, Object> archive(@Selector String queue, @Nullable Long id, @Nullable String header,
			@Nullable String value, @Nullable Integer limit) {
		List<ArchivedMessage> messages;
		try {
			ArchiveSearch search = ArchiveSearch.all().inQueue(queue)
				.withLimit((limit != null) ? limit : ArchiveSearch.DEFAULT_LIMIT);
			if (id != null) {
				search = search.withId(id);
			}
			if (header != null || value != null) {
				search = new ArchiveSearch(search.queue(), search.id(), header, value, null, null, search.limit());
			}
			messages = this.archive.search(search);
		}
		catch (IllegalArgumentException ex) {
			throw new InvalidEndpointRequestException(ex.getMessage(), ex.getMessage());
		}
		Map<String, Object> result = new LinkedHashMap<>();
		result.put("queue", queue);
		result.put("archive", messages);
		return result;
	}

	/**
	 * Acts on one queue: {@code {"action": "pause"}}, {@code "resume"}, {@code "redrive"} (with an
	 * optional {@code "max"}, default 1000), or {@code "resend"} with the {@code "id"} of an
	 * archived message.
	 */
	@WriteOperation
	public Map<String, Object> queue(@Selector String queue, String action, @Nullable Integer max, @Nullable Long id) {
		Map<String, Object> result = new LinkedHashMap<>();
		result.put("queue", queue);
		result.put("action", action);
		try {
			switch ((action != null) ? action : "") {
				case "pause" -> this.admin.pause(queue);
				case "resume" -> this.admin.resume(queue);
				case "redrive" -> result.put("redriven", this.admin.redrive(queue, (max != null) ? max : 1000));
				case "resend" -> {
					if (id == null) {
						throw new InvalidEndpointRequestException("Action resend for queue '" + queue
								+ "' needs the id of an archived message", "Action resend needs an id");
					}
					result.put("id", id);
					result.put("sent", this.archive.resend(queue, id));
				}
				default -> throw new InvalidEndpointRequestException(((action != null) ? "Unknown action '" + action
						+ "'" : "No action") + " for queue '" + queue + "'; use pause, resume, redrive or resend",
						"Unknown action; use pause, resume, redrive or resend");
			}
		}
		catch (IllegalArgumentException | IllegalStateException ex) {
			throw new InvalidEndpointRequestException(ex.getMessage(), ex.getMessage());
		}
		logger.info("Actuator endpoint pgqueue: {} queue '{}'", action, queue);
		return result;
	}

}
