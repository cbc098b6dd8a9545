package io.github.pgqueue.benchmarks;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;

import io.github.pgqueue.AckMode;
import io.github.pgqueue.QueueTemplate;
import io.github.pgqueue.listener.DefaultQueueErrorHandler;
import io.github.pgqueue.listener.QueueListenerEndpoint;
import io.github.pgqueue.listener.QueueListenerEndpointRegistry;

/**
 * pgqueue through its public API: {@link QueueTemplate} for sends, and for consumption the
 * listener registry and endpoints that {@code @QueueListener} builds, in session mode, with the
 * starter's defaults (poll interval 1 s) unless a scenario sets the batch size.
 */
final class PgQueueSystem extends MessageTableSystem {

	/** The starter's default {@code pgqueue.listener.poll-interval}. */
	static final Duration POLL_INTERVAL = Duration.ofSeconds(1);

	/** The starter's default {@code pgqueue.listener.batch-size}. */
	static final int DEFAULT_BATCH_SIZE = 10;

	private final QueueTemplate template;

	PgQueueSystem(BenchDatabase database) {
		super(database);
		this.template = QueueTemplate.builder(database.appPool()).build();
	}

	@Override
	public String name() {
		return "pgqueue";
	}

	@Override
	public boolean claimsInBatches() {
		return true;
	}

	@Override
	public void send(long sequence) {
		this.template.send(QUEUE, new Tick(sequence));
	}

	@Override
	public void sendBatch(long first, int count) {
		List<Tick> ticks = new ArrayList<>(count);
		for (int i = 0; i < count; i++) {
			ticks.add(new Tick(first + i));
		}
		this.template.sendBatch(QUEUE, ticks);
	}

	@Override
	public Consumers startConsumers(int concurrency, int batchSize, MessageHandler handler) {
		QueueListenerEndpointRegistry registry = registry();
		registry.registerListenerEndpoint(endpoint("bench", QUEUE, concurrency, batchSize, handler));
		registry.start();
		return registry::stop;
	}

	@Override
	public Optional<Consumers> startIdleListeners(int listeners) {
		QueueListenerEndpointRegistry registry = registry();
		for (int i = 0; i < listeners; i++) {
			registry.registerListenerEndpoint(endpoint("idle-" + i, "idle-" + i, 1, DEFAULT_BATCH_SIZE, (n) -> {
			}));
		}
		registry.start();
		return Optional.of(registry::stop);
	}

	private QueueListenerEndpointRegistry registry() {
		return new QueueListenerEndpointRegistry(this.template, this.database.consumerPool(), Duration.ofSeconds(10));
	}

	private static QueueListenerEndpoint endpoint(String id, String queue, int concurrency, int batchSize,
			MessageHandler handler) {
		return new QueueListenerEndpoint(id, List.of(queue), concurrency, AckMode.AUTO, true, Tick.class,
				(message, ack) -> handler.onMessage(((Tick) message.payload()).n()), new DefaultQueueErrorHandler(),
				batchSize, POLL_INTERVAL);
	}

}
