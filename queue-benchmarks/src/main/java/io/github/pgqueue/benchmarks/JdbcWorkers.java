package io.github.pgqueue.benchmarks;

import java.sql.Connection;
import java.sql.SQLException;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;

import javax.sql.DataSource;

import io.github.pgqueue.internal.Linger;

/**
 * The bare JDBC loop of the plain-SQL baselines: N threads, each keeping one connection, polling
 * until the queue is empty and then waiting for a notification (at most the poll interval, 1 s
 * like pgqueue's default unless a scenario sets it, or less when the poller knows the next
 * delayed message falls due sooner).
 */
final class JdbcWorkers implements Consumers {

	/** One worker's statements, prepared on its own connection. */
	interface Poller {

		/** Receives, handles and completes one batch; returns how many messages it handled. */
		int poll() throws SQLException;

		/** After a poll that found nothing: how long until the queue's next delayed message is due, or null if unknown. */
		default Duration nextDue() throws SQLException {
			return null;
		}

		/**
		 * After a poll that handled messages: whether it took a full batch, so that the worker wakes
		 * its idle siblings as pgqueue's pollers do (more is likely waiting).
		 */
		default boolean tookFullBatch() {
			return false;
		}

		/**
		 * When the worker stops, before its connection goes back to the pool: undoes what the
		 * poller set on the connection, so that the next system to borrow it starts from the
		 * server's defaults.
		 */
		default void close() throws SQLException {
		}

	}

	/** Prepares a worker's poller on its connection. */
	interface PollerFactory {

		Poller create(Connection connection) throws SQLException;

	}

	/** Prepares the poller of a worker of one queue on its connection. */
	interface QueuePollerFactory {

		Poller create(Connection connection, String queue) throws SQLException;

	}

	private final List<Thread> threads = new ArrayList<>();

	private final Wakeups wakeups;

	private final Duration pollInterval;

	private volatile boolean running = true;


	JdbcWorkers(String name, DataSource dataSource, String queue, int concurrency, PollerFactory pollers) {
		this(name, dataSource, queue, concurrency, PgQueueSystem.POLL_INTERVAL, pollers);
	}

	JdbcWorkers(String name, DataSource dataSource, String queue, int concurrency, Duration pollInterval,
			PollerFactory pollers) {
		this.pollInterval = pollInterval;
		this.wakeups = new Wakeups(dataSource, queue, concurrency);
		for (int i = 0; i < concurrency; i++) {
			int worker = i;
			Thread thread = new Thread(() -> run(dataSource, worker, pollers), name + "-" + i);
			this.threads.add(thread);
			thread.start();
		}
	}

	/** One worker per queue, all woken through one LISTEN connection. */
	JdbcWorkers(String name, DataSource dataSource, List<String> queues, Duration pollInterval,
			QueuePollerFactory pollers) {
		this.pollInterval = pollInterval;
		this.wakeups = new Wakeups(dataSource, queues.toArray(new String[0]));
		for (int i = 0; i < queues.size(); i++) {
			int worker = i;
			String queue = queues.get(i);
			Thread thread = new Thread(() -> run(dataSource, worker, (connection) -> pollers.create(connection, queue)),
					name + "-" + queue);
			this.threads.add(thread);
			thread.start();
		}
	}

	private void run(DataSource dataSource, int worker, PollerFactory pollers) {
		try (Connection connection = dataSource.getConnection()) {
			connection.setAutoCommit(true);
			Poller poller = pollers.create(connection);
			try {
				poll(worker, poller);
			}
			finally {
				poller.close();
			}
		}
		catch (SQLException ex) {
			throw new IllegalStateException("Baseline worker " + worker + " failed", ex);
		}
		catch (InterruptedException ex) {
			Thread.currentThread().interrupt();
		}
	}

	private void poll(int worker, Poller poller) throws SQLException, InterruptedException {
		Linger linger = new Linger(); // as pgqueue's pollers: a busy worker naps after work
		while (this.running) {
			int handled = poller.poll();
			if (handled > 0 && poller.tookFullBatch()) {
				this.wakeups.wakeSiblings(worker);
			}
			if (handled > 0) {
				linger.workFound(handled);
			}
			else {
				Duration due = poller.nextDue();
				Duration wait = (due != null && due.compareTo(this.pollInterval) < 0) ? due : this.pollInterval;
				Duration lingering = linger.next();
				this.wakeups.await(worker, ((lingering != null && lingering.compareTo(wait) < 0) ? lingering : wait).toMillis());
			}
		}
	}

	@Override
	public void close() {
		this.running = false;
		this.wakeups.close();
		for (Thread thread : this.threads) {
			try {
				thread.join(10_000);
			}
			catch (InterruptedException ex) {
				Thread.currentThread().interrupt();
				return;
			}
		}
	}

}
