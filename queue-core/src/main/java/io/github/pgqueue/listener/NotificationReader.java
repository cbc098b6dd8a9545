package io.github.pgqueue.listener;

import java.io.IOException;
import java.lang.reflect.Field;
import java.net.SocketTimeoutException;
import java.sql.Connection;
import java.sql.SQLException;
import java.util.function.Consumer;

import org.postgresql.PGConnection;
import org.postgresql.PGNotification;
import org.postgresql.core.BaseConnection;
import org.postgresql.core.PGStream;
import org.postgresql.core.QueryExecutor;
import org.postgresql.core.QueryExecutorBase;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Reads the notifications that arrive on a LISTEN connection and hands each one over as soon as
 * it is read.
 * <p>
 * pgjdbc's {@code getNotifications(timeout)} collects notifications for as long as the next one
 * arrives within a millisecond of the last, and returns them only then: under a steady stream of
 * more than one notification a millisecond it held them for up to a second and handed them over
 * in one burst. This reader reads the connection's protocol stream itself, one message at a time
 * (the stream is the driver's {@link PGStream}, which its query executor does not expose: it is
 * reached by reflection once). With a driver whose internals differ it falls back to
 * {@code getNotifications(timeout)}, bursts and all, and says so once.
 * <p>
 * Only the thread that owns the connection may read; the connection must run nothing else between
 * reads but statements of this thread (a liveness check, {@code UNLISTEN}), after which
 * {@link #read} first hands over what the driver collected while they ran.
 */
abstract class NotificationReader {

	private static final Logger logger = LoggerFactory.getLogger(NotificationReader.class);

	/** The query executor's protocol stream, or null if this driver keeps it elsewhere. */
	private static final Field STREAM = streamField();

	private static volatile boolean fallbackLogged;

	/**
	 * Waits at most {@code timeoutMillis} for a notification and hands each one read to {@code payloads}
	 * (the notification's payload) as it arrives; returns how many were handed over, 0 when none
	 * came in time.
	 * @throws SQLException if the connection failed or the server ended it; the connection is then
	 * aborted, since its protocol state is unknown
	 */
	abstract int read(int timeoutMillis, Consumer<String> payloads) throws SQLException;

	/** A reader of {@code connection}, which must be a pgjdbc connection (or wrap one). */
	static NotificationReader of(Connection connection) throws SQLException {
		if (STREAM != null) {
			QueryExecutor executor = connection.unwrap(BaseConnection.class).getQueryExecutor();
			if (executor instanceof QueryExecutorBase) {
				try {
					return new StreamReader(connection, executor, (PGStream) STREAM.get(executor));
				}
				catch (IllegalAccessException | RuntimeException ex) {
					logFallback(ex.toString());
				}
			}
			else {
				logFallback("its query executor is a " + executor.getClass().getName());
			}
		}
		return new DriverReader(connection.unwrap(PGConnection.class));
	}

	private static Field streamField() {
		try {
			Field field = QueryExecutorBase.class.getDeclaredField("pgStream");
			if (!PGStream.class.equals(field.getType())) {
				logFallback("its query executor's field pgStream is a " + field.getType().getName());
				return null;
			}
			field.setAccessible(true);
			return field;
		}
		catch (NoSuchFieldException | RuntimeException ex) {
			logFallback(ex.toString());
			return null;
		}
	}

	private static void logFallback(String reason) {
		if (!fallbackLogged) {
			fallbackLogged = true;
			logger.info("This PostgreSQL JDBC driver's protocol stream cannot be read directly ({}); notifications are "
					+ "read with getNotifications(timeout), which hands them over in bursts when more than one a "
					+ "millisecond arrive", reason);
		}
	}

	/** Reads notification messages off the protocol stream, one at a time. */
	static final class StreamReader extends NotificationReader {

		/** How long the rest of a message may take once its first byte came. */
		private static final int MESSAGE_TIMEOUT_MS = 5_000;

		private final Connection connection;

		private final QueryExecutor executor;

		private final PGStream stream;

		StreamReader(Connection connection, QueryExecutor executor, PGStream stream) {
			this.connection = connection;
			this.executor = executor;
			this.stream = stream;
		}

		@Override
		int read(int timeoutMillis, Consumer<String> payloads) throws SQLException {
			// What the driver read while this thread ran a statement on the connection.
			int handed = handOver(this.executor.getNotifications(), payloads);
			if (handed > 0) {
				return handed;
			}
			int previousTimeout = -1;
			try {
				previousTimeout = this.stream.getNetworkTimeout();
				this.stream.setNetworkTimeout(Math.max(1, timeoutMillis));
				int type;
				try {
					type = this.stream.receiveChar();
				}
				catch (SocketTimeoutException ex) {
					return 0;
				}
				this.stream.setNetworkTimeout(MESSAGE_TIMEOUT_MS);
				int length = this.stream.receiveInteger4();
				switch (type) {
					case 'A' -> {
						this.stream.receiveInteger4(); // the notifying backend's pid
						this.stream.receiveString(); // the channel: this connection listens to one
						payloads.accept(this.stream.receiveString());
						return 1;
					}
					case 'N' -> {
						// A notice, such as a warning before the server shuts down: nothing to act on.
						this.stream.skip(length - 4);
						return 0;
					}
					default -> {
						// An error (the server ended the session) or a parameter change the driver would
						// have tracked: this connection cannot be trusted any more.
						throw new SQLException("The LISTEN connection received message type '" + (char) type
								+ "' instead of a notification; reconnecting", "08P01");
					}
				}
			}
			catch (IOException | SQLException ex) {
				this.connection.abort(Runnable::run);
				if (ex instanceof SQLException sql) {
					throw sql;
				}
				throw new SQLException("The LISTEN connection failed while reading a notification: " + ex, "08006", ex);
			}
			finally {
				restore(previousTimeout);
			}
		}

		private void restore(int timeout) {
			if (timeout >= 0 && !this.stream.isClosed()) {
				try {
					this.stream.setNetworkTimeout(timeout);
				}
				catch (IOException ex) {
					// The connection is broken: the next statement or read on it says so.
					logger.debug("Could not restore the LISTEN connection's network timeout", ex);
				}
			}
		}

	}

	/** Reads through the driver's {@code getNotifications(timeout)}. */
	static final class DriverReader extends NotificationReader {

		private final PGConnection connection;

		DriverReader(PGConnection connection) {
			this.connection = connection;
		}

		@Override
		int read(int timeoutMillis, Consumer<String> payloads) throws SQLException {
			return handOver(this.connection.getNotifications(Math.max(1, timeoutMillis)), payloads);
		}

	}

	private static int handOver(PGNotification[] notifications, Consumer<String> payloads) {
		if (notifications == null) {
			return 0;
		}
		for (PGNotification notification : notifications) {
			payloads.accept(notification.getParameter());
		}
		return notifications.length;
	}

}
