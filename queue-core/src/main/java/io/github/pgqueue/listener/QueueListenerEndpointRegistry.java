package io.github.pgqueue.listener;

import java.time.Duration;
import java.util.Collection;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.function.Supplier;

import javax.sql.DataSource;

import io.github.pgqueue.QueueTemplate;
import io.github.pgqueue.internal.ConsumerSession;
import io.github.pgqueue.internal.ListenerMetrics;
import io.github.pgqueue.internal.NotifyListener;

import org.springframework.context.SmartLifecycle;
import org.springframework.util.Assert;

/**
 * Holds the listener containers of an application and the one LISTEN connection that wakes them;
 * the only lifecycle bean of the consumer side. Starts late and stops early, so that listeners
 * only run while the rest of the application is up.
 */
public class QueueListenerEndpointRegistry implements SmartLifecycle {

	/** Started after, and stopped before, ordinary lifecycle beans. */
	public static final int PHASE = Integer.MAX_VALUE - 100;

	private final Map<String, QueueListenerContainer> containers = new LinkedHashMap<>();

	private final QueueTemplate template;

	private final DataSource consumerDataSource;

	private final Duration shutdownTimeout;

	private final ListenerMetrics metrics;

	private NotifyListener notifyListener;

	private Thread notifyThread;

	private volatile boolean running;

	/**
	 * @param template where the schema, lock namespace, converter and meter registry come from
	 * @param consumerDataSource where pollers and the LISTEN connection take their sessions;
	 * each poller keeps its connection, so it needs one connection per poller plus one
	 * @param shutdownTimeout how long running handlers may take to finish on stop
	 */
	public QueueListenerEndpointRegistry(QueueTemplate template, DataSource consumerDataSource,
			Duration shutdownTimeout) {
		this.template = template;
		this.consumerDataSource = consumerDataSource;
		this.shutdownTimeout = shutdownTimeout;
		this.metrics = new ListenerMetrics(template.meterRegistry());
	}

	/** Adds a listener; its container starts with the registry if the endpoint says so. */
	public synchronized void registerListenerEndpoint(QueueListenerEndpoint endpoint) {
		Assert.state(!this.containers.containsKey(endpoint.id()), () -> "Another @QueueListener already has id '"
				+ endpoint.id() + "'; give each listener a unique id");
		Supplier<ConsumerSession> sessions = () -> this.template.openSession(this.consumerDataSource);
		QueueListenerContainer container = new QueueListenerContainer(endpoint, sessions,
				this.template.payloadConverter(), this.metrics);
		this.containers.put(endpoint.id(), container);
		if (this.running && endpoint.autoStartup()) {
			container.start();
		}
	}

	/** The container of listener {@code id}, or null. */
	public synchronized QueueListenerContainer getListenerContainer(String id) {
		return this.containers.get(id);
	}

	/** All containers, in registration order. */
	public synchronized Collection<QueueListenerContainer> getListenerContainers() {
		return Collections.unmodifiableCollection(new java.util.ArrayList<>(this.containers.values()));
	}

	/** The total number of poller threads, i.e. of consumer connections besides the LISTEN one. */
	public synchronized int totalConcurrency() {
		return this.containers.values().stream().mapToInt((c) -> c.endpoint().concurrency()).sum();
	}

	/** Whether the LISTEN connection is up. */
	public boolean isListening() {
		NotifyListener listener = this.notifyListener;
		return listener != null && listener.isListening();
	}

	@Override
	public synchronized void start() {
		if (this.running) {
			return;
		}
		this.running = true;
		if (this.containers.isEmpty()) {
			return;
		}
		this.notifyListener = new NotifyListener(this.consumerDataSource, this.template.sql().channel(),
				this::wake, this::wakeAll);
		this.notifyThread = new Thread(this.notifyListener, "pgqueue-notify");
		this.notifyThread.setDaemon(true);
		this.notifyThread.start();
		this.containers.values().stream().filter((c) -> c.endpoint().autoStartup()).forEach(QueueListenerContainer::start);
	}

	@Override
	public void stop() {
		Collection<QueueListenerContainer> stopping;
		synchronized (this) {
			if (!this.running) {
				return;
			}
			this.running = false;
			stopping = new java.util.ArrayList<>(this.containers.values());
		}
		stopping.forEach(QueueListenerContainer::signalStop);
		long deadline = System.nanoTime() + this.shutdownTimeout.toNanos();
		stopping.forEach((container) -> container.awaitStop(deadline));
		if (this.notifyListener != null) {
			this.notifyListener.stop();
			try {
				this.notifyThread.join(2_000);
			}
			catch (InterruptedException ex) {
				Thread.currentThread().interrupt();
			}
		}
	}

	@Override
	public boolean isRunning() {
		return this.running;
	}

	@Override
	public int getPhase() {
		return PHASE;
	}

	private void wake(String queue) {
		for (QueueListenerContainer container : getListenerContainers()) {
			container.wake(queue);
		}
	}

	private void wakeAll() {
		for (QueueListenerContainer container : getListenerContainers()) {
			container.wakeAll();
		}
	}

}
