package io.github.pgqueue.benchmarks;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.atomic.AtomicLong;

/** Producer threads that send for a while, flat out or at a fixed rate, numbering their messages from one counter. */
final class Producers {

	/** One send of {@code count} messages numbered from {@code first}. */
	@FunctionalInterface
	interface Send {

		void send(long first, int count) throws Exception;

	}

	private Producers() {
	}

	/** Runs {@code threads} producers flat out for {@code duration}; returns how many messages they sent. */
	static long run(int threads, Duration duration, AtomicLong sequence, int perSend, Send send) {
		return run(threads, duration, 0, sequence, perSend, send);
	}

	/**
	 * Runs {@code threads} producers for {@code duration}, together at most {@code ratePerSecond}
	 * messages a second (0: flat out); returns how many messages they sent.
	 */
	static long run(int threads, Duration duration, double ratePerSecond, AtomicLong sequence, int perSend,
			Send send) {
		long intervalNanos = (ratePerSecond > 0) ? (long) (1e9 * threads * perSend / ratePerSecond) : 0;
		ExecutorService executor = Executors.newFixedThreadPool(threads);
		long deadline = System.nanoTime() + duration.toNanos();
		try {
			List<Future<Long>> futures = new ArrayList<>();
			for (int i = 0; i < threads; i++) {
				futures.add(executor.submit(() -> {
					long sent = 0;
					long next = System.nanoTime();
					while (System.nanoTime() < deadline) {
						if (intervalNanos > 0) {
							long wait = next - System.nanoTime();
							if (wait > 0) {
								java.util.concurrent.locks.LockSupport.parkNanos(wait);
							}
							next += intervalNanos;
						}
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
