package io.github.pgqueue.reliability;

import java.lang.management.ManagementFactory;
import java.lang.management.MemoryUsage;
import java.time.Duration;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;

import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import org.springframework.beans.factory.DisposableBean;
import org.springframework.jdbc.core.JdbcTemplate;

/**
 * Writes this JVM's heap in use after a full collection into {@code chaos.heap} at a fixed
 * interval ({@code --chaos.heap-sample-interval}), through the recorder's connections, so that a
 * soak can tell a leak from garbage not yet collected. A sample that cannot be written (the
 * database is restarting) is logged and the next one is taken on time.
 */
public class HeapSampler implements DisposableBean {

	private static final Logger logger = LoggerFactory.getLogger(HeapSampler.class);

	private final JdbcTemplate recorder;

	private final String consumer;

	private final ScheduledExecutorService timer = Executors.newSingleThreadScheduledExecutor((task) -> {
		Thread thread = new Thread(task, "chaos-heap-sampler");
		thread.setDaemon(true);
		return thread;
	});

	public HeapSampler(JdbcTemplate recorder, String consumer, Duration interval) {
		if (interval.isNegative() || interval.isZero()) {
			throw new IllegalArgumentException("chaos.heap-sample-interval must be positive, but is " + interval);
		}
		this.recorder = recorder;
		this.consumer = consumer;
		this.timer.scheduleAtFixedRate(this::sample, 0, interval.toMillis(), TimeUnit.MILLISECONDS);
	}

	private void sample() {
		System.gc();
		MemoryUsage heap = ManagementFactory.getMemoryMXBean().getHeapMemoryUsage();
		try {
			this.recorder.update("INSERT INTO chaos.heap (consumer, jvm_pid, used_bytes, committed_bytes) "
					+ "VALUES (?, ?, ?, ?)", this.consumer, ProcessHandle.current().pid(), heap.getUsed(),
					heap.getCommitted());
		}
		catch (RuntimeException ex) {
			logger.warn("Could not write a heap sample ({} bytes used): {}", heap.getUsed(), ex.toString());
		}
	}

	@Override
	public void destroy() {
		this.timer.shutdownNow();
	}

}
