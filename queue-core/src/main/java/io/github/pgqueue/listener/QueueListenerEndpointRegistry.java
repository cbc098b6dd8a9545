package io.github.pgqueue.listener;

import java.sql.SQLException;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collection;
import java.util.Collections;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CountDownLatch;
import java.util.function.Supplier;
import javax.sql.DataSource;

import io.github.pgqueue.ConsumptionMode;
import io.github.pgqueue.MessageArchive;
import io.github.pgqueue.QueueContext;
import io.github.pgqueue.internal.ConsumerSession;
import io.github.pgqueue.internal.ListenerMetrics;
import io.github.pgqueue.internal.QueueSql;
import io.github.pgqueue.observation.QueueProcessObservationConvention;

import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import org.springframework.context.SmartLifecycle;
import org.springframework.jdbc.support.JdbcTransactionManager;
import org.springframework.transaction.PlatformTransactionManager;
import org.springframework.util.Assert;

/**
 * Holds the listener containers of an application and the one LISTEN connection that wakes them;
 * the only lifecycle bean of the consumer side. Starts late and stops early, so that listeners
 * only run while the rest of the application is up.
 */
public class QueueListenerEndpointRegistry implements SmartLifecycle {

	private static final Logger logger = LoggerFactory.getLogger(QueueListenerEndpointRegistry.class);

	/**
	 * The lifecycle phase: late, so that listeners start after infrastructure with lower phases
	 * (the web server starts in {@code DEFAULT_PHASE - 2048}) and stop before it; beans in
	 * {@link SmartLifecycle#DEFAULT_PHASE} start after this registry and stop before it.
	 * Listeners start when the context is refreshed, so before {@code ApplicationRunner}s run.
	 */
	public static final int PHASE = Integer.MAX_VALUE - 100;

	/** How long running handlers may take to finish on stop unless configured otherwise. */
	public static final Duration DEFAULT_SHUTDOWN_TIMEOUT = Duration.ofSeconds(30);

	private final Map<String, QueueListenerContainer> containers = new LinkedHashMap<>();

	private final QueueContext context;

	/** The statements of the context's schema that the consumers run. */
	private final QueueSql sql;

	private final DataSource consumerDataSource;

	private final Duration shutdownTimeout;

	private final ListenerMetrics metrics;

	private PlatformTransactionManager transactionManager;

	private QueueListenerContainerCustomizer containerCustomizer = (container) -> {
	};

	private boolean virtualThreads;

	private QueueProcessObservationConvention observationConvention;

	private volatile NotifyListener notifyListener;

	/** Released when the registry stops: holds the non-daemon thread that keeps the JVM alive. */
	private CountDownLatch keepAlive;

	private Thread notifyThread;

	private volatile VisibleMessageSweep sweep;

	/** The containers of each queue, for the notifications: replaced whole when a listener registers. */
	private volatile Map<String, List<QueueListenerContainer>> containersByQueue = Map.of();

	private volatile boolean running;

	/** Whether the listeners' connections are pooled per transaction; null until probed. */
	private Boolean transactionPooled;

	/**
	 * A registry whose pollers take their sessions from the context's data source, and whose
	 * handlers get {@link #DEFAULT_SHUTDOWN_TIMEOUT} to finish on stop.
	 */
	public QueueListenerEndpointRegistry(QueueContext context) {
		this(context, context.dataSource(), DEFAULT_SHUTDOWN_TIMEOUT);
	}

	/**
	 * @param context where the data source, schema, lock namespace, converter and registries come
	 * from; the one the application's template and admin work in
	 * @param consumerDataSource where pollers and the LISTEN connection take their sessions;
	 * each poller keeps its connection, so it needs one connection per poller plus one
	 * @param shutdownTimeout how long running handlers may take to finish on stop
	 */
	public QueueListenerEndpointRegistry(QueueContext context, DataSource consumerDataSource,
			Duration shutdownTimeout) {
		this.context = context;
		this.sql = QueueSql.of(context.schema());
		this.consumerDataSource = consumerDataSource;
		this.shutdownTimeout = shutdownTimeout;
		this.metrics = new ListenerMetrics(context.meterRegistry());
	}

	/** Adds a listener; its container starts with the registry if the endpoint says so. */
	public synchronized void registerListenerEndpoint(QueueListenerEndpoint endpoint) {
		Assert.state(!this.containers.containsKey(endpoint.id()), () -> "Another @QueueListener already has id '"
				+ endpoint.id() + "'; give each listener a unique id");
		Supplier<ConsumerSession> sessions = () -> ConsumerSession.open(this.consumerDataSource, this.sql,
				this.context.lockNamespace(), this.context.maxPayloadBytes());
		PlatformTransactionManager transactions = (endpoint.containerProperties().mode() == ConsumptionMode.TRANSACTIONAL)
				? transactionManager() : null;
		QueueListenerContainer container = new QueueListenerContainer(endpoint, sessions, this.context, this.sql,
				transactions, this.metrics, this.observationConvention, this.shutdownTimeout, this.virtualThreads, () -> {
					checkStart(endpoint);
					checkPooling(endpoint);
					startNotifications();
				}, this::isWatching);
		this.containerCustomizer.customize(container);
		this.containers.put(endpoint.id(), container);
		indexByQueue();
		if (this.running && endpoint.containerProperties().autoStartup()) {
			container.start();
		}
	}

	/**
	 * Stops the container of listener {@code id}, giving its running handlers the shutdown
	 * timeout, and removes it, so that the id can be registered again: for listeners that come and
	 * go while the application runs, such as the consumer bindings of a messaging binder.
	 * @return whether there was such a listener
	 */
	public boolean unregisterListenerEndpoint(String id) {
		QueueListenerContainer container;
		synchronized (this) {
			container = this.containers.remove(id);
			indexByQueue();
		}
		if (container == null) {
			return false;
		}
		container.stop();
		return true;
	}

	/** Rebuilds {@link #containersByQueue} from the containers (guarded by this). */
	private void indexByQueue() {
		Map<String, List<QueueListenerContainer>> byQueue = new HashMap<>();
		for (QueueListenerContainer each : this.containers.values()) {
			for (String queue : each.endpoint().containerProperties().queues()) {
				byQueue.computeIfAbsent(queue, (key) -> new ArrayList<>()).add(each);
			}
		}
		this.containersByQueue = byQueue;
	}

	/**
	 * Runs each time the container of {@code endpoint} is about to start — with the registry, or
	 * by its own {@link QueueListenerContainer#start()} — before its pollers: an exception refuses
	 * the start, and the container stays stopped. Does nothing here; the Spring Boot registry
	 * checks that the listener's queues exist.
	 */
	protected void checkStart(QueueListenerEndpoint endpoint) {
	}

	/**
	 * Refuses a listener whose connections go through a pooler in transaction pooling (see
	 * {@link PoolingProbe}, run once, before the first listener starts): a session-mode poller
	 * holds its messages with session-level advisory locks from its claim to its ack, and a
	 * transactional one takes a message whose consumer died, and the LISTEN connection listens, on
	 * a session of their own, none of which survives a change of server session between
	 * transactions. A probe that cannot reach the database (it is down at startup) lets the
	 * listener start and runs again at the next start of a listener.
	 */
	private synchronized void checkPooling(QueueListenerEndpoint endpoint) {
		if (this.transactionPooled == null) {
			try {
				this.transactionPooled = PoolingProbe.transactionPooled(this.consumerDataSource);
			}
			catch (SQLException | RuntimeException ex) {
				logger.warn("Could not check whether the listeners' connections are pooled per transaction ({}); "
						+ "starting listener '{}' unchecked", ex.getMessage(), endpoint.id(), ex);
				return;
			}
		}
		if (this.transactionPooled) {
			boolean session = endpoint.containerProperties().mode() == ConsumptionMode.SESSION;
			throw new IllegalStateException("Listener '" + endpoint.id() + "' cannot start: its connections go "
					+ "through a pooler in transaction pooling (PgBouncer pool_mode=transaction), but "
					+ (session ? "session mode holds session-level advisory locks across transactions on one server "
							+ "connection"
							: "every listener keeps a session of its own for LISTEN, and transactional mode holds the "
									+ "messages of consumers that died with session-level advisory locks across "
									+ "transactions on one server connection")
					+ "; give the listeners session pooling or a direct connection to PostgreSQL "
					+ "(pgqueue.listener.jdbc-url), while sends and the transactions of transactional listeners may "
					+ "stay in transaction pooling");
		}
	}

	/**
	 * The transaction manager whose transactions run transactional listeners; it must manage the
	 * context's DataSource (so that handlers' writes through {@code JdbcTemplate} or JPA join the
	 * transaction that deletes their messages). Default: a {@link JdbcTransactionManager} on it.
	 */
	public synchronized void setTransactionManager(PlatformTransactionManager transactionManager) {
		this.transactionManager = transactionManager;
	}

	/**
	 * Applied to every container when its endpoint registers, before it starts: to set its task
	 * executor, or to pause it so that it starts paused.
	 */
	public synchronized void setContainerCustomizer(QueueListenerContainerCustomizer containerCustomizer) {
		Assert.notNull(containerCustomizer, "containerCustomizer must not be null");
		this.containerCustomizer = containerCustomizer;
	}

	/**
	 * Whether the pollers of containers registered from now on run on virtual threads (Java 21 or
	 * later); default false. Ignored for a container given a task executor of its own.
	 */
	public synchronized void setVirtualThreads(boolean virtualThreads) {
		this.virtualThreads = virtualThreads;
	}

	/**
	 * The convention of the {@code pgqueue.process} observation of listeners registered after
	 * this call that have observation enabled ({@link QueueListenerEndpoint#observationEnabled()});
	 * null (the default) for
	 * {@link io.github.pgqueue.observation.DefaultQueueProcessObservationConvention}. The
	 * observations are recorded in the context's observation registry.
	 */
	public synchronized void setObservationConvention(QueueProcessObservationConvention observationConvention) {
		this.observationConvention = observationConvention;
	}

	private PlatformTransactionManager transactionManager() {
		if (this.transactionManager == null) {
			this.transactionManager = new JdbcTransactionManager(this.context.dataSource());
		}
		return this.transactionManager;
	}

	/**
	 * The container of listener {@code id}, or null: start, stop, pause or resume it at runtime.
	 * A listener with {@code autoStartup = false} is started this way.
	 */
	public synchronized QueueListenerContainer getListenerContainer(String id) {
		return this.containers.get(id);
	}

	/** The ids of the listeners, in registration order. */
	public synchronized java.util.Set<String> getListenerContainerIds() {
		return Collections.unmodifiableSet(new java.util.LinkedHashSet<>(this.containers.keySet()));
	}

	/** All containers, in registration order. */
	public synchronized Collection<QueueListenerContainer> getListenerContainers() {
		return Collections.unmodifiableCollection(new java.util.ArrayList<>(this.containers.values()));
	}

	/** The total number of poller threads, i.e. of consumer connections besides the LISTEN one. */
	public synchronized int totalConcurrency() {
		return this.containers.values().stream().mapToInt((c) -> c.endpoint().containerProperties().concurrency()).sum();
	}

	/** Whether the LISTEN connection is up. */
	public boolean isListening() {
		NotifyListener listener = this.notifyListener;
		return listener != null && listener.isListening();
	}

	/**
	 * Whether the LISTEN connection is up and the last sweep of the queues for visible messages
	 * worked: idle pollers are then woken for all they would find, and poll on their own only
	 * rarely.
	 */
	boolean isWatching() {
		VisibleMessageSweep current = this.sweep;
		return current != null && current.isWorking() && isListening();
	}

	@Override
	public synchronized void start() {
		if (this.running) {
			return;
		}
		this.running = true;
		if (this.notifyListener != null) {
			// A container was started before the registry: the application consumes from now on.
			startKeepAlive();
		}
		if (this.containers.values().stream().noneMatch((c) -> c.endpoint().containerProperties().autoStartup())) {
			return;
		}
		this.containers.values().stream()
			.filter((c) -> c.endpoint().containerProperties().autoStartup())
			.forEach(QueueListenerContainer::start);
	}

	/**
	 * Starts the one LISTEN connection, when the first listener starts, and the thread that keeps
	 * the JVM alive ({@link #startKeepAlive()}).
	 */
	private synchronized void startNotifications() {
		startKeepAlive();
		if (this.notifyListener != null) {
			return;
		}
		this.notifyListener = new NotifyListener(this.consumerDataSource, this.sql.channel(),
				this::wake, this::wakeAll);
		this.notifyThread = new Thread(this.notifyListener, "pgqueue-notify");
		this.notifyThread.setDaemon(true);
		this.notifyThread.start();
		MessageArchive archive = new MessageArchive(this.context);
		this.sweep = new VisibleMessageSweep(this.context.dataSource(), this.sql, this::getListenerContainers,
				this::wakeAll, archive::upkeep);
		Thread sweeper = new Thread(this.sweep, "pgqueue-sweep");
		sweeper.setDaemon(true);
		sweeper.start();
	}

	/**
	 * Starts, while the registry runs, a non-daemon thread that keeps the JVM alive until the
	 * registry stops: pollers are daemon threads (one stuck in a handler must not keep a stopped
	 * application's JVM alive), yet an application that only consumes queues must keep running, as
	 * one that only consumes Kafka topics does. None while the registry does not run (a container
	 * started before it or after it stopped, from the dashboard during shutdown say): no stop of the
	 * registry would end that thread, and the JVM could never exit.
	 */
	private synchronized void startKeepAlive() {
		if (!this.running || this.keepAlive != null) {
			return;
		}
		CountDownLatch stopped = new CountDownLatch(1);
		this.keepAlive = stopped;
		Thread keeper = new Thread(() -> {
			try {
				stopped.await();
			}
			catch (InterruptedException ex) {
				Thread.currentThread().interrupt();
			}
		}, "pgqueue-keep-alive");
		keeper.setDaemon(false);
		keeper.start();
	}

	/**
	 * Stops every listener: no claim and no handler starts after this call; running handlers get
	 * the shutdown timeout to finish, then all still running are interrupted at once and given
	 * {@code QueueListenerContainer.INTERRUPT_GRACE} more in all; their messages are given back.
	 */
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
		stopping.forEach((container) -> container.interruptAfter(deadline));
		long graceDeadline = deadline + QueueListenerContainer.INTERRUPT_GRACE.toNanos();
		stopping.forEach((container) -> container.finishStop(graceDeadline));
		NotifyListener listener;
		Thread thread;
		synchronized (this) {
			listener = this.notifyListener;
			thread = this.notifyThread;
			this.notifyListener = null;
			this.notifyThread = null;
			if (this.sweep != null) {
				this.sweep.stop();
				this.sweep = null;
			}
			if (this.keepAlive != null) {
				this.keepAlive.countDown();
				this.keepAlive = null;
			}
		}
		if (listener != null) {
			listener.stop();
			try {
				thread.join(2_000);
			}
			catch (InterruptedException ex) {
				Thread.currentThread().interrupt();
			}
		}
	}

	/**
	 * Stops asynchronously and runs {@code callback} when done, so that Spring's
	 * {@code spring.lifecycle.timeout-per-shutdown-phase} bounds how long the context waits.
	 */
	@Override
	public void stop(Runnable callback) {
		Thread stopper = new Thread(() -> {
			try {
				stop();
			}
			finally {
				callback.run();
			}
		}, "pgqueue-stop");
		stopper.setDaemon(true);
		stopper.start();
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
		for (QueueListenerContainer container : this.containersByQueue.getOrDefault(queue, List.of())) {
			container.wake(queue);
		}
	}

	private void wakeAll() {
		for (QueueListenerContainer container : getListenerContainers()) {
			container.wakeAll();
		}
	}

}
