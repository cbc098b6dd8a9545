package io.github.pgqueue.boot.autoconfigure;

import java.time.Duration;
import java.util.List;
import java.util.Set;
import java.util.function.Supplier;

import javax.sql.DataSource;

import io.github.pgqueue.ConsumptionMode;
import io.github.pgqueue.QueueAdmin;
import io.github.pgqueue.QueueContext;
import io.github.pgqueue.listener.QueueListenerEndpoint;
import io.github.pgqueue.listener.QueueListenerEndpointRegistry;

import org.springframework.beans.factory.ObjectProvider;
import org.springframework.transaction.PlatformTransactionManager;
import org.springframework.transaction.support.ResourceTransactionManager;

/**
 * The registry, which sizes the listeners' connections for its total concurrency before it
 * starts, and again for every endpoint registered while it runs (a lazy listener bean created
 * later), or refuses that endpoint with the numbers. Transactional listeners run in transactions
 * of the application's transaction manager, found when the first one registers.
 */
final class PgQueueListenerEndpointRegistry extends QueueListenerEndpointRegistry {

	private final ListenerConnections connections;

	private final QueueContext context;

	private final ObjectProvider<PlatformTransactionManager> transactionManagers;

	private final Supplier<Set<String>> knownQueues;

	private boolean transactionManagerChosen;

	PgQueueListenerEndpointRegistry(QueueContext context, ListenerConnections connections,
			Duration shutdownTimeout, ObjectProvider<PlatformTransactionManager> transactionManagers,
			Supplier<Set<String>> knownQueues) {
		super(context, connections.dataSource(), shutdownTimeout);
		this.context = context;
		this.connections = connections;
		this.transactionManagers = transactionManagers;
		this.knownQueues = knownQueues;
	}

	/**
	 * A listener starts only on queues that exist when it starts: declared in the configuration
	 * or in the database (created at runtime with {@code QueueAdmin.create}), or the dead-letter
	 * queue of one.
	 */
	@Override
	protected void checkStart(QueueListenerEndpoint endpoint) {
		Set<String> known = this.knownQueues.get();
		List<String> unknown = endpoint.containerProperties().queues().stream()
			.filter((queue) -> !known.contains(queue))
			.toList();
		if (!unknown.isEmpty()) {
			throw new IllegalStateException("Listener '" + endpoint.id() + "' cannot start: it consumes "
					+ ((unknown.size() == 1) ? "queue '" + unknown.get(0) + "', which does not exist"
							: "queues " + unknown + ", which do not exist")
					+ "; create it with QueueAdmin.create before starting the listener, or declare it under "
					+ "pgqueue.queues (existing queues: " + known + ")");
		}
	}

	@Override
	public synchronized void registerListenerEndpoint(QueueListenerEndpoint endpoint) {
		if (endpoint.containerProperties().mode() == ConsumptionMode.TRANSACTIONAL && !this.transactionManagerChosen) {
			chooseTransactionManager(endpoint);
		}
		if (isRunning()) { // also for a listener started later by hand
			this.connections.prepare(totalConcurrency() + endpoint.containerProperties().concurrency());
		}
		super.registerListenerEndpoint(endpoint);
	}

	/**
	 * The single or primary transaction manager, which must manage pgqueue's DataSource; without
	 * any, the core's default (a JDBC transaction manager on that DataSource).
	 */
	private void chooseTransactionManager(QueueListenerEndpoint endpoint) {
		PlatformTransactionManager manager = this.transactionManagers.getIfUnique();
		if (manager == null) {
			List<PlatformTransactionManager> all = this.transactionManagers.stream().toList();
			if (!all.isEmpty()) {
				throw new IllegalStateException("Listener '" + endpoint.id() + "' is transactional, but the application "
						+ "has " + all.size() + " PlatformTransactionManager beans and none is @Primary; mark the one "
						+ "that manages pgqueue's DataSource @Primary");
			}
		}
		else {
			DataSource queueDataSource = this.context.dataSource();
			if (manager instanceof ResourceTransactionManager resource
					&& resource.getResourceFactory() instanceof DataSource managed && managed != queueDataSource) {
				throw new IllegalStateException("Listener '" + endpoint.id() + "' is transactional, but the "
						+ "transaction manager " + manager.getClass().getSimpleName() + " manages another DataSource "
						+ "than pgqueue's; a handler's writes and its message's removal would commit apart. Make the "
						+ "primary transaction manager manage pgqueue's DataSource, or use session mode");
			}
			setTransactionManager(manager);
		}
		this.transactionManagerChosen = true;
	}

	@Override
	public synchronized void start() {
		if (!isRunning()) {
			this.connections.prepare(totalConcurrency());
		}
		super.start();
	}

}
