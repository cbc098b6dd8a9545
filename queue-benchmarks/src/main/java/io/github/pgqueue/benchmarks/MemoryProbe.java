package io.github.pgqueue.benchmarks;

import java.io.IOException;
import java.lang.management.ManagementFactory;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.concurrent.atomic.LongAdder;

import com.zaxxer.hikari.HikariDataSource;
import io.github.pgqueue.ConsumptionMode;
import io.github.pgqueue.QueueTemplate;
import io.github.pgqueue.listener.QueueListenerEndpoint;
import io.github.pgqueue.listener.QueueListenerEndpointRegistry;

/**
 * The process the memory scenario measures: a JVM with pgqueue's template and a listener registry
 * and nothing else. Arguments: JDBC URL, mode ({@code none}, {@code idle} with 10 idle listeners,
 * {@code drain} with one 4-thread listener working through the {@code bench} queue). Prints one
 * {@code PROBE} line.
 */
public final class MemoryProbe {

	private MemoryProbe() {
	}

	public static void main(String[] args) throws Exception {
		String url = args[0];
		String mode = args[1];
		long expected = (args.length > 2) ? Long.parseLong(args[2]) : 0;
		try (HikariDataSource app = pool(url, "probe-app", 2); HikariDataSource consumers = pool(url, "probe-listeners", 12)) {
			QueueTemplate template = QueueTemplate.builder(app).build();
			QueueListenerEndpointRegistry registry = new QueueListenerEndpointRegistry(template.context(), consumers,
					Duration.ofSeconds(10));
			LongAdder handled = new LongAdder();
			if (mode.equals("idle")) {
				for (int i = 0; i < 10; i++) {
					registry.registerListenerEndpoint(endpoint("idle-" + i, 1, PgQueueSystem.DEFAULT_BATCH_SIZE, handled));
				}
			}
			else if (mode.equals("drain")) {
				registry.registerListenerEndpoint(endpoint(MessageTableSystem.QUEUE, 4, 100, handled));
			}
			template.stats(MessageTableSystem.QUEUE);
			registry.start();
			long peakHeap = 0;
			long peakRss = 0;
			long deadline = System.nanoTime() + Duration.ofSeconds(mode.equals("drain") ? 120 : 5).toNanos();
			while (System.nanoTime() < deadline && (!mode.equals("drain") || handled.sum() < expected)) {
				peakHeap = Math.max(peakHeap, heapUsed());
				peakRss = Math.max(peakRss, rssKb());
				Thread.sleep(100);
			}
			System.gc();
			Thread.sleep(500);
			System.gc();
			Thread.sleep(500);
			System.out.println("PROBE mode=" + mode + " handled=" + handled.sum() + " heap_after_gc=" + heapUsed()
					+ " rss_kb=" + rssKb() + " heap_peak=" + peakHeap + " rss_peak_kb=" + peakRss);
			registry.stop();
		}
	}

	private static QueueListenerEndpoint endpoint(String queue, int concurrency, int batchSize, LongAdder handled) {
		return PgQueueSystem.endpoint(queue, queue, concurrency, batchSize, PgQueueSystem.POLL_INTERVAL,
				ConsumptionMode.SESSION, null, (n) -> handled.increment());
	}

	private static HikariDataSource pool(String url, String name, int size) {
		HikariDataSource pool = new HikariDataSource();
		pool.setPoolName(name);
		pool.setJdbcUrl(url);
		pool.setUsername("postgres");
		pool.setMaximumPoolSize(size);
		pool.setMinimumIdle(0);
		return pool;
	}

	private static long heapUsed() {
		return ManagementFactory.getMemoryMXBean().getHeapMemoryUsage().getUsed();
	}

	/** Resident set size from /proc/self/status, or -1 where there is none. */
	static long rssKb() {
		try {
			for (String line : Files.readAllLines(Path.of("/proc/self/status"))) {
				if (line.startsWith("VmRSS:")) {
					return Long.parseLong(line.replaceAll("[^0-9]", ""));
				}
			}
		}
		catch (IOException | NumberFormatException ex) {
			return -1;
		}
		return -1;
	}

}
