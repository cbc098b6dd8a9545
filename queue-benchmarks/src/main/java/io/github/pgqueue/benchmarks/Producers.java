package io.github.pgqueue.benchmarks;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.atomic.AtomicLong;

/** Producer threads that send flat out for a while, numbering their messages from one counter. */
final class Producers {

	/** One send of {@code count} messages numbered from {@code first}. */
	@FunctionalInterface
	interface Send {

		void send(long first, int count) throws Exception;

	}

	private Producers() {
	}

	/** Runs {@code threads} producers for {@code duration}; returns how many messages they sent. */
	static long run(int threads, Duration duration, AtomicLong sequence, int perSend, Send send) {
		ExecutorService executor = Executors.newFixedThreadPool(threads);
		long deadline = System.nanoTime() + duration.toNanos();
		try {
			List<Future<Long>> futures = new ArrayList<>();
			for (int i = 0; i < threads; i++) {
				futures.add(executor.submit(() -> {
					long sent = 0;
					while (System.nanoTime() < deadline) {
						send.send(sequence.getAndAdd(perSend), perSend);
						sent += perSend;
					}
					return sent;
				}));
			}
			long total = 0;
			for (Future<Long> future : futures) {
				total += future.get();
			}
			return total;
		}
		catch (ExecutionException ex) {
			throw new IllegalStateException("A producer failed", ex.getCause());
		}
		catch (InterruptedException ex) {
			Thread.currentThread().interrupt();
			throw new IllegalStateException("Interrupted", ex);
		}
		finally {
			executor.shutdownNow();
		}
	}

}
