package io.github.pgqueue.benchmarks;

import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;

import io.github.pgqueue.ConsumptionMode;
import io.github.pgqueue.QueueTemplate;
import io.github.pgqueue.listener.QueueListenerContainer;
import io.github.pgqueue.listener.QueueListenerEndpointRegistry;

import org.springframework.cloud.stream.binding.BindingsLifecycleController;
import org.springframework.cloud.stream.binding.BindingsLifecycleController.State;
import org.springframework.context.ConfigurableApplicationContext;

/**
 * One side of the binder scenario in a running {@link BinderApplication}: the function bound with
 * the pgqueue binder ({@code binder}, {@code binder-tx}) or the {@code @QueueListener}
 * ({@code queue-listener}, {@code queue-listener-tx}), on the same queue. Both sides send with the
 * application's {@link QueueTemplate} straight to that queue, so that only the consuming path
 * differs; its concurrency and batch size are the application's.
 */
final class BinderSystem implements QueueSystem {

	/** Which path consumes. */
	enum Path {

		/** The {@code Consumer<Tick>} function, through Spring Cloud Stream and the pgqueue binder. */
		BINDER("binder"),

		/** The {@code @QueueListener(Tick)} method. */
		QUEUE_LISTENER("queue-listener");

		private final String name;

		Path(String name) {
			this.name = name;
		}

	}

	private final BenchDatabase database;

	private final ConfigurableApplicationContext application;

	private final BinderApplication.HandlerSlot slot;

	private final Path path;

	private final ConsumptionMode mode;

	private final int concurrency;

	private final int batchSize;

	private final QueueTemplate template;

	BinderSystem(BenchDatabase database, ConfigurableApplicationContext application, BinderApplication.HandlerSlot slot,
			Path path, ConsumptionMode mode, int concurrency, int batchSize) {
		this.database = database;
		this.application = application;
		this.slot = slot;
		this.path = path;
		this.mode = mode;
		this.concurrency = concurrency;
		this.batchSize = batchSize;
		this.template = application.getBean(QueueTemplate.class);
	}

	/** Every binder scenario system's name. */
	static final List<String> NAMES = Arrays.stream(Path.values())
		.flatMap((path) -> Arrays.stream(ConsumptionMode.values()).map((mode) -> name(path, mode)))
		.toList();

	static String name(Path path, ConsumptionMode mode) {
		return path.name + ((mode == ConsumptionMode.TRANSACTIONAL) ? "-tx" : "");
	}

	@Override
	public String name() {
		return name(this.path, this.mode);
	}

	@Override
	public boolean claimsInBatches() {
		return true;
	}

	@Override
	public void send(long sequence) {
		this.template.send(BinderApplication.QUEUE, new Tick(sequence));
	}

	@Override
	public void sendBatch(long first, int count) {
		List<Tick> ticks = new ArrayList<>(count);
		for (int i = 0; i < count; i++) {
			ticks.add(new Tick(first + i));
		}
		this.template.sendBatch(BinderApplication.QUEUE, ticks);
	}

	@Override
	public Consumers startConsumers(int concurrency, int batchSize, MessageHandler handler) {
		if (concurrency != this.concurrency || batchSize != this.batchSize) {
			throw new IllegalArgumentException("The binder application runs " + this.concurrency + " x batch "
					+ this.batchSize + ", not " + concurrency + " x batch " + batchSize);
		}
		this.slot.set(handler);
		if (this.path == Path.BINDER) {
			BindingsLifecycleController bindings = this.application.getBean(BindingsLifecycleController.class);
			bindings.changeState(BinderApplication.BINDING, State.STARTED);
			return () -> bindings.changeState(BinderApplication.BINDING, State.STOPPED);
		}
		QueueListenerContainer container = this.application.getBean(QueueListenerEndpointRegistry.class)
			.getListenerContainer(BinderApplication.LISTENER_ID);
		container.start();
		return container::stop;
	}

	@Override
	public void preload(int count, Duration delay) {
		this.database.admin().update("""
				INSERT INTO pgqueue.message (queue, payload, visible_at)
				SELECT ?, '{"n": -1}'::jsonb, now() + ? * interval '1 millisecond' FROM generate_series(1, ?)""",
				BinderApplication.QUEUE, delay.toMillis(), count);
	}

	@Override
	public long pending() {
		return this.database.queryLong("SELECT count(*) FROM pgqueue.message WHERE queue = ?", BinderApplication.QUEUE);
	}

	@Override
	public void clear() {
		this.database.execute("TRUNCATE pgqueue.message");
	}

	@Override
	public String table() {
		return MessageTableSystem.TABLE;
	}

}
