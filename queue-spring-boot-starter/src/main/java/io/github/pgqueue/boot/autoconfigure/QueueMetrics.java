package io.github.pgqueue.boot.autoconfigure;

import java.util.ArrayList;
import java.util.Collection;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import java.util.function.ToDoubleFunction;

import io.github.pgqueue.QueueAdmin;
import io.github.pgqueue.QueueStats;
import io.github.pgqueue.QueueTemplate;
import io.micrometer.core.instrument.Gauge;
import io.micrometer.core.instrument.Meter;
import io.micrometer.core.instrument.MeterRegistry;
import io.micrometer.core.instrument.binder.MeterBinder;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import org.springframework.jdbc.core.JdbcTemplate;

/**
 * The queue gauges: {@code pgqueue.queue.depth} by state, {@code pgqueue.queue.oldest.age} and
 * {@code pgqueue.queue.rate.limited} (the ready messages that wait for the queue's rate limit), for
 * the configured queues and their dead-letter queues from the start, and for every queue declared
 * in the database (at runtime, by this application or another one) from the next refresh; and
 * {@code pgqueue.queue.key.limited} (the messages that wait for the queue's limits per key, of
 * messages in flight or of their rate) for the queues with such a limit, configured or, from the next refresh, declared so. Each
 * queue's stats are read at most once per refresh interval, however often the registry is
 * scraped; the declared queues are listed once per refresh interval on a thread of its own, and
 * the gauges of a queue dropped since (or of a limit per key removed since) are removed.
 */
final class QueueMetrics implements MeterBinder, AutoCloseable {

	private static final Logger logger = LoggerFactory.getLogger(QueueMetrics.class);

	private static final long REFRESH_NANOS = 5_000_000_000L;

	private final QueueTemplate template;

	private final Set<String> configured;

	private final JdbcTemplate jdbc;

	private final String declaredQueues;

	private final Map<String, Sample> samples = new ConcurrentHashMap<>();

	private final List<MeterRegistry> registries = new CopyOnWriteArrayList<>();

	/** The queues with gauges, and the ids of their gauges (the same in every registry). */
	private final Map<String, List<Meter.Id>> gauged = new LinkedHashMap<>();

	private final QueueAdmin admin;

	/** The queues with a limit per key as configured, until the declared ones are listed. */
	private final Set<String> configuredKeyLimited;

	/** The queues with a {@code pgqueue.queue.key.limited} gauge, and its id (the same in every registry). */
	private final Map<String, Meter.Id> keyGauged = new LinkedHashMap<>();

	private final WaitingCounts waitingForRateLimit;

	private final WaitingCounts waitingForKeyLimit;

	private ScheduledExecutorService refresher;

	private volatile boolean failing;

	private volatile boolean listingFailing;

	private volatile boolean closed;

	/**
	 * Gauges for {@code queues} from the start, and for those of {@code keyLimited} (with an
	 * in-flight limit per key) the gauge of the messages that wait for it.
	 */
	QueueMetrics(QueueTemplate template, Collection<String> queues, Collection<String> keyLimited) {
		this.template = template;
		this.configured = new LinkedHashSet<>(queues);
		this.configuredKeyLimited = new LinkedHashSet<>(keyLimited);
		this.jdbc = new JdbcTemplate(template.context().dataSource());
		this.admin = new QueueAdmin(template.context());
		this.waitingForRateLimit = new WaitingCounts("rate limits", () -> {
			Map<String, Long> waiting = new HashMap<>();
			this.admin.rateLimits().forEach((state) -> waiting.put(state.queue(), state.waiting()));
			return waiting;
		}, REFRESH_NANOS);
		this.waitingForKeyLimit = new WaitingCounts("in-flight limits per key", () -> {
			Map<String, Long> waiting = new HashMap<>();
			this.admin.keyLimits().forEach((state) -> waiting.put(state.queue(), state.waiting()));
			return waiting;
		}, REFRESH_NANOS);
		String s = "\"" + template.context().schema() + "\"";
		// Each declared queue, the dead-letter queue its messages go to (as a dead letter finds it),
		// and whether it has an in-flight limit per key.
		this.declaredQueues = """
				SELECT name, COALESCE(dead_letter_queue, %1$s.default_dead_letter_queue(name)),
				       max_in_flight_per_key IS NOT NULL
				  FROM %1$s.queue""".formatted(s);
	}

	@Override
	public synchronized void bindTo(MeterRegistry registry) {
		this.registries.add(registry);
		for (String queue : this.configured) {
			this.gauged.putIfAbsent(queue, List.of());
		}
		for (Map.Entry<String, List<Meter.Id>> queue : this.gauged.entrySet()) {
			queue.setValue(register(registry, queue.getKey()));
		}
		for (String queue : this.configuredKeyLimited) {
			this.keyGauged.putIfAbsent(queue, null);
		}
		for (Map.Entry<String, Meter.Id> queue : this.keyGauged.entrySet()) {
			queue.setValue(registerKeyLimited(registry, queue.getKey()));
		}
		if (this.refresher == null && !this.closed) {
			this.refresher = Executors.newSingleThreadScheduledExecutor((task) -> {
				Thread thread = new Thread(task, "pgqueue-metrics");
				thread.setDaemon(true);
				return thread;
			});
			this.refresher.scheduleWithFixedDelay(this::refresh, REFRESH_NANOS, REFRESH_NANOS, TimeUnit.NANOSECONDS);
		}
	}

	/** Gauges for queues declared since the last refresh; none for queues dropped since, unless configured. */
	void refresh() {
		Set<String> declared;
		Set<String> keyLimited;
		try {
			declared = new LinkedHashSet<>();
			keyLimited = new LinkedHashSet<>();
			this.jdbc.query(this.declaredQueues, (rs) -> {
				declared.add(rs.getString(1));
				declared.add(rs.getString(2));
				if (rs.getBoolean(3)) {
					keyLimited.add(rs.getString(1));
				}
			});
			this.listingFailing = false;
		}
		catch (RuntimeException ex) {
			if (!this.listingFailing && !this.closed) {
				logger.warn("Could not list the declared queues for their gauges; queues created meanwhile get theirs "
						+ "once the database answers again: {}", ex.toString());
				this.listingFailing = true;
			}
			return;
		}
		synchronized (this) {
			Set<String> wanted = new LinkedHashSet<>(this.configured);
			wanted.addAll(declared);
			for (String queue : new ArrayList<>(this.gauged.keySet())) {
				if (!wanted.contains(queue)) {
					for (MeterRegistry registry : this.registries) {
						this.gauged.get(queue).forEach(registry::remove);
					}
					this.gauged.remove(queue);
					this.samples.remove(queue);
				}
			}
			for (String queue : wanted) {
				if (!this.gauged.containsKey(queue)) {
					List<Meter.Id> ids = List.of();
					for (MeterRegistry registry : this.registries) {
						ids = register(registry, queue);
					}
					this.gauged.put(queue, ids);
				}
			}
			// A configured queue not declared (yet) keeps the limit its configuration gives it.
			this.configuredKeyLimited.stream().filter((queue) -> !declared.contains(queue)).forEach(keyLimited::add);
			for (String queue : new ArrayList<>(this.keyGauged.keySet())) {
				if (!keyLimited.contains(queue)) {
					for (MeterRegistry registry : this.registries) {
						registry.remove(this.keyGauged.get(queue));
					}
					this.keyGauged.remove(queue);
				}
			}
			for (String queue : keyLimited) {
				if (!this.keyGauged.containsKey(queue) && !this.registries.isEmpty()) {
					Meter.Id id = null;
					for (MeterRegistry registry : this.registries) {
						id = registerKeyLimited(registry, queue);
					}
					this.keyGauged.put(queue, id);
				}
			}
		}
	}

	@Override
	public synchronized void close() {
		this.closed = true;
		if (this.refresher != null) {
			this.refresher.shutdownNow();
		}
	}

	private List<Meter.Id> register(MeterRegistry registry, String queue) {
		List<Meter.Id> ids = new ArrayList<>();
		ids.add(depth(registry, queue, "ready", QueueStats::ready));
		ids.add(depth(registry, queue, "scheduled", QueueStats::scheduled));
		ids.add(depth(registry, queue, "in_flight", QueueStats::inFlight));
		ids.add(Gauge.builder("pgqueue.queue.rate.limited", this, (m) -> m.waitingForRateLimit.waiting(queue))
			.description("Ready messages of a rate-limited queue beyond what its bucket could hand out now: they "
					+ "wait for the limit")
			.tag("queue", queue)
			.register(registry)
			.getId());
		ids.add(Gauge
			.builder("pgqueue.queue.oldest.age", this, (m) -> m.read(queue, (s) -> s.oldestReadyAge().toMillis() / 1000.0))
			.description("Age of the oldest ready message")
			.baseUnit("seconds")
			.tag("queue", queue)
			.register(registry)
			.getId());
		return ids;
	}

	private Meter.Id registerKeyLimited(MeterRegistry registry, String queue) {
		return Gauge.builder("pgqueue.queue.key.limited", this, (m) -> m.waitingForKeyLimit.waiting(queue))
			.description("Messages of a queue with a limit per key (in flight or rate) that wait for it: per key, the "
					+ "visible messages (in flight or ready) beyond what the limits let out now, summed over the keys")
			.tag("queue", queue)
			.register(registry)
			.getId();
	}

	private Meter.Id depth(MeterRegistry registry, String queue, String state, ToDoubleFunction<QueueStats> value) {
		return Gauge.builder("pgqueue.queue.depth", this, (m) -> m.read(queue, value))
			.description("Messages in the queue by state")
			.tag("queue", queue)
			.tag("state", state)
			.register(registry)
			.getId();
	}

	private double read(String queue, ToDoubleFunction<QueueStats> value) {
		Sample sample = this.samples.compute(queue, (key, old) -> {
			if (old != null && System.nanoTime() - old.takenAt() < REFRESH_NANOS) {
				return old;
			}
			try {
				Sample fresh = new Sample(this.template.stats(queue), System.nanoTime());
				this.failing = false;
				return fresh;
			}
			catch (RuntimeException ex) {
				if (!this.failing) {
					logger.warn("Could not read the stats of queue '{}' for its gauges, which show NaN until the "
							+ "database answers again: {}", queue, ex.toString());
					this.failing = true;
				}
				return new Sample(null, System.nanoTime());
			}
		});
		return (sample.stats() != null) ? value.applyAsDouble(sample.stats()) : Double.NaN;
	}

	private record Sample(QueueStats stats, long takenAt) {
	}

}
