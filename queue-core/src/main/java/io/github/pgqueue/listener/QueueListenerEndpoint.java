package io.github.pgqueue.listener;

import java.lang.reflect.Type;
import java.time.Duration;
import java.util.List;
import java.util.Objects;

import io.github.pgqueue.AckMode;
import io.github.pgqueue.ConsumptionMode;
import io.github.pgqueue.QueueNames;
import io.github.pgqueue.internal.HeaderFilter;

/**
 * Everything a container needs to consume queues for one listener.
 * @param id unique id of the listener, used in thread names, logs and metrics
 * @param queues the queues it consumes, polled in turn
 * @param concurrency poller threads, each with a database session of its own
 * @param ackMode who completes messages
 * @param autoStartup whether the registry starts it with the application
 * @param payloadType the type payloads are converted to
 * @param listener what handles each message, or null for a batch listener
 * @param errorHandler what decides on failures
 * @param batchSize messages claimed per statement
 * @param pollInterval the longest an idle poller waits when no notification arrives
 * @param mode how messages are taken: session locks, or the handler's own transaction
 * @param transactionTimeout in transactional mode, the longest one batch's transaction may take
 * @param batchListener what handles each claimed batch at once, instead of {@code listener}
 * @param observationEnabled whether each handler call is observed as {@code pgqueue.process} in the
 * template's observation registry, continuing the trace whose context the message's headers carry
 * @param filter which messages it takes, by their headers ({@code type = 'welcome'},
 * {@code region in ('eu', 'us')}, {@code and} of those); null or blank for all
 */
public record QueueListenerEndpoint(String id, List<String> queues, int concurrency, AckMode ackMode,
		boolean autoStartup, Type payloadType, QueueMessageListener listener, QueueErrorHandler errorHandler,
		int batchSize, Duration pollInterval, ConsumptionMode mode, Duration transactionTimeout,
		QueueBatchListener batchListener, boolean observationEnabled, String filter) {

	/** The transaction timeout unless configured otherwise. */
	public static final Duration DEFAULT_TRANSACTION_TIMEOUT = Duration.ofSeconds(30);

	/** An endpoint that takes every message of its queues. */
	public QueueListenerEndpoint(String id, List<String> queues, int concurrency, AckMode ackMode, boolean autoStartup,
			Type payloadType, QueueMessageListener listener, QueueErrorHandler errorHandler, int batchSize,
			Duration pollInterval, ConsumptionMode mode, Duration transactionTimeout, QueueBatchListener batchListener,
			boolean observationEnabled) {
		this(id, queues, concurrency, ackMode, autoStartup, payloadType, listener, errorHandler, batchSize,
				pollInterval, mode, transactionTimeout, batchListener, observationEnabled, null);
	}

	/** An endpoint whose listener handles one message at a time, without observation. */
	public QueueListenerEndpoint(String id, List<String> queues, int concurrency, AckMode ackMode, boolean autoStartup,
			Type payloadType, QueueMessageListener listener, QueueErrorHandler errorHandler, int batchSize,
			Duration pollInterval, ConsumptionMode mode, Duration transactionTimeout) {
		this(id, queues, concurrency, ackMode, autoStartup, payloadType, listener, errorHandler, batchSize,
				pollInterval, mode, transactionTimeout, null, false);
	}

	/**
	 * An endpoint whose listener handles each claimed batch (up to {@code batchSize} messages of
	 * one queue) at once; acknowledgment is automatic.
	 */
	public static QueueListenerEndpoint batch(String id, List<String> queues, int concurrency, boolean autoStartup,
			Type payloadType, QueueBatchListener listener, QueueErrorHandler errorHandler, int batchSize,
			Duration pollInterval, ConsumptionMode mode, Duration transactionTimeout) {
		Objects.requireNonNull(listener, "listener");
		return new QueueListenerEndpoint(id, queues, concurrency, AckMode.AUTO, autoStartup, payloadType, null,
				errorHandler, batchSize, pollInterval, mode, transactionTimeout, listener, false);
	}

	/** An endpoint in session mode. */
	public QueueListenerEndpoint(String id, List<String> queues, int concurrency, AckMode ackMode, boolean autoStartup,
			Type payloadType, QueueMessageListener listener, QueueErrorHandler errorHandler, int batchSize,
			Duration pollInterval) {
		this(id, queues, concurrency, ackMode, autoStartup, payloadType, listener, errorHandler, batchSize,
				pollInterval, ConsumptionMode.SESSION, DEFAULT_TRANSACTION_TIMEOUT, null, false);
	}

	/** This endpoint with observation on or off. */
	public QueueListenerEndpoint withObservationEnabled(boolean observationEnabled) {
		return new QueueListenerEndpoint(this.id, this.queues, this.concurrency, this.ackMode, this.autoStartup,
				this.payloadType, this.listener, this.errorHandler, this.batchSize, this.pollInterval, this.mode,
				this.transactionTimeout, this.batchListener, observationEnabled, this.filter);
	}

	/** This endpoint taking only the messages whose headers match {@code filter} (null or blank: all). */
	public QueueListenerEndpoint withFilter(String filter) {
		return new QueueListenerEndpoint(this.id, this.queues, this.concurrency, this.ackMode, this.autoStartup,
				this.payloadType, this.listener, this.errorHandler, this.batchSize, this.pollInterval, this.mode,
				this.transactionTimeout, this.batchListener, this.observationEnabled, filter);
	}

	/** The parsed filter, or null when the endpoint takes every message. */
	HeaderFilter headerFilter() {
		return HeaderFilter.parse(this.filter, " of listener '" + this.id + "'");
	}

	public QueueListenerEndpoint {
		Objects.requireNonNull(id, "Listener id must not be null");
		if (queues == null || queues.isEmpty()) {
			throw new IllegalArgumentException("Listener '" + id + "' must name at least one queue");
		}
		queues = List.copyOf(queues);
		queues.forEach(QueueNames::requireQueue);
		if (concurrency < 1) {
			throw new IllegalArgumentException("Listener '" + id + "': concurrency must be at least 1, was "
					+ concurrency);
		}
		if (batchSize < 1) {
			throw new IllegalArgumentException("Listener '" + id + "': batch size must be at least 1, was " + batchSize);
		}
		if (pollInterval == null || pollInterval.isNegative() || pollInterval.isZero()) {
			throw new IllegalArgumentException("Listener '" + id + "': poll interval must be positive, was "
					+ pollInterval);
		}
		Objects.requireNonNull(mode, "mode");
		if (transactionTimeout == null || transactionTimeout.toMillis() < 1) {
			throw new IllegalArgumentException("Listener '" + id + "': transaction timeout must be positive, was "
					+ transactionTimeout);
		}
		Objects.requireNonNull(ackMode, "ackMode");
		Objects.requireNonNull(payloadType, "payloadType");
		if ((listener == null) == (batchListener == null)) {
			throw new IllegalArgumentException("Listener '" + id + "' needs exactly one of a message listener and a "
					+ "batch listener");
		}
		if (batchListener != null && ackMode != AckMode.AUTO) {
			throw new IllegalArgumentException("Listener '" + id + "' is a batch listener; it acknowledges "
					+ "automatically (ackMode AUTO), not " + ackMode);
		}
		Objects.requireNonNull(errorHandler, "errorHandler");
		HeaderFilter.parse(filter, " of listener '" + id + "'"); // fails here, at startup, if it is not valid
	}

	/** Whether the listener handles each claimed batch at once. */
	public boolean isBatch() {
		return this.batchListener != null;
	}

}
