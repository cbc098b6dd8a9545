package io.github.pgqueue.boot.autoconfigure.dashboard;

import java.security.Principal;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;

import io.github.pgqueue.ArchiveSearch;
import io.github.pgqueue.CancelResult;
import io.github.pgqueue.MessageArchive;
import io.github.pgqueue.QueueAdmin;
import io.github.pgqueue.QueueNames;
import io.github.pgqueue.QueueStats;
import io.github.pgqueue.QueueTemplate;
import io.github.pgqueue.ScheduleDefinition;
import io.github.pgqueue.ScheduleInfo;
import io.github.pgqueue.listener.QueueListenerContainer;
import io.github.pgqueue.listener.QueueListenerEndpointRegistry;
import jakarta.servlet.http.HttpServletRequest;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import org.springframework.beans.factory.ObjectProvider;
import org.springframework.core.io.ClassPathResource;
import org.springframework.core.io.Resource;
import org.springframework.http.CacheControl;
import org.springframework.http.HttpStatus;
import org.springframework.http.MediaType;
import org.springframework.http.ResponseEntity;
import org.springframework.web.bind.annotation.ExceptionHandler;
import org.springframework.web.bind.annotation.GetMapping;
import org.springframework.web.bind.annotation.PathVariable;
import org.springframework.web.bind.annotation.PostMapping;
import org.springframework.web.bind.annotation.RequestBody;
import org.springframework.web.bind.annotation.RequestMapping;
import org.springframework.web.bind.annotation.RequestParam;
import org.springframework.web.bind.annotation.RestController;
import org.springframework.web.util.UriComponentsBuilder;

/**
 * The dashboard's page and JSON API. Every write is logged with the user who made it.
 */
@RestController
@RequestMapping("${pgqueue.dashboard.path:/pgqueue}")
final class DashboardController {

	private static final Logger logger = LoggerFactory.getLogger(DashboardController.class);

	private static final int MAX_PAGE = 200;

	private static final int REDRIVE_CHUNK = 10_000;

	private final QueueTemplate template;

	private final QueueAdmin admin;

	private final MessageArchive archive;

	private final DashboardRepository repository;

	private final ProcessedRates rates;

	private final ObjectProvider<QueueListenerEndpointRegistry> registry;

	private final boolean readOnly;

	private final boolean security;

	DashboardController(QueueTemplate template, DashboardRepository repository, ProcessedRates rates,
			ObjectProvider<QueueListenerEndpointRegistry> registry, boolean readOnly, boolean security) {
		this.template = template;
		this.admin = new QueueAdmin(template.context());
		this.archive = new MessageArchive(template.context());
		this.repository = repository;
		this.rates = rates;
		this.registry = registry;
		this.readOnly = readOnly;
		this.security = security;
	}

	@GetMapping
	ResponseEntity<Void> redirectToPage(HttpServletRequest request) {
		String location = UriComponentsBuilder.fromPath(request.getRequestURI() + "/").build().toUriString();
		return ResponseEntity.status(HttpStatus.FOUND).header("Location", location).build();
	}

	@GetMapping("/")
	ResponseEntity<Resource> page() {
		// No inline script or style in the page: data can never become code, even if escaping failed.
		return ResponseEntity.ok()
			.contentType(MediaType.TEXT_HTML)
			.cacheControl(CacheControl.noStore())
			.header("Content-Security-Policy", "default-src 'self'; img-src 'self' data:; frame-ancestors 'self'")
			.body(new ClassPathResource("META-INF/pgqueue-dashboard/index.html"));
	}

	@GetMapping("/api/session")
	Map<String, Object> session(HttpServletRequest request, Principal principal) {
		Map<String, Object> session = new LinkedHashMap<>();
		session.put("readOnly", this.readOnly);
		session.put("user", user(principal));
		session.put("csrf", this.security ? CsrfTokens.of(request) : Map.of());
		return session;
	}

	@GetMapping("/api/queues")
	Map<String, Object> queues() {
		List<QueueStats> stats = new ArrayList<>();
		for (String queue : this.repository.queueNames()) {
			stats.add(this.template.stats(queue));
		}
		Map<String, QueueAdmin.RateLimitState> limits = new LinkedHashMap<>();
		this.admin.rateLimits().forEach((state) -> limits.put(state.queue(), state));
		Map<String, DashboardRepository.ConcurrencyKey> keys = this.repository.concurrencyKeys();
		Map<String, QueueAdmin.KeyLimitState> keyLimits = keyLimits();
		List<Map<String, Object>> rows = stats.stream().map((s) -> {
			QueueAdmin.RateLimitState limit = limits.get(s.queue());
			DashboardRepository.ConcurrencyKey key = keys.get(s.queue());
			Map<String, Object> row = new LinkedHashMap<>();
			row.put("queue", s.queue());
			row.put("ready", s.ready());
			row.put("scheduled", s.scheduled());
			row.put("inFlight", s.inFlight());
			row.put("deadLettered", s.deadLettered());
			row.put("oldestReadyAgeSeconds", s.oldestReadyAge().toMillis() / 1000.0);
			row.put("rateLimit", (limit != null) ? limit.limit().toString() : null);
			row.put("waitingForRateLimit", (limit != null) ? limit.waiting() : 0);
			row.put("concurrencyKey", (key != null) ? key.header() : null);
			row.put("maxInFlightPerKey", (key != null) ? key.maxInFlight() : null);
			QueueAdmin.KeyLimitState keyLimit = keyLimits.get(s.queue());
			row.put("rateLimitPerKey", (keyLimit != null && keyLimit.rateLimitPerKey() != null)
					? keyLimit.rateLimitPerKey().toString() : null);
			row.put("waitingForKeyLimit", (keyLimit != null) ? keyLimit.waiting() : null);
			return row;
		}).toList();
		return Map.of("queues", rows, "minutes", this.rates.lastHour());
	}

	/** The limits per key of the queues that have some, and how many messages wait for them, by queue. */
	private Map<String, QueueAdmin.KeyLimitState> keyLimits() {
		Map<String, QueueAdmin.KeyLimitState> limits = new LinkedHashMap<>();
		this.admin.keyLimits().forEach((state) -> limits.put(state.queue(), state));
		return limits;
	}

	@GetMapping("/api/queue")
	Map<String, Object> queue(@RequestParam String name, @RequestParam(defaultValue = "newest") String order,
			@RequestParam(defaultValue = "0") int offset, @RequestParam(defaultValue = "20") int limit) {
		QueueNames.requireQueue(name);
		if (!order.equals("newest") && !order.equals("oldest")) {
			throw new IllegalArgumentException("order must be newest or oldest, was " + order);
		}
		int size = Math.max(1, Math.min(MAX_PAGE, limit));
		Map<String, Object> result = new LinkedHashMap<>();
		result.put("queue", name);
		result.put("policy", this.repository.policy(name).orElse(null));
		QueueAdmin.KeyLimitState keyLimit = keyLimits().get(name);
		result.put("rateLimitPerKey", (keyLimit != null && keyLimit.rateLimitPerKey() != null)
				? keyLimit.rateLimitPerKey().toString() : null);
		result.put("waitingForKeyLimit", (keyLimit != null) ? keyLimit.waiting() : null);
		result.put("total", this.repository.countMessages(name));
		result.put("offset", Math.max(0, offset));
		result.put("limit", size);
		result.put("messages", this.repository.messages(name, order.equals("newest"), size, Math.max(0, offset)));
		return result;
	}

	@PostMapping("/api/queue/cancel")
	Map<String, Object> cancel(@RequestParam String name, @RequestParam long id, Principal principal) {
		CancelResult result = this.template.cancel(name, id);
		logger.info("pgqueue dashboard: {} cancelled message {} of queue '{}': {}", user(principal), id, name, result);
		return Map.of("result", result.name());
	}

	@GetMapping("/api/archive")
	Map<String, Object> archive(@RequestParam String queue, @RequestParam(required = false) Long id,
			@RequestParam(required = false) String header, @RequestParam(required = false) String value,
			@RequestParam(defaultValue = "20") int limit) {
		ArchiveSearch search = ArchiveSearch.all().inQueue(queue).withLimit(Math.max(1, Math.min(MAX_PAGE, limit)));
		if (id != null) {
			search = search.withId(id);
		}
		if (header != null && !header.isEmpty()) {
			search = search.withHeader(header, (value != null) ? value : "");
		}
		return Map.of("queue", queue, "archive", this.archive.search(search));
	}

	@PostMapping("/api/archive/resend")
	Map<String, Object> resend(@RequestParam String queue, @RequestParam long id, Principal principal) {
		long sent = this.archive.resend(queue, id);
		logger.info("pgqueue dashboard: {} sent archived message {} of queue '{}' again as {}", user(principal), id,
				queue, sent);
		return Map.of("sent", sent);
	}

	@GetMapping("/api/dead-letters")
	Map<String, Object> deadLetters(@RequestParam(required = false) String origin,
			@RequestParam(defaultValue = "100") int limit) {
		if (origin != null && !origin.isEmpty()) {
			QueueNames.requireQueue(origin);
		}
		List<String> queues = this.repository.queueNames();
		Set<String> deadLetterQueues = new LinkedHashSet<>();
		for (String queue : queues) {
			deadLetterQueues.add(this.admin.deadLetterQueueOf(queue));
		}
		deadLetterQueues.retainAll(queues);
		String from = (origin == null || origin.isEmpty()) ? null : origin;
		return Map.of("deadLetters", this.repository.deadLetters(List.copyOf(deadLetterQueues), from,
				Math.max(1, Math.min(MAX_PAGE * 5, limit))));
	}

	@PostMapping("/api/dead-letters/redrive")
	Map<String, Object> redrive(@RequestBody RedriveRequest request, Principal principal) {
		if (request.origin() != null) {
			QueueNames.requireQueue(request.origin());
			long total = 0;
			int moved;
			do {
				moved = this.admin.redrive(request.origin(), REDRIVE_CHUNK);
				total += moved;
			}
			while (moved == REDRIVE_CHUNK);
			logger.info("pgqueue dashboard: {} redrove all dead letters of queue '{}': {} moved", user(principal),
					request.origin(), total);
			return Map.of("moved", total);
		}
		if (request.ids() == null || request.ids().isEmpty()) {
			throw new IllegalArgumentException("Name the dead letters to redrive (ids) or their queue (origin)");
		}
		List<Long> moved = this.admin.redrive(request.ids());
		logger.info("pgqueue dashboard: {} redrove dead letters {}: moved {}", user(principal), request.ids(), moved);
		return Map.of("moved", moved.size(), "ids", moved);
	}

	@PostMapping("/api/dead-letters/delete")
	Map<String, Object> deleteDeadLetter(@RequestParam String queue, @RequestParam long id, Principal principal) {
		CancelResult result = this.template.cancel(queue, id);
		logger.info("pgqueue dashboard: {} deleted dead letter {} of '{}': {}", user(principal), id, queue, result);
		return Map.of("result", result.name());
	}

	@GetMapping("/api/listeners")
	Map<String, Object> listeners() {
		QueueListenerEndpointRegistry listeners = this.registry.getIfAvailable();
		List<Map<String, Object>> rows = new ArrayList<>();
		if (listeners != null) {
			for (QueueListenerContainer container : listeners.getListenerContainers()) {
				Map<String, Object> row = new LinkedHashMap<>();
				row.put("id", container.endpoint().id());
				row.put("queues", container.endpoint().containerProperties().queues());
				row.put("concurrency", container.endpoint().containerProperties().concurrency());
				row.put("running", container.isRunning());
				row.put("paused", container.isPaused());
				row.put("connected", container.isConnected());
				rows.add(row);
			}
		}
		return Map.of("listeners", rows);
	}

	@PostMapping("/api/listeners/{action}")
	Map<String, Object> listener(@PathVariable String action, @RequestParam String id, Principal principal) {
		QueueListenerEndpointRegistry listeners = this.registry.getIfAvailable();
		QueueListenerContainer container = (listeners != null) ? listeners.getListenerContainer(id) : null;
		if (container == null) {
			throw new IllegalArgumentException("No listener with id '" + id + "'");
		}
		switch (action) {
			case "pause" -> container.pause();
			case "resume" -> container.resume();
			case "stop" -> container.stop();
			case "start" -> start(container);
			default -> throw new IllegalArgumentException("Unknown action '" + action
					+ "': pause, resume, stop or start");
		}
		logger.info("pgqueue dashboard: {} did {} on listener '{}'", user(principal), action, id);
		return Map.of("id", id, "running", container.isRunning(), "paused", container.isPaused());
	}

	@GetMapping("/api/schedules")
	Map<String, Object> schedules() {
		List<Map<String, Object>> rows = new ArrayList<>();
		for (ScheduleInfo info : this.admin.schedules()) {
			ScheduleDefinition definition = info.definition();
			Map<String, Object> row = new LinkedHashMap<>();
			row.put("name", definition.name());
			row.put("cron", definition.cron());
			row.put("zone", definition.zone().getId());
			row.put("target", (definition.queue() != null) ? "queue " + definition.queue()
					: "exchange " + definition.exchange() + " (" + definition.routingKey() + ")");
			row.put("missed", definition.missed().value());
			row.put("paused", info.paused());
			row.put("nextFireAt", String.valueOf(info.nextFireAt()));
			row.put("lastFiredAt", (info.lastFiredAt() != null) ? info.lastFiredAt().toString() : null);
			row.put("fired", info.fired());
			rows.add(row);
		}
		return Map.of("schedules", rows);
	}

	@PostMapping("/api/schedules/{action}")
	Map<String, Object> schedule(@PathVariable String action, @RequestParam String name, Principal principal) {
		try {
			switch (action) {
				case "pause" -> this.admin.pauseSchedule(name);
				case "resume" -> this.admin.resumeSchedule(name);
				default -> throw new IllegalArgumentException("Unknown action '" + action + "': pause or resume");
			}
		}
		catch (IllegalStateException ex) {
			throw new IllegalArgumentException(ex.getMessage(), ex);
		}
		logger.info("pgqueue dashboard: {} did {} on schedule '{}'", user(principal), action, name);
		return Map.of("name", name, "paused", action.equals("pause"));
	}

	/** Starts a listener; a start the registry refuses (a queue that does not exist) is a conflict. */
	private static void start(QueueListenerContainer container) {
		try {
			container.start();
		}
		catch (IllegalStateException ex) {
			throw new StartRefusedException(ex);
		}
	}

	@ExceptionHandler(IllegalArgumentException.class)
	ResponseEntity<Map<String, String>> badRequest(IllegalArgumentException ex) {
		return ResponseEntity.badRequest().body(Map.of("error", String.valueOf(ex.getMessage())));
	}

	@ExceptionHandler(StartRefusedException.class)
	ResponseEntity<Map<String, String>> startRefused(StartRefusedException ex) {
		return ResponseEntity.status(HttpStatus.CONFLICT).body(Map.of("error", String.valueOf(ex.getMessage())));
	}

	/** A listener the registry refused to start, with its reason. */
	static final class StartRefusedException extends RuntimeException {

		StartRefusedException(IllegalStateException cause) {
			super(cause.getMessage(), cause);
		}

	}

	private static String user(Principal principal) {
		return (principal != null) ? principal.getName() : "anonymous";
	}

	/** Dead letters to redrive: the chosen ids, or all of those that came from {@code origin}. */
	record RedriveRequest(List<Long> ids, String origin) {
	}

}
