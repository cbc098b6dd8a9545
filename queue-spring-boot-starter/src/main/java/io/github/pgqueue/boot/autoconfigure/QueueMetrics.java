package io.github.pgqueue.boot.autoconfigure;

import java.util.ArrayList;
import java.util.Collection;
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
 * in the database (at runtime, by this application or another one) from the next refresh. Each
 * queue's stats are read at most once per refresh interval, however often the registry is
 * scraped; the declared queues are listed once per refresh interval on a thread of its own, and
 * the gauges of a queue dropped since are removed.
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

	private final Object rateLimitLock = new Object();

	private RateLimitSample rateLimits;

	private volatile boolean rateLimitsFailing;

	private ScheduledExecutorService refresher;

	private volatile boolean failing;

	private volatile boolean listingFailing;

	private volatile boolean closed;

	QueueMetrics(QueueTemplate template, Collection<String> queues) {
		this.template = template;
		this.configured = new LinkedHashSet<>(queues);
		this.jdbc = new JdbcTemplate(template.context().dataSource());
		this.admin = new QueueAdmin(template.context());
		String s = "\"" + template.context().schema() + "\"";
		// Each declared queue and the dead-letter queue its messages go to, as a dead letter finds it.
		this.declaredQueues = """
				SELECT name, COALESCE(dead_letter_queue, %1$s.default_dead_letter_queue(name))
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
		try {
			declared = new LinkedHashSet<>();
			this.jdbc.query(this.declaredQueues, (rs) -> {
				declared.add(rs.getString(1));
				declared.add(rs.getString(2));
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
		ids.add(Gauge.builder("pgqueue.queue.rate.limited", this, (m) -> m.waitingForRateLimit(queue))
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

	/**
	 * How many ready messages of {@code queue} wait for its rate limit; 0 for a queue without one.
	 * The limited queues are read at most once per refresh interval, however many gauges ask.
	 */
	private double waitingForRateLimit(String queue) {
		RateLimitSample sample;
		synchronized (this.rateLimitLock) {
			sample = this.rateLimits;
			if (sample == null || System.nanoTime() - sample.takenAt() >= REFRESH_NANOS) {
				Map<String, Long> waiting = new java.util.HashMap<>();
				try {
					this.admin.rateLimits().forEach((state) -> waiting.put(state.queue(), state.waiting()));
					sample = new RateLimitSample(waiting, System.nanoTime());
					this.rateLimitsFailing = false;
				}
				catch (RuntimeException ex) {
					if (!this.rateLimitsFailing) {
						logger.warn("Could not read the queues' rate limits for their gauges, which show NaN until "
								+ "the database answers again: {}", ex.toString());
						this.rateLimitsFailing = true;
					}
					sample = new RateLimitSample(null, System.nanoTime());
				}
				this.rateLimits = sample;
			}
		}
		return (sample.waiting() != null) ? sample.waiting().getOrDefault(queue, 0L) : Double.NaN;
	}

	private record Sample(QueueStats stats, long takenAt) {
	}

	private record RateLimitSample(Map<String, Long> waiting, long takenAt) {
	}

}
