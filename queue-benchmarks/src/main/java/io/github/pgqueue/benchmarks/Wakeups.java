package io.github.pgqueue.benchmarks;

import java.sql.Connection;
import java.sql.SQLException;
import java.sql.Statement;
import java.util.concurrent.Semaphore;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;

import javax.sql.DataSource;

import org.postgresql.PGConnection;
import org.postgresql.PGNotification;

/**
 * The plain-SQL baselines' LISTEN connection: the notification pgqueue's insert trigger sends wakes
 * one idle worker of its queue, so that they wait on NOTIFY like pgqueue and not on a short sleep.
 */
final class Wakeups implements AutoCloseable {

	private final Semaphore[] workers;

	/** Whether each worker waits for work in {@link #await}: a notification wakes one of them. */
	private final AtomicBoolean[] waiting;

	/** Where the next notification looks for a waiting worker first. */
	private int nextWoken;

	/** The queue each worker consumes, by worker index. */
	private final String[] queues;

	private final Thread thread;

	private volatile boolean running = true;

	Wakeups(DataSource dataSource, String queue, int workerCount) {
		this(dataSource, java.util.Collections.nCopies(workerCount, queue).toArray(new String[0]));
	}

	/** One LISTEN connection for workers of several queues: a notification wakes the workers of its queue. */
	Wakeups(DataSource dataSource, String[] queues) {
		this.queues = queues.clone();
		this.workers = new Semaphore[queues.length];
		this.waiting = new AtomicBoolean[queues.length];
		for (int i = 0; i < queues.length; i++) {
			this.workers[i] = new Semaphore(0);
			this.waiting[i] = new AtomicBoolean();
		}
		this.thread = new Thread(() -> listen(dataSource), "raw-listen");
		this.thread.setDaemon(true);
		this.thread.start();
	}

	private void listen(DataSource dataSource) {
		try (Connection connection = dataSource.getConnection()) {
			connection.setAutoCommit(true);
			try (Statement statement = connection.createStatement()) {
				statement.execute("LISTEN pgqueue");
			}
			wakeAll(); // what was sent before the LISTEN notified nobody

			PGConnection pg = connection.unwrap(PGConnection.class);
			while (this.running) {
				PGNotification[] notifications = pg.getNotifications(250);
				if (notifications == null) {
					continue;
				}
				for (PGNotification notification : notifications) {
					wakeOne(notification.getParameter());
				}
			}
		}
		catch (SQLException ex) {
			if (this.running) {
				throw new IllegalStateException("The baseline's LISTEN connection failed", ex);
			}
		}
	}

	/** Waits until a notification arrives or {@code millis} pass. */
	void await(int worker, long millis) throws InterruptedException {
		this.waiting[worker].set(true);
		try {
			if (this.workers[worker].tryAcquire(millis, TimeUnit.MILLISECONDS)) {
				this.workers[worker].drainPermits();
			}
		}
		finally {
			this.waiting[worker].set(false);
		}
	}

	/**
	 * A notification: wakes one waiting worker of {@code queue}, as pgqueue's listener containers
	 * do, or every worker of it when none waits (one that is claiming may have missed the commit).
	 */
	private void wakeOne(String queue) {
		for (int i = 0; i < this.workers.length; i++) {
			int index = (this.nextWoken + i) % this.workers.length;
			if (this.queues[index].equals(queue) && this.waiting[index].compareAndSet(true, false)) {
				this.nextWoken = index + 1;
				if (this.workers[index].availablePermits() == 0) {
					this.workers[index].release();
				}
				return;
			}
		}
		wake(queue);
	}

	private void wake(String queue) {
		for (int i = 0; i < this.workers.length; i++) {
			if (this.queues[i].equals(queue) && this.workers[i].availablePermits() == 0) {
				this.workers[i].release();
			}
		}
	}

	/** Wakes the idle workers of {@code worker}'s queue: it found a full batch, more is likely waiting. */
	void wakeSiblings(int worker) {
		wake(this.queues[worker]);
	}

	void wakeAll() {
		for (Semaphore worker : this.workers) {
			if (worker.availablePermits() == 0) {
				worker.release();
			}
		}
	}

	@Override
	public void close() {
		this.running = false;
		wakeAll();
		try {
			this.thread.join(2_000);
		}
		catch (InterruptedException ex) {
			Thread.currentThread().interrupt();
		}
	}

}
