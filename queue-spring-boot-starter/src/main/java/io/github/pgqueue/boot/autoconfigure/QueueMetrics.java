package io.github.pgqueue.boot.autoconfigure;

import java.util.Collection;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.function.ToDoubleFunction;

import io.github.pgqueue.QueueStats;
import io.github.pgqueue.QueueTemplate;
import io.micrometer.core.instrument.Gauge;
import io.micrometer.core.instrument.MeterRegistry;
import io.micrometer.core.instrument.binder.MeterBinder;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The queue gauges of the configured queues: {@code pgqueue.queue.depth} by state and
 * {@code pgqueue.queue.oldest.age}. Each queue's stats are read at most once per refresh
 * interval, however often the registry is scraped.
 */
final class QueueMetrics implements MeterBinder {

	private static final Logger logger = LoggerFactory.getLogger(QueueMetrics.class);

	private static final long REFRESH_NANOS = 5_000_000_000L;

	private final QueueTemplate template;

	private final Collection<String> queues;

	private final Map<String, Sample> samples = new ConcurrentHashMap<>();

	private volatile boolean failing;

	QueueMetrics(QueueTemplate template, Collection<String> queues) {
		this.template = template;
		this.queues = queues;
	}

	@Override
	public void bindTo(MeterRegistry registry) {
		for (String queue : this.queues) {
			depth(registry, queue, "ready", QueueStats::ready);
			depth(registry, queue, "scheduled", QueueStats::scheduled);
			depth(registry, queue, "in_flight", QueueStats::inFlight);
			Gauge.builder("pgqueue.queue.oldest.age", this, (m) -> m.read(queue, (s) -> s.oldestReadyAge().toMillis() / 1000.0))
				.description("Age of the oldest ready message")
				.baseUnit("seconds")
				.tag("queue", queue)
				.register(registry);
		}
	}

	private void depth(MeterRegistry registry, String queue, String state, ToDoubleFunction<QueueStats> value) {
		Gauge.builder("pgqueue.queue.depth", this, (m) -> m.read(queue, value))
			.description("Messages in the queue by state")
			.tag("queue", queue)
			.tag("state", state)
			.register(registry);
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
