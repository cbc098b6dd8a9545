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
			double[] rates = new double[2];
			for (boolean fair : new boolean[] { true, false }) {
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
				double seconds = (aDoneAt.get() - started) / 1e9;
				double rate = BACKLOG / seconds;
				rates[fair ? 1 : 0] = rate;
				List<Long> sorted = new ArrayList<>(waits);
				sorted.sort(null);
				double p50 = sorted.get(sorted.size() / 2) / 1e6;
				double p99 = sorted.get(Math.min(sorted.size() - 1, (int) Math.ceil(sorted.size() * 0.99) - 1)) / 1e6;
				this.context.results()
					.add(new BenchRow("noisy-neighbour", system + (fair ? "-fair" : ""), CONSUMERS, String.valueOf(BATCH),
							BACKLOG, rate, p50, p99, Map.of())
						.with("b_messages", sorted.size())
						.with("b_max_ms", sorted.get(sorted.size() - 1) / 1e6)
						.with("a_seconds", seconds));
			}
			this.context.results()
				.ratio("scenario=noisy-neighbour system=" + system + " consumers=" + CONSUMERS + " batch=" + BATCH
						+ " a_rate_fair/plain=" + Results.ratio(rates[1] / rates[0]));
		}
	}

}
