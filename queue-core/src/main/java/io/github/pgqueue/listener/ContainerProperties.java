package io.github.pgqueue.listener;

import java.time.Duration;
import java.util.List;
import java.util.Objects;

import io.github.pgqueue.AckMode;
import io.github.pgqueue.ConsumptionMode;
import io.github.pgqueue.QueueNames;

/**
 * How a listener container runs its listener: the queues it consumes, its pollers, how it takes
 * and completes messages, and what it does on failure (spring-kafka's {@code ContainerProperties}).
 * Immutable; build one with {@link #builder(String...)}.
 */
public final class ContainerProperties {

	/** Poller threads per listener unless configured otherwise. */
	public static final int DEFAULT_CONCURRENCY = 1;

	/** Messages claimed per statement unless configured otherwise. */
	public static final int DEFAULT_BATCH_SIZE = 10;

	/** The longest an idle poller waits for a notification unless configured otherwise. */
	public static final Duration DEFAULT_POLL_INTERVAL = Duration.ofSeconds(1);

	/** The transaction timeout of transactional mode unless configured otherwise. */
	public static final Duration DEFAULT_TRANSACTION_TIMEOUT = Duration.ofSeconds(30);

	private final List<String> queues;

	private final int concurrency;

	private final AckMode ackMode;

	private final boolean autoStartup;

	private final QueueErrorHandler errorHandler;

	private final int batchSize;

	private final Duration pollInterval;

	private final ConsumptionMode mode;

	private final Duration transactionTimeout;

	private final boolean observationEnabled;

	private final String filter;

	private ContainerProperties(Builder builder) {
		this.queues = builder.queues;
		this.concurrency = builder.concurrency;
		this.ackMode = builder.ackMode;
		this.autoStartup = builder.autoStartup;
		this.errorHandler = builder.errorHandler;
		this.batchSize = builder.batchSize;
		this.pollInterval = builder.pollInterval;
		this.mode = builder.mode;
		this.transactionTimeout = builder.transactionTimeout;
		this.observationEnabled = builder.observationEnabled;
		this.filter = builder.filter;
	}

	/** Starts building the properties of a container that consumes {@code queues}, polled in turn. */
	public static Builder builder(String... queues) {
		return builder(List.of(queues));
	}

	/** Starts building the properties of a container that consumes {@code queues}, polled in turn. */
	public static Builder builder(List<String> queues) {
		return new Builder(queues);
	}

	/** The queues consumed, polled in turn. */
	public List<String> queues() {
		return this.queues;
	}

	/** Poller threads, each with a database session of its own. */
	public int concurrency() {
		return this.concurrency;
	}

	/** Who completes messages. */
	public AckMode ackMode() {
		return this.ackMode;
	}

	/** Whether the registry starts the container with the application. */
	public boolean autoStartup() {
		return this.autoStartup;
	}

	/** What decides on failures. */
	public QueueErrorHandler errorHandler() {
		return this.errorHandler;
	}

	/** Messages claimed per statement. */
	public int batchSize() {
		return this.batchSize;
	}

	/** The longest an idle poller waits when no notification arrives. */
	public Duration pollInterval() {
		return this.pollInterval;
	}

	/** How messages are taken: session locks, or the handler's own transaction. */
	public ConsumptionMode mode() {
		return this.mode;
	}

	/** In transactional mode, the longest one batch's transaction may take. */
	public Duration transactionTimeout() {
		return this.transactionTimeout;
	}

	/**
	 * Whether each handler call is observed as {@code pgqueue.process} in the context's
	 * observation registry, continuing the trace whose context the message's headers carry.
	 */
	public boolean observationEnabled() {
		return this.observationEnabled;
	}

	/** Which messages are taken, by their headers; null or blank for all. */
	public String filter() {
		return this.filter;
	}

	/** Builds {@link ContainerProperties}; every setting but the queues has a default. */
	public static final class Builder {

		private final List<String> queues;

		private int concurrency = DEFAULT_CONCURRENCY;

		private AckMode ackMode = AckMode.AUTO;

		private boolean autoStartup = true;

		private QueueErrorHandler errorHandler = new DefaultQueueErrorHandler();

		private int batchSize = DEFAULT_BATCH_SIZE;

		private Duration pollInterval = DEFAULT_POLL_INTERVAL;

		private ConsumptionMode mode = ConsumptionMode.SESSION;

		private Duration transactionTimeout = DEFAULT_TRANSACTION_TIMEOUT;

		private boolean observationEnabled;

		private String filter;

		private Builder(List<String> queues) {
			if (queues == null || queues.isEmpty()) {
				throw new IllegalArgumentException("A listener container must consume at least one queue");
			}
			this.queues = List.copyOf(queues);
			this.queues.forEach(QueueNames::requireQueue);
		}

		/** Poller threads, each with a database session of its own; default {@value #DEFAULT_CONCURRENCY}. */
		public Builder concurrency(int concurrency) {
			if (concurrency < 1) {
				throw new IllegalArgumentException("Concurrency must be at least 1, was " + concurrency);
			}
			this.concurrency = concurrency;
			return this;
		}

		/** Who completes messages; default {@link AckMode#AUTO}. */
		public Builder ackMode(AckMode ackMode) {
			this.ackMode = Objects.requireNonNull(ackMode, "ackMode");
			return this;
		}

		/** Whether the registry starts the container with the application; default true. */
		public Builder autoStartup(boolean autoStartup) {
			this.autoStartup = autoStartup;
			return this;
		}

		/** What decides on failures; default a {@link DefaultQueueErrorHandler}. */
		public Builder errorHandler(QueueErrorHandler errorHandler) {
			this.errorHandler = Objects.requireNonNull(errorHandler, "errorHandler");
			return this;
		}

		/** Messages claimed per statement; default {@value #DEFAULT_BATCH_SIZE}. */
		public Builder batchSize(int batchSize) {
			if (batchSize < 1) {
				throw new IllegalArgumentException("Batch size must be at least 1, was " + batchSize);
			}
			this.batchSize = batchSize;
			return this;
		}

		/** The longest an idle poller waits when no notification arrives; default 1 second. */
		public Builder pollInterval(Duration pollInterval) {
			if (pollInterval == null || pollInterval.isNegative() || pollInterval.isZero()) {
				throw new IllegalArgumentException("Poll interval must be positive, was " + pollInterval);
			}
			this.pollInterval = pollInterval;
			return this;
		}

		/** How messages are taken; default {@link ConsumptionMode#SESSION}. */
		public Builder mode(ConsumptionMode mode) {
			this.mode = Objects.requireNonNull(mode, "mode");
			return this;
		}

		/** In transactional mode, the longest one batch's transaction may take; default 30 seconds. */
		public Builder transactionTimeout(Duration transactionTimeout) {
			if (transactionTimeout == null || transactionTimeout.toMillis() < 1) {
				throw new IllegalArgumentException("Transaction timeout must be positive, was " + transactionTimeout);
			}
			this.transactionTimeout = transactionTimeout;
			return this;
		}

		/** Whether each handler call is observed as {@code pgqueue.process}; default false. */
		public Builder observationEnabled(boolean observationEnabled) {
			this.observationEnabled = observationEnabled;
			return this;
		}

		/**
		 * Which messages are taken, by their headers ({@code type = 'welcome'},
		 * {@code region in ('eu', 'us')}, {@code and} of those); null or blank (the default) for
		 * all. Checked when the endpoint is built, which then fails naming the listener.
		 */
		public Builder filter(String filter) {
			this.filter = filter;
			return this;
		}

		/** The properties. */
		public ContainerProperties build() {
			return new ContainerProperties(this);
		}

	}

}
