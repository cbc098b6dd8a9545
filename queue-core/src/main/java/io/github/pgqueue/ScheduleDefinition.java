package io.github.pgqueue;

import java.time.DateTimeException;
import java.time.Instant;
import java.time.ZoneId;
import java.time.ZonedDateTime;
import java.util.LinkedHashMap;
import java.util.Locale;
import java.util.Map;
import java.util.Objects;

import tools.jackson.core.JacksonException;
import tools.jackson.databind.json.JsonMapper;

import org.springframework.scheduling.support.CronExpression;

/**
 * A recurring message: at each tick of a cron expression, read in a time zone, one message with a
 * fixed payload and headers is sent to a queue, or published to an exchange with a routing key.
 * Every JVM with pgqueue runs the schedules of its schema, and each tick is sent once, whichever
 * JVM sends it. Build one with {@link #builder(String)}; declare it with
 * {@link QueueAdmin#createSchedule} or under {@code pgqueue.schedules}.
 * <p>
 * Each message carries the headers {@value #SCHEDULE_HEADER} (the schedule's name) and
 * {@value #SCHEDULED_AT_HEADER} (its tick, as an ISO-8601 instant such as
 * {@code 2030-01-01T02:00:00Z}); one that stands for several ticks missed while no JVM ran the
 * schedule also carries {@value #MISSED_FROM_HEADER}, the first of them.
 * @param name the schedule's name: 1 to 63 letters, digits, {@code _}, {@code .} or {@code -}
 * @param cron six fields (second, minute, hour, day of month, month, day of week), as Spring's
 * {@code @Scheduled}, or a macro such as {@code @daily}
 * @param zone the time zone the cron fields are read in
 * @param queue the queue to send to, or null when {@code exchange} is given
 * @param exchange the exchange to publish to, or null when {@code queue} is given
 * @param routingKey the routing key of a publish, null when sending to a queue
 * @param payload the message's body as JSON
 * @param headers the message's own headers (none may start with {@code pgqueue-})
 * @param missed what ticks missed while no JVM ran the schedule become
 */
public record ScheduleDefinition(String name, String cron, ZoneId zone, String queue, String exchange,
		String routingKey, String payload, Map<String, String> headers, Missed missed) {

	/** The zone of a schedule that names none: a schema is shared by JVMs in different zones. */
	public static final ZoneId DEFAULT_ZONE = ZoneId.of("UTC");

	/** The payload of a schedule that gives none: an empty JSON object. */
	public static final String DEFAULT_PAYLOAD = "{}";

	/** The header naming the schedule that sent a message. */
	public static final String SCHEDULE_HEADER = "pgqueue-schedule";

	/** The header holding the tick a message was sent for, as an ISO-8601 instant. */
	public static final String SCHEDULED_AT_HEADER = "pgqueue-scheduled-at";

	/** The header of a message that stands for several missed ticks: the first of them. */
	public static final String MISSED_FROM_HEADER = "pgqueue-missed-from";

	private static final JsonMapper JSON = JsonMapper.builder().build();

	/** What becomes of ticks missed while no JVM ran the schedule (see the guide for when a tick counts as missed). */
	public enum Missed {

		/** One message, for the latest missed tick, then the schedule goes on from its next tick. */
		FIRE_ONCE("fire-once"),

		/** No message: the schedule goes on from its next tick. */
		SKIP("skip");

		private final String value;

		Missed(String value) {
			this.value = value;
		}

		/** How this policy is written in configuration and in the database: {@code fire-once} or {@code skip}. */
		public String value() {
			return this.value;
		}

		/**
		 * The policy written {@code value} ({@code fire-once} or {@code skip}).
		 * @throws IllegalArgumentException for any other value, naming it
		 */
		public static Missed of(String value) {
			for (Missed missed : values()) {
				if (missed.value.equals(value)) {
					return missed;
				}
			}
			throw new IllegalArgumentException("Unknown missed-tick policy '" + value + "'; use fire-once or skip");
		}

	}

	/** Checks every component, as the builder does one at a time. */
	public ScheduleDefinition {
		requireName(name);
		requireCron(name, cron);
		Objects.requireNonNull(zone, () -> "Zone of schedule '" + name + "' must not be null");
		if ((queue == null) == (exchange == null)) {
			throw new IllegalArgumentException((queue == null) ? "Schedule '" + name + "' has no target; give it a "
					+ "queue, or an exchange and a routing key" : "Schedule '" + name + "' has both a queue and an "
							+ "exchange; give it one of them");
		}
		if (queue != null) {
			requireTarget(name, queue, "queue");
			if (routingKey != null) {
				throw new IllegalArgumentException("Schedule '" + name + "' sends to queue '" + queue + "' and has a "
						+ "routing key, which only a publish to an exchange takes; remove it");
			}
		}
		else {
			requireTarget(name, exchange, "exchange");
			if (routingKey == null) {
				throw new IllegalArgumentException("Schedule '" + name + "' publishes to exchange '" + exchange
						+ "' without a routing key; give one (the empty key for a fanout exchange)");
			}
		}
		requirePayload(name, payload);
		headers = java.util.Collections.unmodifiableMap(new LinkedHashMap<>(
				Objects.requireNonNull(headers, () -> "Headers of schedule '" + name + "' must not be null")));
		headers.forEach((header, value) -> requireHeader(name, header, value));
		Objects.requireNonNull(missed, () -> "Missed-tick policy of schedule '" + name + "' must not be null");
	}

	/**
	 * Starts a schedule named {@code name}.
	 * @throws IllegalArgumentException if the name is not valid
	 */
	public static Builder builder(String name) {
		return new Builder(requireName(name));
	}

	/** A builder holding this definition, to change some of it. */
	public Builder toBuilder() {
		Builder builder = new Builder(this.name).cron(this.cron).zone(this.zone).headers(this.headers)
			.payload(this.payload)
			.missed(this.missed);
		return (this.queue != null) ? builder.queue(this.queue) : builder.exchange(this.exchange, this.routingKey);
	}

	/** The queue or exchange this schedule sends to. */
	public String target() {
		return (this.queue != null) ? this.queue : this.exchange;
	}

	/** The first tick strictly after {@code instant}; null if the expression has none (it is then rejected). */
	Instant nextTickAfter(Instant instant) {
		return nextTick(CronExpression.parse(this.cron), this.zone, instant);
	}

	static Instant nextTick(CronExpression cron, ZoneId zone, Instant after) {
		ZonedDateTime next = cron.next(ZonedDateTime.ofInstant(after, zone));
		return (next != null) ? next.toInstant() : null;
	}

	/** Returns {@code name} if it is a valid schedule name, else throws naming it. */
	static String requireName(String name) {
		if (name == null || !name.matches("[A-Za-z0-9_.-]{1," + QueueNames.MAX_LENGTH + "}")) {
			throw new IllegalArgumentException("Invalid schedule name '" + name + "': use 1 to " + QueueNames.MAX_LENGTH
					+ " letters, digits, '_', '.' or '-'");
		}
		return name;
	}

	private static CronExpression requireCron(String name, String cron) {
		if (cron == null || cron.isBlank()) {
			throw new IllegalArgumentException("Schedule '" + name + "' has no cron expression; give one such as "
					+ "'0 0 2 * * *' (second minute hour day-of-month month day-of-week) or '@daily'");
		}
		CronExpression parsed;
		try {
			parsed = CronExpression.parse(cron);
		}
		catch (IllegalArgumentException ex) {
			throw new IllegalArgumentException("Cron expression '" + cron + "' of schedule '" + name + "' does not parse ("
					+ ex.getMessage() + "); use six fields (second minute hour day-of-month month day-of-week) such as "
					+ "'0 0 2 * * *', or a macro such as '@daily'", ex);
		}
		if (nextTick(parsed, DEFAULT_ZONE, Instant.now()) == null) {
			throw new IllegalArgumentException("Cron expression '" + cron + "' of schedule '" + name + "' never "
					+ "matches a date; check its day-of-month and month fields");
		}
		return parsed;
	}

	private static ZoneId requireZone(String name, String zone) {
		try {
			return ZoneId.of(Objects.requireNonNull(zone, "null"));
		}
		catch (DateTimeException | NullPointerException ex) {
			throw new IllegalArgumentException("Zone '" + zone + "' of schedule '" + name + "' is unknown; use a region "
					+ "such as 'Europe/Paris', 'UTC', or an offset such as '+02:00'", ex);
		}
	}

	private static void requireTarget(String name, String target, String kind) {
		try {
			QueueNames.requireQueue(target);
		}
		catch (IllegalArgumentException ex) {
			throw new IllegalArgumentException("Schedule '" + name + "' " + kind + ": " + ex.getMessage(), ex);
		}
	}

	private static void requirePayload(String name, String payload) {
		if (payload == null) {
			throw new IllegalArgumentException("Payload of schedule '" + name + "' must not be null; leave it out for "
					+ DEFAULT_PAYLOAD);
		}
		try {
			if (JSON.readTree(payload).isMissingNode()) {
				throw new IllegalArgumentException("Payload of schedule '" + name + "' is empty; write it as a JSON "
						+ "document such as '{\"report\": \"daily\"}', or '\"text\"'");
			}
		}
		catch (JacksonException ex) {
			throw new IllegalArgumentException("Payload of schedule '" + name + "' is not JSON ("
					+ ex.getOriginalMessage() + "); write it as a JSON document such as '{\"report\": \"daily\"}', or "
					+ "'\"text\"'", ex);
		}
	}

	private static void requireHeader(String name, String header, String value) {
		if (header == null || header.isEmpty() || value == null) {
			throw new IllegalArgumentException("Header '" + header + "' of schedule '" + name + "' needs a name and a "
					+ "value");
		}
		if (header.toLowerCase(Locale.ROOT).startsWith("pgqueue-")) {
			throw new IllegalArgumentException("Header '" + header + "' of schedule '" + name + "' starts with "
					+ "'pgqueue-', which pgqueue's own headers do; name it otherwise");
		}
	}

	/**
	 * Builds a {@link ScheduleDefinition}. Each method checks its value at once, naming the schedule
	 * and what is wrong in an {@link IllegalArgumentException}.
	 */
	public static final class Builder {

		private final String name;

		private String cron;

		private ZoneId zone = DEFAULT_ZONE;

		private String queue;

		private String exchange;

		private String routingKey;

		private String payload = DEFAULT_PAYLOAD;

		private final Map<String, String> headers = new LinkedHashMap<>();

		private Missed missed = Missed.FIRE_ONCE;

		private Builder(String name) {
			this.name = name;
		}

		/** The cron expression: six fields, such as {@code 0 0 2 * * *}, or a macro such as {@code @daily}. */
		public Builder cron(String cron) {
			requireCron(this.name, cron);
			this.cron = cron;
			return this;
		}

		/** The zone the cron fields are read in; default {@link ScheduleDefinition#DEFAULT_ZONE UTC}. */
		public Builder zone(ZoneId zone) {
			this.zone = Objects.requireNonNull(zone, () -> "Zone of schedule '" + this.name + "' must not be null");
			return this;
		}

		/** The zone by id: a region such as {@code Europe/Paris}, {@code UTC}, or an offset such as {@code +02:00}. */
		public Builder zone(String zone) {
			return zone(requireZone(this.name, zone));
		}

		/** Sends each tick's message to {@code queue}. */
		public Builder queue(String queue) {
			requireTarget(this.name, queue, "queue");
			this.queue = queue;
			this.exchange = null;
			this.routingKey = null;
			return this;
		}

		/** Publishes each tick's message to {@code exchange} with {@code routingKey}. */
		public Builder exchange(String exchange, String routingKey) {
			requireTarget(this.name, exchange, "exchange");
			if (routingKey == null) {
				throw new IllegalArgumentException("Schedule '" + this.name + "' publishes to exchange '" + exchange
						+ "' without a routing key; give one (the empty key for a fanout exchange)");
			}
			this.exchange = exchange;
			this.routingKey = routingKey;
			this.queue = null;
			return this;
		}

		/** The body as JSON, such as {@code {"report": "daily"}}; default {@value ScheduleDefinition#DEFAULT_PAYLOAD}. */
		public Builder payload(String json) {
			requirePayload(this.name, json);
			this.payload = json;
			return this;
		}

		/** Adds a header; names starting with {@code pgqueue-} are pgqueue's own. */
		public Builder header(String header, String value) {
			requireHeader(this.name, header, value);
			this.headers.put(header, value);
			return this;
		}

		/** Adds headers. */
		public Builder headers(Map<String, String> headers) {
			headers.forEach(this::header);
			return this;
		}

		/** What ticks missed while no JVM ran the schedule become; default {@link Missed#FIRE_ONCE}. */
		public Builder missed(Missed missed) {
			this.missed = Objects.requireNonNull(missed,
					() -> "Missed-tick policy of schedule '" + this.name + "' must not be null");
			return this;
		}

		/**
		 * The definition.
		 * @throws IllegalArgumentException if it has no cron expression or no target
		 */
		public ScheduleDefinition build() {
			return new ScheduleDefinition(this.name, this.cron, this.zone, this.queue, this.exchange, this.routingKey,
					this.payload, this.headers, this.missed);
		}

	}

}
