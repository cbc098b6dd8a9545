package io.github.pgqueue.benchmarks;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;

import io.github.pgqueue.AckMode;
import io.github.pgqueue.ConsumptionMode;
import io.github.pgqueue.QueueTemplate;
import io.github.pgqueue.SendOptions;
import io.github.pgqueue.listener.ContainerProperties;
import io.github.pgqueue.listener.DefaultQueueErrorHandler;
import io.github.pgqueue.listener.QueueListenerEndpoint;
import io.github.pgqueue.listener.QueueListenerEndpointRegistry;

/**
 * pgqueue through its public API: {@link QueueTemplate} for sends, and for consumption the
 * listener registry and endpoints that {@code @QueueListener} builds, in session mode
 * ({@code pgqueue}) or transactional mode ({@code pgqueue-tx}: a JDBC transaction manager on the
 * application pool), either with its messages spread over FIFO groups ({@code pgqueue-fifo},
 * {@code pgqueue-tx-fifo}), with the starter's defaults (poll interval 1 s) unless a scenario sets the
 * batch size or, for delayed messages, the poll interval.
 */
final class PgQueueSystem extends MessageTableSystem {

	/** The starter's default {@code pgqueue.listener.poll-interval}. */
	static final Duration POLL_INTERVAL = Duration.ofSeconds(1);

	/** The starter's default {@code pgqueue.listener.batch-size}. */
	static final int DEFAULT_BATCH_SIZE = 10;

	private final QueueTemplate template;

	private final ConsumptionMode mode;

	/** FIFO groups the messages are spread over, round robin; 0 for none. */
	private final int groups;

	PgQueueSystem(BenchDatabase database, ConsumptionMode mode) {
		this(database, mode, 0);
	}

	PgQueueSystem(BenchDatabase database, ConsumptionMode mode, int groups) {
		super(database);
		this.template = QueueTemplate.builder(database.appPool()).build();
		this.mode = mode;
		this.groups = groups;
	}

	@Override
	public String name() {
		return ((this.mode == ConsumptionMode.TRANSACTIONAL) ? "pgqueue-tx" : "pgqueue")
				+ ((this.groups > 0) ? "-fifo" : "");
	}

	@Override
	public void preload(int count, Duration delay) {
		if (this.groups == 0) {
			super.preload(count, delay);
			return;
		}
		this.database.admin().update("""
				INSERT INTO pgqueue.message (queue, payload, visible_at, group_key)
				SELECT ?, '{"n": -1}'::jsonb, now() + ? * interval '1 millisecond', 'g' || (g % ?)
				  FROM generate_series(1, ?) g""", QUEUE, delay.toMillis(), this.groups, count);
	}

	private SendOptions options(long sequence) {
		return (this.groups > 0) ? SendOptions.builder().group("g" + (sequence % this.groups)).build()
				: SendOptions.DEFAULTS;
	}

	@Override
	public boolean drainOnly() {
		return this.groups > 0;
	}

	@Override
	public boolean claimsInBatches() {
		return true;
	}

	@Override
	public void send(long sequence) {
		this.template.send(QUEUE, new Tick(sequence), options(sequence));
	}

	@Override
	public void sendBatch(long first, int count) {
		List<Tick> ticks = new ArrayList<>(count);
		for (int i = 0; i < count; i++) {
			ticks.add(new Tick(first + i));
		}
		// With groups, one group per batch: the batch's first sequence number picks it.
		this.template.sendBatch(QUEUE, ticks, options(first));
	}

	@Override
	public boolean sendsDelayed() {
		return this.groups == 0;
	}

	@Override
	public void sendDelayed(long sequence, Duration delay) {
		this.template.send(QUEUE, new Tick(sequence), SendOptions.builder().delay(delay).build());
	}

	@Override
	public Consumers startConsumers(int concurrency, int batchSize, MessageHandler handler) {
		return start(concurrency, batchSize, POLL_INTERVAL, handler);
	}

	@Override
	public Consumers startDelayedConsumer(int batchSize, Duration pollInterval, MessageHandler handler) {
		return start(1, batchSize, pollInterval, handler);
	}

	private Consumers start(int concurrency, int batchSize, Duration pollInterval, MessageHandler handler) {
		QueueListenerEndpointRegistry registry = registry();
		registry.registerListenerEndpoint(
				endpoint("bench", QUEUE, concurrency, batchSize, pollInterval, this.mode, null, handler));
		registry.start();
		return registry::stop;
	}

	@Override
	public boolean hasQueues() {
		return true;
	}

	@Override
	public void send(String queue, long sequence) {
		this.template.send(queue, new Tick(sequence), options(sequence));
	}

	@Override
	public Consumers startQueueListeners(List<String> queues, int batchSize, MessageHandler handler) {
		QueueListenerEndpointRegistry registry = registry();
		for (String queue : queues) {
			registry.registerListenerEndpoint(
					endpoint("bench-" + queue, queue, 1, batchSize, POLL_INTERVAL, this.mode, null, handler));
		}
		registry.start();
		return registry::stop;
	}

	@Override
	public Optional<Consumers> startIdleListeners(int listeners) {
		QueueListenerEndpointRegistry registry = registry();
		for (int i = 0; i < listeners; i++) {
			registry.registerListenerEndpoint(endpoint("idle-" + i, "idle-" + i, 1, DEFAULT_BATCH_SIZE, POLL_INTERVAL,
					this.mode, null, (n) -> {
					}));
		}
		registry.start();
		return Optional.of(registry::stop);
	}

	private QueueListenerEndpointRegistry registry() {
		return new QueueListenerEndpointRegistry(this.template.context(), this.database.consumerPool(), Duration.ofSeconds(10));
	}

	/**
	 * The benchmark's listener {@code id} of {@code queue}: {@code concurrency} pollers at
	 * {@code batchSize} in {@code mode}, receiving only messages whose headers match {@code filter}
	 * if it is not null, each {@link Tick}'s number handed to {@code handler}.
	 */
	static QueueListenerEndpoint endpoint(String id, String queue, int concurrency, int batchSize,
			Duration pollInterval, ConsumptionMode mode, String filter, MessageHandler handler) {
		return QueueListenerEndpoint.builder(id)
				.listener(Tick.class, (message, ack) -> handler.onMessage(((Tick) message.payload()).n()))
				.containerProperties(ContainerProperties.builder(List.of(queue))
					.concurrency(concurrency)
					.errorHandler(new DefaultQueueErrorHandler())
					.batchSize(batchSize)
					.pollInterval(pollInterval)
					.mode(mode)
					.filter(filter)
					.build())
				.build();
	}

}
