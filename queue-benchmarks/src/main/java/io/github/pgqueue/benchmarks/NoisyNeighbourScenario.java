package io.github.pgqueue.benchmarks;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.LongAdder;

import io.github.pgqueue.ConsumptionMode;
import io.github.pgqueue.QueueAdmin;
import io.github.pgqueue.QueueContext;
import io.github.pgqueue.QueueDefinition;
import io.github.pgqueue.QueueTemplate;
import io.github.pgqueue.SendOptions;
import io.github.pgqueue.listener.ContainerProperties;
import io.github.pgqueue.listener.DefaultQueueErrorHandler;
import io.github.pgqueue.listener.QueueListenerEndpoint;
import io.github.pgqueue.listener.QueueListenerEndpointRegistry;

/**
 * {@code noisy-neighbour}: tenant a sends a backlog of {@value #BACKLOG} messages, then, while 4
 * consumers (batch 10) drain it, tenant b sends {@value #B_MESSAGES} spread over 10 s. Run on a
 * queue whose definition names the header {@code tenant} as its concurrency key (fair claims) and
 * on one that names none (arrival order), in both modes: a's drain rate (its backlog over the time
 * to drain it) and the p50 / p99 / longest wait of b's messages from send to handler start.
 */
final class NoisyNeighbourScenario {

	static final int BACKLOG = 100_000;

	static final int B_MESSAGES = 100;

	private static final int CONSUMERS = 4;

	private static final int BATCH = 10;

	private final BenchContext context;

	NoisyNeighbourScenario(BenchContext context) {
		this.context = context;
	}

	void run() {
		QueueTemplate template = new QueueTemplate(QueueContext.of(this.context.database().appPool()));
		for (ConsumptionMode mode : ConsumptionMode.values()) {
			String system = (mode == ConsumptionMode.SESSION) ? "pgqueue" : "pgqueue-tx";
			drain(template, mode, false); // warm-up, not counted
			// Alternated, so that neither side gains from running later (warmer caches, JIT).
			List<Drain> fair = new ArrayList<>();
			List<Drain> plain = new ArrayList<>();
			fair.add(drain(template, mode, true));
			plain.add(drain(template, mode, false));
			plain.add(drain(template, mode, false));
			fair.add(drain(template, mode, true));
			double fairRate = report(system + "-fair", fair);
			double plainRate = report(system, plain);
			this.context.results()
				.ratio("scenario=noisy-neighbour system=" + system + " consumers=" + CONSUMERS + " batch=" + BATCH
						+ " a_rate_fair/plain=" + Results.ratio(fairRate / plainRate));
		}
	}

	/**
	 * Prints the row of {@code runs} of one side: a's mean drain rate, and b's waits over all runs;
	 * returns the rate.
	 */
	private double report(String system, List<Drain> runs) {
		double rate = runs.stream().mapToDouble(Drain::rate).average().orElseThrow();
		List<Long> sorted = new ArrayList<>();
		runs.forEach((run) -> sorted.addAll(run.waits()));
		sorted.sort(null);
		double p50 = sorted.get(sorted.size() / 2) / 1e6;
		double p99 = sorted.get(Math.min(sorted.size() - 1, (int) Math.ceil(sorted.size() * 0.99) - 1)) / 1e6;
		this.context.results()
			.add(new BenchRow("noisy-neighbour", system, CONSUMERS, String.valueOf(BATCH), BACKLOG, rate, p50, p99,
					Map.of())
				.with("runs", runs.size())
				.with("b_messages", sorted.size())
				.with("b_max_ms", sorted.get(sorted.size() - 1) / 1e6)
				.with("a_rates", runs.stream().map((run) -> String.format(java.util.Locale.ROOT, "%.0f", run.rate()))
					.collect(java.util.stream.Collectors.joining("/"))));
		return rate;
	}

	/** One drain: a's rate (its backlog over the time from the listeners' start) and b's waits. */
	private record Drain(double rate, List<Long> waits) {
	}

	/**
	 * Sends tenant a's backlog, starts the consumers, sends b's messages one every 100 ms, and waits
	 * until both are handled; {@code fair} declares the queue with the concurrency key.
	 */
	private Drain drain(QueueTemplate template, ConsumptionMode mode, boolean fair) {
		String queue = "noisy-" + (fair ? "fair" : "plain");
		this.context.database().execute("DELETE FROM pgqueue.message WHERE queue = '" + queue + "'");
		QueueDefinition definition = QueueDefinition.of(queue);
		new QueueAdmin(template.context()).declare(fair ? definition.withConcurrencyKey("tenant") : definition);
		SendOptions a = SendOptions.builder().header("tenant", "a").build();
		for (int sent = 0; sent < BACKLOG; sent += 1000) {
			List<Long> payloads = new ArrayList<>(1000);
			for (long n = sent; n < sent + 1000; n++) {
				payloads.add(n);
			}
			template.sendBatch(queue, payloads, a);
		}
		this.context.database().execute("VACUUM ANALYZE pgqueue.message");
		Map<Long, Long> sentAt = new ConcurrentHashMap<>();
		List<Long> waits = java.util.Collections.synchronizedList(new ArrayList<>());
		LongAdder handledA = new LongAdder();
		AtomicLong aDoneAt = new AtomicLong();
		QueueListenerEndpointRegistry registry = new QueueListenerEndpointRegistry(template.context(),
				this.context.database().consumerPool(), Duration.ofSeconds(10));
		registry.registerListenerEndpoint(QueueListenerEndpoint.builder("noisy-" + queue)
			.listener(Long.class, (message, ack) -> {
				long n = (Long) message.payload();
				if (n >= BACKLOG) {
					waits.add(System.nanoTime() - sentAt.get(n));
				}
				else {
					handledA.increment();
					if (handledA.sum() == BACKLOG) {
						aDoneAt.set(System.nanoTime());
					}
				}
			})
			.containerProperties(ContainerProperties.builder(List.of(queue))
				.concurrency(CONSUMERS)
				.batchSize(BATCH)
				.errorHandler(new DefaultQueueErrorHandler())
				.pollInterval(Duration.ofMillis(100))
				.mode(mode)
				.build())
			.build());
		long started = System.nanoTime();
		registry.start();
		try {
			BenchContext.pause(200);
			SendOptions b = SendOptions.builder().header("tenant", "b").build();
			for (int i = 0; i < B_MESSAGES; i++) {
				long n = BACKLOG + i;
				sentAt.put(n, System.nanoTime());
				template.send(queue, n, b);
				BenchContext.pause(100);
			}
			long deadline = System.nanoTime() + Duration.ofSeconds(120).toNanos();
			while ((waits.size() < B_MESSAGES || aDoneAt.get() == 0) && System.nanoTime() < deadline) {
				BenchContext.pause(50);
			}
		}
		finally {
			registry.stop();
		}
		if (aDoneAt.get() == 0 || waits.size() < B_MESSAGES) {
			throw new IllegalStateException("noisy-neighbour: the " + (fair ? "fair" : "plain") + " drain did not end "
					+ "within 120 s (" + handledA.sum() + " of a's " + BACKLOG + ", " + waits.size() + " of b's "
					+ B_MESSAGES + " handled)");
		}
		return new Drain(BACKLOG / ((aDoneAt.get() - started) / 1e9), new ArrayList<>(waits));
	}

}
