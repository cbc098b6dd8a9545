package io.github.pgqueue.boot.autoconfigure;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Set;
import java.util.StringJoiner;
import java.util.stream.Collectors;

import io.github.pgqueue.ExchangeDefinition;
import io.github.pgqueue.QueueDefinition;
import io.github.pgqueue.QueueNames;
import io.github.pgqueue.RateLimit;
import io.github.pgqueue.ScheduleDefinition;

import org.springframework.boot.context.properties.source.ConfigurationPropertyName;
import org.springframework.boot.context.properties.source.ConfigurationPropertySource;
import org.springframework.boot.context.properties.source.ConfigurationPropertySources;
import org.springframework.boot.context.properties.source.InvalidConfigurationPropertyValueException;
import org.springframework.boot.context.properties.source.IterableConfigurationPropertySource;
import org.springframework.core.env.Environment;

/** Turns invalid {@code pgqueue.*} values into startup failures that name the property. */
final class PgQueuePropertiesValidator {

	/** The properties of one queue under {@code pgqueue.queues.<name>}, in canonical form. */
	private static final List<String> QUEUE_PROPERTIES = List.of("mode", "transaction-timeout", "max-attempts", "backoff",
			"backoff.initial", "backoff.multiplier", "backoff.max", "dead-letter-queue", "deduplication-window", "retention",
			"rate-limit", "concurrency-key", "max-in-flight-per-key", "rate-limit-per-key");

	/**
	 * {@link #QUEUE_PROPERTIES} in uniform form, as Spring Boot compares names: {@code maxAttempts}
	 * and {@code max_attempts} bind as {@code max-attempts} does.
	 */
	private static final Set<String> UNIFORM_QUEUE_PROPERTIES = QUEUE_PROPERTIES.stream()
		.map((property) -> elements(ConfigurationPropertyName.of(property), 0, ConfigurationPropertyName.Form.UNIFORM))
		.collect(Collectors.toUnmodifiableSet());

	private static final ConfigurationPropertyName QUEUES = ConfigurationPropertyName.of("pgqueue.queues");

	/** The properties of one schedule under {@code pgqueue.schedules.<name>}, headers aside, in uniform form. */
	private static final Set<String> SCHEDULE_PROPERTIES = Set.of("cron", "zone", "queue", "exchange", "routingkey",
			"payload", "missed");

	private static final ConfigurationPropertyName SCHEDULES = ConfigurationPropertyName.of("pgqueue.schedules");

	private PgQueuePropertiesValidator() {
	}

	/**
	 * Fails on a {@code pgqueue.queues.*} key that binds to nothing. A queue name with dots, such
	 * as {@code pgqueue.queues.orders.created.max-attempts}, is read as queue {@code orders} with
	 * an unknown property and would otherwise be dropped silently: it must be written in brackets.
	 */
	static void checkQueueKeys(Environment environment) {
		for (ConfigurationPropertySource source : ConfigurationPropertySources.get(environment)) {
			if (!(source instanceof IterableConfigurationPropertySource iterable)) {
				continue;
			}
			iterable.filter(QUEUES::isAncestorOf).forEach((name) -> {
				if (name.getNumberOfElements() < 4 || isQueueProperty(name, 3)) {
					return;
				}
				String queue = name.getElement(2, ConfigurationPropertyName.Form.ORIGINAL);
				String rest = elements(name, 3, ConfigurationPropertyName.Form.ORIGINAL);
				String hint = "";
				for (int i = 4; i < name.getNumberOfElements(); i++) {
					if (isQueueProperty(name, i)) {
						hint = "; a queue name with dots is written in brackets: pgqueue.queues["
								+ elements(name, 2, i, ConfigurationPropertyName.Form.ORIGINAL) + "]."
								+ elements(name, i, ConfigurationPropertyName.Form.ORIGINAL);
						break;
					}
				}
				throw new InvalidConfigurationPropertyValueException(name.toString(), "(set)", "'" + rest
						+ "' is not a property of queue '" + queue + "' ("
						+ String.join(", ", QUEUE_PROPERTIES.stream().filter((known) -> !known.equals("backoff")).toList())
						+ ")" + hint);
			});
		}
	}

	/** Whether the elements of {@code name} from {@code from} on are a property of a queue. */
	private static boolean isQueueProperty(ConfigurationPropertyName name, int from) {
		return UNIFORM_QUEUE_PROPERTIES.contains(elements(name, from, ConfigurationPropertyName.Form.UNIFORM));
	}

	private static String elements(ConfigurationPropertyName name, int from, ConfigurationPropertyName.Form form) {
		return elements(name, from, name.getNumberOfElements(), form);
	}

	/** The elements of {@code name} from {@code from} up to {@code to}, in {@code form}, joined by dots. */
	private static String elements(ConfigurationPropertyName name, int from, int to,
			ConfigurationPropertyName.Form form) {
		StringJoiner joined = new StringJoiner(".");
		for (int i = from; i < to; i++) {
			joined.add(name.getElement(i, form));
		}
		return joined.toString();
	}

	/**
	 * Fails on a {@code pgqueue.schedules.*} key that binds to nothing: a misspelt property, or a
	 * schedule name with dots not written in brackets ({@code pgqueue.schedules[reports.nightly].cron}).
	 */
	static void checkScheduleKeys(Environment environment) {
		for (ConfigurationPropertySource source : ConfigurationPropertySources.get(environment)) {
			if (!(source instanceof IterableConfigurationPropertySource iterable)) {
				continue;
			}
			iterable.filter(SCHEDULES::isAncestorOf).forEach((name) -> {
				if (name.getNumberOfElements() < 4) {
					return;
				}
				String property = name.getElement(3, ConfigurationPropertyName.Form.UNIFORM);
				boolean known = SCHEDULE_PROPERTIES.contains(property) && name.getNumberOfElements() == 4;
				if (known || property.equals("headers")) {
					return;
				}
				String schedule = name.getElement(2, ConfigurationPropertyName.Form.ORIGINAL);
				throw new InvalidConfigurationPropertyValueException(name.toString(), "(set)", "'"
						+ name.subName(3) + "' is not a property of schedule '" + schedule + "' (cron, zone, queue, "
						+ "exchange, routing-key, payload, headers, missed); a schedule name with dots is written in "
						+ "brackets: pgqueue.schedules[" + schedule + ".name].cron");
			});
		}
	}

	/** The schedule of {@code pgqueue.schedules.<name>}, each value checked under its own property. */
	static ScheduleDefinition schedule(String name, ScheduleProperties schedule) {
		String prefix = "pgqueue.schedules." + name;
		ScheduleDefinition.Builder builder = check(prefix, name, () -> ScheduleDefinition.builder(name));
		check(prefix + ".cron", schedule.getCron(), () -> builder.cron(schedule.getCron()));
		check(prefix + ".zone", schedule.getZone(), () -> builder.zone(schedule.getZone()));
		String queue = org.springframework.util.StringUtils.hasText(schedule.getQueue()) ? schedule.getQueue() : null;
		String exchange = org.springframework.util.StringUtils.hasText(schedule.getExchange()) ? schedule.getExchange()
				: null;
		if (queue != null && exchange != null) {
			throw new InvalidConfigurationPropertyValueException(prefix + ".exchange", exchange,
					"Give schedule '" + name + "' a queue or an exchange, not both");
		}
		if (queue == null && exchange == null) {
			throw new InvalidConfigurationPropertyValueException(prefix + ".queue", null, "Give schedule '" + name
					+ "' a queue to send to, or an exchange and a routing-key to publish with");
		}
		if (queue != null) {
			check(prefix + ".queue", queue, () -> builder.queue(queue));
			if (schedule.getRoutingKey() != null) {
				throw new InvalidConfigurationPropertyValueException(prefix + ".routing-key", schedule.getRoutingKey(),
						"Schedule '" + name + "' sends to a queue, and only a publish to an exchange takes a routing key");
			}
		}
		else {
			check(prefix + ".exchange", exchange, () -> QueueNames.requireQueue(exchange));
			check(prefix + ".routing-key", schedule.getRoutingKey(),
					() -> builder.exchange(exchange, schedule.getRoutingKey()));
		}
		check(prefix + ".payload", schedule.getPayload(), () -> builder.payload(schedule.getPayload()));
		schedule.getHeaders().forEach((header, value) -> check(prefix + ".headers." + header, value,
				() -> builder.header(header, value)));
		check(prefix + ".missed", schedule.getMissed(),
				() -> builder.missed(ScheduleDefinition.Missed.of(schedule.getMissed())));
		return builder.build();
	}

	/** Runs {@code check}, turning its IllegalArgumentException into a failure naming {@code property}. */
	private static <T> T check(String property, Object value, java.util.function.Supplier<T> check) {
		try {
			return check.get();
		}
		catch (IllegalArgumentException ex) {
			throw new InvalidConfigurationPropertyValueException(property, value, ex.getMessage());
		}
	}

	static void validate(PgQueueProperties properties) {
		try {
			QueueNames.requireSchema(properties.getSchema());
		}
		catch (IllegalArgumentException ex) {
			throw new InvalidConfigurationPropertyValueException("pgqueue.schema", properties.getSchema(),
					ex.getMessage());
		}
		if (properties.getMaxPayloadSize() == null || properties.getMaxPayloadSize().toBytes() < 1) {
			throw new InvalidConfigurationPropertyValueException("pgqueue.max-payload-size",
					properties.getMaxPayloadSize(), "Use a positive size such as 1MB");
		}
		PgQueueProperties.Listener listener = properties.getListener();
		if (listener.getBatchSize() < 1) {
			throw new InvalidConfigurationPropertyValueException("pgqueue.listener.batch-size",
					listener.getBatchSize(), "Use a batch size of at least 1");
		}
		if (listener.getConcurrency() < 1) {
			throw new InvalidConfigurationPropertyValueException("pgqueue.listener.concurrency",
					listener.getConcurrency(), "Use a concurrency of at least 1");
		}
		if (listener.getPollInterval() == null || listener.getPollInterval().isNegative()
				|| listener.getPollInterval().isZero()) {
			throw new InvalidConfigurationPropertyValueException("pgqueue.listener.poll-interval",
					listener.getPollInterval(), "Use a positive duration such as 1s");
		}
		if (listener.getShutdownTimeout() == null || listener.getShutdownTimeout().isNegative()) {
			throw new InvalidConfigurationPropertyValueException("pgqueue.listener.shutdown-timeout",
					listener.getShutdownTimeout(), "Use a duration of zero or more, such as 30s");
		}
		properties.getQueues().forEach(PgQueuePropertiesValidator::definition);
		properties.getExchanges().forEach((name, exchange) -> exchange(name, exchange, properties.getQueues().keySet()));
		properties.getSchedules().forEach(PgQueuePropertiesValidator::schedule);
	}

	static ExchangeDefinition exchange(String name, PgQueueProperties.Exchange exchange, Set<String> queues) {
		String prefix = "pgqueue.exchanges." + name;
		try {
			QueueNames.requireQueue(name);
		}
		catch (IllegalArgumentException ex) {
			throw new InvalidConfigurationPropertyValueException(prefix, name, ex.getMessage());
		}
		List<ExchangeDefinition.Binding> bindings = new ArrayList<>();
		for (int i = 0; i < exchange.getBindings().size(); i++) {
			PgQueueProperties.Binding binding = exchange.getBindings().get(i);
			String property = prefix + ".bindings[" + i + "]";
			if (binding.getQueue() == null || !queues.contains(binding.getQueue())) {
				throw new InvalidConfigurationPropertyValueException(property + ".queue", binding.getQueue(),
						"Bind a queue declared under pgqueue.queues (declared: " + queues + ")");
			}
			try {
				ExchangeDefinition.Binding bound = new ExchangeDefinition.Binding(binding.getQueue(),
						binding.getRoutingKey());
				bound.keyRegex(exchange.getType(), name);
				bindings.add(bound);
			}
			catch (IllegalArgumentException ex) {
				throw new InvalidConfigurationPropertyValueException(property + ".routing-key", binding.getRoutingKey(),
						ex.getMessage());
			}
		}
		return new ExchangeDefinition(name, exchange.getType(), bindings, exchange.getUnroutable());
	}

	static QueueDefinition definition(String name, PgQueueProperties.Queue queue) {
		String prefix = "pgqueue.queues." + name;
		try {
			QueueNames.requireQueue(name);
		}
		catch (IllegalArgumentException ex) {
			throw new InvalidConfigurationPropertyValueException(prefix, name, ex.getMessage());
		}
		if (queue.getTransactionTimeout() == null || queue.getTransactionTimeout().toMillis() < 1) {
			throw new InvalidConfigurationPropertyValueException(prefix + ".transaction-timeout",
					queue.getTransactionTimeout(), "Use a positive duration, such as 30s");
		}
		if (queue.getMaxAttempts() < 1) {
			throw new InvalidConfigurationPropertyValueException(prefix + ".max-attempts", queue.getMaxAttempts(),
					"Use at least 1");
		}
		PgQueueProperties.Backoff backoff = queue.getBackoff();
		if (backoff.getInitial() == null || backoff.getInitial().isNegative()) {
			throw new InvalidConfigurationPropertyValueException(prefix + ".backoff.initial", backoff.getInitial(),
					"Use a duration of zero or more");
		}
		if (backoff.getMax() == null || backoff.getMax().isNegative()) {
			throw new InvalidConfigurationPropertyValueException(prefix + ".backoff.max", backoff.getMax(),
					"Use a duration of zero or more");
		}
		if (!(backoff.getMultiplier() >= 1.0)) {
			throw new InvalidConfigurationPropertyValueException(prefix + ".backoff.multiplier",
					backoff.getMultiplier(), "Use a multiplier of at least 1.0");
		}
		if (queue.getDeadLetterQueue() != null) {
			try {
				QueueNames.requireQueue(queue.getDeadLetterQueue());
			}
			catch (IllegalArgumentException ex) {
				throw new InvalidConfigurationPropertyValueException(prefix + ".dead-letter-queue",
						queue.getDeadLetterQueue(), ex.getMessage());
			}
			if (queue.getDeadLetterQueue().equals(name)) {
				throw new InvalidConfigurationPropertyValueException(prefix + ".dead-letter-queue",
						queue.getDeadLetterQueue(), "A queue cannot be its own dead-letter queue");
			}
		}
		Duration window = queue.getDeduplicationWindow();
		if (window != null && window.toMillis() < 1) {
			throw new InvalidConfigurationPropertyValueException(prefix + ".deduplication-window", window,
					"Use a duration of at least 1ms, or leave it out for no window");
		}
		Duration retention = queue.getRetention();
		if (retention != null && retention.toMillis() < 1) {
			throw new InvalidConfigurationPropertyValueException(prefix + ".retention", retention,
					"Use a duration of at least 1ms, or leave it out to archive nothing");
		}

		RateLimit rateLimit = rateLimit(prefix + ".rate-limit", queue.getRateLimit());
		QueueDefinition definition = new QueueDefinition(name, queue.getMaxAttempts(), backoff.getInitial(),
				backoff.getMultiplier(), backoff.getMax(), queue.getDeadLetterQueue(), window, retention, rateLimit);
		return concurrencyKey(prefix, definition, queue);
	}

	/** The rate limit {@code value} of property {@code property}; null if it is not set. */
	private static RateLimit rateLimit(String property, String value) {
		if (value == null) {
			return null;
		}
		try {
			return RateLimit.parse(value);
		}
		catch (IllegalArgumentException ex) {
			throw new InvalidConfigurationPropertyValueException(property, value, ex.getMessage());
		}
	}

	/** {@code definition} with the concurrency key of {@code queue}, if it names one. */
	private static QueueDefinition concurrencyKey(String prefix, QueueDefinition definition, PgQueueProperties.Queue queue) {
		String header = queue.getConcurrencyKey();
		Integer maxInFlight = queue.getMaxInFlightPerKey();
		RateLimit perKey = rateLimit(prefix + ".rate-limit-per-key", queue.getRateLimitPerKey());
		if (header == null) {
			if (maxInFlight != null || perKey != null) {
				String property = prefix + ((maxInFlight != null) ? ".max-in-flight-per-key" : ".rate-limit-per-key");
				throw new InvalidConfigurationPropertyValueException(property,
						(maxInFlight != null) ? maxInFlight : queue.getRateLimitPerKey(), property + " is set but "
								+ prefix + ".concurrency-key is not; name the header whose value is the key");
			}
			return definition;
		}
		QueueDefinition keyed = check(prefix + ".concurrency-key", header, () -> definition.withConcurrencyKey(header));
		return (maxInFlight != null || perKey != null) ? check(prefix + ".max-in-flight-per-key", maxInFlight,
				() -> keyed.withConcurrencyKey(header, maxInFlight, perKey)) : keyed;
	}

}
