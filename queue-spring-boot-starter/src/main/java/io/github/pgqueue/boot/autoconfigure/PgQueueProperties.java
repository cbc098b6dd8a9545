package io.github.pgqueue.boot.autoconfigure;

import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

import io.github.pgqueue.ConsumptionMode;
import io.github.pgqueue.ExchangeDefinition;
import io.github.pgqueue.QueueContext;
import io.github.pgqueue.QueueDefinition;
import io.github.pgqueue.listener.ContainerProperties;
import io.github.pgqueue.listener.QueueListenerEndpointRegistry;

import org.springframework.util.unit.DataSize;

import org.springframework.boot.context.properties.ConfigurationProperties;

/**
 * Configuration of pgqueue, bound from {@code pgqueue.*}.
 */
@ConfigurationProperties("pgqueue")
public class PgQueueProperties {

	/** Whether to auto-configure pgqueue. */
	private boolean enabled = true;

	/** Schema holding pgqueue's tables; created and migrated at startup. */
	private String schema = QueueContext.DEFAULT_SCHEMA;

	/** First int4 of every advisory lock key; by default the oid of the message table. */
	private Integer lockNamespace;

	/** Largest payload as JSON: larger sends fail, and consumers dead-letter larger messages without reading them. */
	private DataSize maxPayloadSize = DataSize.ofBytes(QueueContext.DEFAULT_MAX_PAYLOAD_BYTES);

	/** Settings of the {@code QueueTemplate}. */
	private final Template template = new Template();

	/** Defaults for every {@code @QueueListener}. */
	private final Listener listener = new Listener();

	/** The queues of the application, by name; listeners may only consume these and their dead-letter queues. */
	private Map<String, Queue> queues = new LinkedHashMap<>();

	/** Exchanges by name: publish routes a message to every bound queue whose binding matches. */
	private Map<String, Exchange> exchanges = new LinkedHashMap<>();

	/** Recurring messages by name, sent at each tick of a cron expression by whichever JVM gets there first. */
	private Map<String, ScheduleProperties> schedules = new LinkedHashMap<>();

	/** Settings of this JVM's scheduler, which sends the schedules' ticks. */
	private final Scheduler scheduler = new Scheduler();

	public Map<String, ScheduleProperties> getSchedules() {
		return this.schedules;
	}

	public void setSchedules(Map<String, ScheduleProperties> schedules) {
		this.schedules = schedules;
	}

	public Scheduler getScheduler() {
		return this.scheduler;
	}

	public Map<String, Exchange> getExchanges() {
		return this.exchanges;
	}

	public void setExchanges(Map<String, Exchange> exchanges) {
		this.exchanges = exchanges;
	}

	public boolean isEnabled() {
		return this.enabled;
	}

	public void setEnabled(boolean enabled) {
		this.enabled = enabled;
	}

	public String getSchema() {
		return this.schema;
	}

	public void setSchema(String schema) {
		this.schema = schema;
	}

	public Integer getLockNamespace() {
		return this.lockNamespace;
	}

	public void setLockNamespace(Integer lockNamespace) {
		this.lockNamespace = lockNamespace;
	}

	public DataSize getMaxPayloadSize() {
		return this.maxPayloadSize;
	}

	public void setMaxPayloadSize(DataSize maxPayloadSize) {
		this.maxPayloadSize = maxPayloadSize;
	}

	public Template getTemplate() {
		return this.template;
	}

	public Listener getListener() {
		return this.listener;
	}

	public Map<String, Queue> getQueues() {
		return this.queues;
	}

	public void setQueues(Map<String, Queue> queues) {
		this.queues = queues;
	}

	/** Scheduler settings. */
	public static class Scheduler {

		/** Whether this JVM sends the ticks of the schedules (every JVM that does sends each tick at most once between them). */
		private boolean enabled = true;

		public boolean isEnabled() {
			return this.enabled;
		}

		public void setEnabled(boolean enabled) {
			this.enabled = enabled;
		}

	}

	/** Template settings. */
	public static class Template {

		/** Whether every send, sendBatch and publish is observed as pgqueue.send, with the trace context written into the message's headers. */
		private boolean observationEnabled;

		public boolean isObservationEnabled() {
			return this.observationEnabled;
		}

		public void setObservationEnabled(boolean observationEnabled) {
			this.observationEnabled = observationEnabled;
		}

	}

	/** Listener defaults. */
	public static class Listener {

		/** Longest an idle poller waits for work when no notification arrives. */
		private Duration pollInterval = ContainerProperties.DEFAULT_POLL_INTERVAL;

		/** Messages claimed per statement. */
		private int batchSize = ContainerProperties.DEFAULT_BATCH_SIZE;

		/** Poller threads per listener unless the annotation says otherwise. */
		private int concurrency = ContainerProperties.DEFAULT_CONCURRENCY;

		/** How long running handlers may take to finish when the application stops. */
		private Duration shutdownTimeout = QueueListenerEndpointRegistry.DEFAULT_SHUTDOWN_TIMEOUT;

		/** Whether pollers take their connections from a pool of their own, sized from the total concurrency. */
		private boolean dedicatedPool = true;

		/**
		 * JDBC URL of the listeners' own pool (pollers and the LISTEN connection) when it must differ
		 * from the application's, such as a direct connection to PostgreSQL, or a session-pooled
		 * database of PgBouncer, while the application goes through transaction pooling. Same
		 * credentials and settings as the application's pool. Requires dedicated-pool.
		 */
		private String jdbcUrl;

		/** Whether every handler call is observed as pgqueue.process, continuing the trace whose context the message's headers carry. */
		private boolean observationEnabled;

		public boolean isObservationEnabled() {
			return this.observationEnabled;
		}

		public void setObservationEnabled(boolean observationEnabled) {
			this.observationEnabled = observationEnabled;
		}

		public Duration getPollInterval() {
			return this.pollInterval;
		}

		public void setPollInterval(Duration pollInterval) {
			this.pollInterval = pollInterval;
		}

		public int getBatchSize() {
			return this.batchSize;
		}

		public void setBatchSize(int batchSize) {
			this.batchSize = batchSize;
		}

		public int getConcurrency() {
			return this.concurrency;
		}

		public void setConcurrency(int concurrency) {
			this.concurrency = concurrency;
		}

		public Duration getShutdownTimeout() {
			return this.shutdownTimeout;
		}

		public void setShutdownTimeout(Duration shutdownTimeout) {
			this.shutdownTimeout = shutdownTimeout;
		}

		public boolean isDedicatedPool() {
			return this.dedicatedPool;
		}

		public void setDedicatedPool(boolean dedicatedPool) {
			this.dedicatedPool = dedicatedPool;
		}

		public String getJdbcUrl() {
			return this.jdbcUrl;
		}

		public void setJdbcUrl(String jdbcUrl) {
			this.jdbcUrl = jdbcUrl;
		}

	}

	/** One queue's policy. */
	public static class Queue {

		/**
		 * How listeners take messages from the queue: session (advisory lock, handler outside any
		 * transaction) or transactional (the handler's writes and the message's removal commit together).
		 */
		private ConsumptionMode mode = ConsumptionMode.SESSION;

		/** In transactional mode, the longest one batch's transaction may take before it is rolled back. */
		private Duration transactionTimeout = ContainerProperties.DEFAULT_TRANSACTION_TIMEOUT;

		/** Deliveries before a message is dead-lettered. */
		private int maxAttempts = QueueDefinition.DEFAULT_MAX_ATTEMPTS;

		/** Back-off between attempts. */
		private final Backoff backoff = new Backoff();

		/** Where exhausted messages go; by default the queue's name followed by ".dlq". */
		private String deadLetterQueue;

		/**
		 * How long a deduplication key stays refused after its message completed (acked, cancelled,
		 * purged or dead-lettered); by default none: a key is refused only while its message is in
		 * the queue.
		 */
		private Duration deduplicationWindow;

		/**
		 * How long messages that completed in the queue (acked, cancelled, purged or dead-lettered
		 * from it) are kept in the archive, with their outcome; by default none.
		 */
		private Duration retention;

		/**
		 * The most messages the queue's consumers in every JVM together hand to handlers, per
		 * second or per minute, such as 100/s or 6000/m; none by default. Messages held back wait
		 * in the queue, their attempts not counted.
		 */
		private String rateLimit;

		/**
		 * The name of the header whose value is each message's concurrency key: consumers then take
		 * the queue's messages round robin across keys, so that one key's backlog does not hold back
		 * the others; none by default. Messages without the header have no key.
		 */
		private String concurrencyKey;

		/**
		 * The most messages of one concurrency key the queue's consumers in every JVM together hold
		 * at once, at least 1; no limit by default. Needs concurrency-key.
		 */
		private Integer maxInFlightPerKey;

		/**
		 * The most messages of each concurrency key the queue's consumers in every JVM together hand
		 * to handlers, per second or per minute, such as 10/s or 600/m, every key on its own; none by
		 * default. Needs concurrency-key; messages without a key are not limited by it. Messages
		 * held back wait in the queue, their attempts not counted.
		 */
		private String rateLimitPerKey;

		public ConsumptionMode getMode() {
			return this.mode;
		}

		public void setMode(ConsumptionMode mode) {
			this.mode = mode;
		}

		public Duration getTransactionTimeout() {
			return this.transactionTimeout;
		}

		public void setTransactionTimeout(Duration transactionTimeout) {
			this.transactionTimeout = transactionTimeout;
		}

		public int getMaxAttempts() {
			return this.maxAttempts;
		}

		public void setMaxAttempts(int maxAttempts) {
			this.maxAttempts = maxAttempts;
		}

		public Backoff getBackoff() {
			return this.backoff;
		}

		public String getDeadLetterQueue() {
			return this.deadLetterQueue;
		}

		public void setDeadLetterQueue(String deadLetterQueue) {
			this.deadLetterQueue = deadLetterQueue;
		}

		public Duration getDeduplicationWindow() {
			return this.deduplicationWindow;
		}

		public void setDeduplicationWindow(Duration deduplicationWindow) {
			this.deduplicationWindow = deduplicationWindow;
		}

		public Duration getRetention() {
			return this.retention;
		}

		public void setRetention(Duration retention) {
			this.retention = retention;
		}

		public String getRateLimit() {
			return this.rateLimit;
		}

		public void setRateLimit(String rateLimit) {
			this.rateLimit = rateLimit;
		}

		public String getConcurrencyKey() {
			return this.concurrencyKey;
		}

		public void setConcurrencyKey(String concurrencyKey) {
			this.concurrencyKey = concurrencyKey;
		}

		public Integer getMaxInFlightPerKey() {
			return this.maxInFlightPerKey;
		}

		public void setMaxInFlightPerKey(Integer maxInFlightPerKey) {
			this.maxInFlightPerKey = maxInFlightPerKey;
		}

		public String getRateLimitPerKey() {
			return this.rateLimitPerKey;
		}

		public void setRateLimitPerKey(String rateLimitPerKey) {
			this.rateLimitPerKey = rateLimitPerKey;
		}

	}

	/** Exponential back-off. */
	public static class Backoff {

		/** Pause after the first failure. */
		private Duration initial = QueueDefinition.DEFAULT_BACKOFF_INITIAL;

		/** Factor applied to the pause after each further failure. */
		private double multiplier = QueueDefinition.DEFAULT_BACKOFF_MULTIPLIER;

		/** Longest pause. */
		private Duration max = QueueDefinition.DEFAULT_BACKOFF_MAX;

		public Duration getInitial() {
			return this.initial;
		}

		public void setInitial(Duration initial) {
			this.initial = initial;
		}

		public double getMultiplier() {
			return this.multiplier;
		}

		public void setMultiplier(double multiplier) {
			this.multiplier = multiplier;
		}

		public Duration getMax() {
			return this.max;
		}

		public void setMax(Duration max) {
			this.max = max;
		}

	}

	/** One exchange. */
	public static class Exchange {

		/** How routing keys are matched: fanout, direct or topic. */
		private ExchangeDefinition.Type type = ExchangeDefinition.Type.FANOUT;

		/** The queues the exchange routes to. */
		private List<Binding> bindings = new ArrayList<>();

		/**
		 * What a publish that matches no binding does: drop (returns 0) or fail (throws); both count
		 * it in pgqueue.messages.unroutable.
		 */
		private ExchangeDefinition.Unroutable unroutable = ExchangeDefinition.Unroutable.DROP;

		public ExchangeDefinition.Unroutable getUnroutable() {
			return this.unroutable;
		}

		public void setUnroutable(ExchangeDefinition.Unroutable unroutable) {
			this.unroutable = unroutable;
		}

		public ExchangeDefinition.Type getType() {
			return this.type;
		}

		public void setType(ExchangeDefinition.Type type) {
			this.type = type;
		}

		public List<Binding> getBindings() {
			return this.bindings;
		}

		public void setBindings(List<Binding> bindings) {
			this.bindings = bindings;
		}

	}

	/** A queue bound to an exchange. */
	public static class Binding {

		/** The bound queue; it must be declared under pgqueue.queues. */
		private String queue;

		/** The routing key (direct) or pattern (topic, '*' one word, '#' any number); unused for fanout. */
		private String routingKey = "";

		public String getQueue() {
			return this.queue;
		}

		public void setQueue(String queue) {
			this.queue = queue;
		}

		public String getRoutingKey() {
			return this.routingKey;
		}

		public void setRoutingKey(String routingKey) {
			this.routingKey = routingKey;
		}

	}

}
