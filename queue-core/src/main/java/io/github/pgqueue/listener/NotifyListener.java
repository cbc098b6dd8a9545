package io.github.pgqueue.listener;

import java.sql.Connection;
import java.sql.SQLException;
import java.sql.Statement;
import java.time.Duration;
import java.util.function.Consumer;
import javax.sql.DataSource;

import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The one LISTEN connection of an application: turns each NOTIFY of the schema's channel (its
 * payload is a queue name) into a wake-up of that queue's pollers as soon as it arrives
 * ({@link NotificationReader}). When the connection fails it wakes every poller, which then polls
 * every poll interval, and reconnects with back-off, LISTENs again and wakes every poller once
 * more, since notifications sent while it was away are lost. A connection that is silently gone (a network partition, a hung server
 * session) sends no error: when nothing arrived for {@link #LIVENESS_INTERVAL_MS} ms it checks the
 * connection with a round trip bounded by {@link #LIVENESS_TIMEOUT_SECONDS} s. On stop it
 * {@code UNLISTEN}s before the connection goes back to a pool.
 */
final class NotifyListener implements Runnable {

	private static final Logger logger = LoggerFactory.getLogger(NotifyListener.class);

	private static final int RECEIVE_TIMEOUT_MS = 200;

	/** How long without a notification before the connection is checked: one round trip per 5 s at most. */
	static final long LIVENESS_INTERVAL_MS = 5_000;

	static final int LIVENESS_TIMEOUT_SECONDS = 5;

	private final DataSource dataSource;

	private final String channel;

	private final Consumer<String> wakeQueue;

	private final Runnable wakeAll;

	private final RetryBackoff backoff = new RetryBackoff();

	private volatile boolean running = true;

	private volatile boolean listening;

	public NotifyListener(DataSource dataSource, String channel, Consumer<String> wakeQueue, Runnable wakeAll) {
		this.dataSource = dataSource;
		this.channel = channel;
		this.wakeQueue = wakeQueue;
		this.wakeAll = wakeAll;
	}

	public void stop() {
		this.running = false;
	}

	/** Whether the LISTEN connection is up. */
	public boolean isListening() {
		return this.listening;
	}

	@Override
	public void run() {
		boolean inOutage = false;
		while (this.running) {
			try (Connection connection = this.dataSource.getConnection()) {
				connection.setAutoCommit(true);
				try (Statement statement = connection.createStatement()) {
					statement.execute("LISTEN \"" + this.channel + "\"");
				}
				this.listening = true;
				this.backoff.reset();
				if (inOutage) {
					logger.info("Listening for new messages again on channel '{}'", this.channel);
					inOutage = false;
				}
				this.wakeAll.run();
				NotificationReader reader = NotificationReader.of(connection);
				long lastHeard = System.nanoTime();
				while (this.running) {
					if (reader.read(RECEIVE_TIMEOUT_MS, this.wakeQueue) > 0) {
						lastHeard = System.nanoTime();
					}
					else if (System.nanoTime() - lastHeard > LIVENESS_INTERVAL_MS * 1_000_000L) {
						if (!connection.isValid(LIVENESS_TIMEOUT_SECONDS)) {
							connection.abort(Runnable::run);
							throw new SQLException("The LISTEN connection did not answer within "
									+ LIVENESS_TIMEOUT_SECONDS + " s", "08006");
						}
						lastHeard = System.nanoTime();
					}
				}
				unlisten(connection);
			}
			catch (SQLException | RuntimeException ex) {
				boolean wasListening = this.listening;
				this.listening = false;
				if (!this.running) {
					break;
				}
				if (wasListening) {
					// Pollers that rely on notifications poll every poll interval again from now on.
					this.wakeAll.run();
				}
				Duration pause = this.backoff.next();
				if (!inOutage) {
					logger.warn("Lost the LISTEN connection on channel '{}'; pollers fall back to their poll interval "
							+ "until it is back (retrying, first pause {} ms)", this.channel, pause.toMillis(), ex);
					inOutage = true;
				}
				sleep(pause);
			}
		}
		this.listening = false;
	}

	/** Leaves the connection as a pool expects it: listening to nothing, or ended. */
	private void unlisten(Connection connection) throws SQLException {
		try (Statement statement = connection.createStatement()) {
			statement.execute("UNLISTEN *");
		}
		catch (SQLException ex) {
			logger.warn("Could not UNLISTEN channel '{}' on stop; ending the connection instead", this.channel, ex);
			connection.abort(Runnable::run);
		}
	}

	private void sleep(Duration pause) {
		try {
			Thread.sleep(pause.toMillis());
		}
		catch (InterruptedException ex) {
			Thread.currentThread().interrupt();
			this.running = false;
		}
	}

}
