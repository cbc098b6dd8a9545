package io.github.pgqueue;

import java.lang.reflect.Type;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Objects;
import java.util.Optional;

import javax.sql.DataSource;

import io.github.pgqueue.internal.ClaimedMessage;
import io.github.pgqueue.internal.ConsumerSession;
import io.github.pgqueue.internal.HeaderFilter;
import io.github.pgqueue.internal.NamedStatement;
import io.github.pgqueue.internal.QueueSql;
import io.github.pgqueue.internal.RecordedRemovals;
import io.github.pgqueue.observation.QueueSendObservationContext.Operation;
import io.github.pgqueue.observation.QueueSendObservationConvention;
import io.micrometer.core.instrument.Counter;
import io.micrometer.core.instrument.MeterRegistry;

import org.springframework.jdbc.core.JdbcTemplate;
import org.springframework.jdbc.core.PreparedStatementCreator;

/**
 * The thread-safe {@link QueueOperations} implementation. Sends run on the connection of the
 * caller's Spring-managed transaction when there is one; receives use sessions of their own.
 * Build one with {@link #builder(DataSource)}.
 */
public final class QueueTemplate implements QueueOperations {

	private static final int RECEIVE_ATTEMPTS = 16;

	/** How often a deduplicated send runs again when it neither inserted nor saw the message with its key. */
	private static final int DEDUPLICATION_ATTEMPTS = 10;

	/** SQLSTATE {@code disk_full}: a data file could not be extended (the WAL filling up crashes the server instead). */
	private static final String DISK_FULL = "53100";

	private final QueueContext context;

	private final JdbcTemplate jdbc;

	private final QueueSql sql;

	private final RecordedRemovals removals;

	private final PayloadConverter converter;

	private final MeterRegistry meterRegistry;

	private final SendObservation sendObservation;

	private final int maxPayloadBytes;

	private final java.util.Map<String, Counter> sentCounters = new java.util.concurrent.ConcurrentHashMap<>();

	/** A template on {@code context}, its sends not observed. */
	public QueueTemplate(QueueContext context) {
		this(builder(context));
	}

	private QueueTemplate(Builder builder) {
		QueueContext context = builder.context;
		this.context = context;
		this.jdbc = new JdbcTemplate(context.dataSource());
		this.sql = context.sql();
		this.removals = context.removals();
		this.converter = context.payloadConverter();
		this.meterRegistry = context.meterRegistry();
		this.sendObservation = new SendObservation(context.observationRegistry(), builder.observationEnabled,
				builder.observationConvention);
		this.maxPayloadBytes = context.maxPayloadBytes();
	}

	/** Starts building a template on {@code context}, to observe its sends. */
	public static Builder builder(QueueContext context) {
		return new Builder(context);
	}

	/**
	 * Starts building a template on a context of its own, with the defaults, on {@code dataSource};
	 * build a {@link QueueContext} to configure the schema, payloads or metrics, or to share them
	 * with a {@link QueueAdmin} and listener containers.
	 */
	public static Builder builder(DataSource dataSource) {
		return new Builder(QueueContext.of(dataSource));
	}

	/** The context this template works in: its data source, schema, converter and registries. */
	public QueueContext context() {
		return this.context;
	}

	@Override
	public long send(String queue, Object payload, SendOptions options) {
		QueueNames.requireQueue(queue);
		Objects.requireNonNull(options, "SendOptions must not be null");
		String json = checkSize(queue, this.converter.write(requirePayload(payload, queue)));
		return this.sendObservation.observe(Operation.SEND, queue, null, null, 1,
				withContentType(queue, payload, options.headers()), (headers) -> insert(queue, json, options, headers));
	}

	/** Inserts one message with {@code headers} (the options' own, or those an observation added to). */
	private long insert(String queue, String json, SendOptions options, java.util.Map<String, String> headers) {
		if (options.deduplicationKey() != null) {
			return sendDeduplicated(queue, json, options, headers);
		}
		boolean plain = options.isDefault() && headers.isEmpty();
		PreparedStatementCreator statement = plain ? this.sql.sendPlain.with(new QueueSql.SendPlain(queue, json))
				: this.sql.send.with(send(queue, json, options, headers));
		Long id = write(queue, () -> this.jdbc.execute(statement, (PreparedStatement ps) -> {
			try (ResultSet rs = ps.executeQuery()) {
				rs.next();
				return rs.getLong("id");
			}
		}));
		sent(queue, 1);
		return Objects.requireNonNull(id);
	}

	/**
	 * Sends unless a message with the options' deduplication key is in the queue; either way the
	 * id of the one message with that key. A conflicting message committed after the statement's
	 * snapshot is not seen by it: the statement runs again (in a read-committed transaction it then
	 * sees it, or finds it gone and inserts).
	 */
	private long sendDeduplicated(String queue, String json, SendOptions options, java.util.Map<String, String> headers) {
		for (int i = 0; i < DEDUPLICATION_ATTEMPTS; i++) {
			long[] sent = write(queue, () -> this.jdbc.execute(
					this.sql.sendDeduplicated.with(send(queue, json, options, headers)), (PreparedStatement ps) -> {
						try (ResultSet rs = ps.executeQuery()) {
							return rs.next() ? new long[] { rs.getLong("id"), rs.getBoolean("inserted") ? 1 : 0 } : null;
						}
					}));
			if (sent != null) {
				sent(queue, (int) sent[1]);
				return sent[0];
			}
		}
		throw new QueueException("Could not send to '" + queue + "' with deduplication key '"
				+ options.deduplicationKey() + "': a message with that key kept appearing and disappearing, or the "
				+ "caller's transaction (REPEATABLE READ or SERIALIZABLE) cannot see the one that exists; send it "
				+ "from a READ COMMITTED transaction");
	}

	@Override
	public List<Long> sendBatch(String queue, List<?> payloads, SendOptions options) {
		QueueNames.requireQueue(queue);
		Objects.requireNonNull(payloads, "Payloads must not be null");
		Objects.requireNonNull(options, "SendOptions must not be null");
		if (payloads.isEmpty()) {
			return List.of();
		}
		String[] json = new String[payloads.size()];
		for (int i = 0; i < json.length; i++) {
			json[i] = checkSize(queue, this.converter.write(requirePayload(payloads.get(i), queue)));
		}
		java.util.Map<String, String> withContentType = withContentType(queue, payloads.get(0), options.headers());
		String contentType = this.converter.contentType(payloads.get(0));
		for (int i = 1; i < json.length; i++) {
			// one headers value for the batch's statement: every body must be of one content type
			if (!Objects.equals(contentType, this.converter.contentType(payloads.get(i)))) {
				throw new IllegalArgumentException("Payloads of a batch for queue '" + queue + "' must be of one content "
						+ "type, but payload 0 (" + payloads.get(0).getClass().getName() + ") is "
						+ describeContentType(payloads.get(0)) + " and payload " + i + " ("
						+ payloads.get(i).getClass().getName() + ") is " + describeContentType(payloads.get(i))
						+ "; send them in separate batches");
			}
		}
		return this.sendObservation.observe(Operation.SEND_BATCH, queue, null, null, json.length, withContentType,
				(headers) -> insertBatch(queue, json, options, headers));
	}

	private List<Long> insertBatch(String queue, String[] json, SendOptions options,
			java.util.Map<String, String> headers) {
		if (options.deduplicationKey() != null) {
			// One key for the batch: the first payload is sent (unless the key is in the queue), the
			// others are duplicates of it, and every element of the result is that message's id.
			List<Long> ids = new ArrayList<>(json.length);
			for (String payload : json) {
				ids.add(insert(queue, payload, options, headers));
			}
			return ids;
		}
		NamedStatement<QueueSql.SendBatch> statement = (options.group() != null) ? this.sql.sendGroupedBatch
				: this.sql.sendBatch;
		QueueSql.SendBatch batch = new QueueSql.SendBatch(queue, MessageHeaders.write(headers), options.priority(),
				options.notBefore(), options.delay().toMillis(), options.maxAttempts(), options.group(), json);
		List<Long> ids = write(queue, () -> this.jdbc.execute(statement.with(batch), (PreparedStatement ps) -> {
			List<Long> result = new ArrayList<>(json.length);
			try (ResultSet rs = ps.executeQuery()) {
				while (rs.next()) {
					result.add(rs.getLong("id"));
				}
			}
			Collections.sort(result);
			return result;
		}));
		sent(queue, json.length);
		return ids;
	}

	@Override
	public int publish(String exchange, String routingKey, Object payload, SendOptions options) {
		QueueNames.requireQueue(exchange);
		Objects.requireNonNull(routingKey, "Routing key must not be null");
		Objects.requireNonNull(options, "SendOptions must not be null");
		String json = checkSize(exchange, this.converter.write(requirePayload(payload, exchange)));
		java.util.Map<String, String> headers = new java.util.LinkedHashMap<>(
				withContentType(exchange, payload, options.headers()));
		headers.put("pgqueue-exchange", exchange);
		headers.put("pgqueue-routing-key", routingKey);
		return this.sendObservation.observe(Operation.PUBLISH, null, exchange, routingKey, 1, headers,
				(written) -> insertRouted(exchange, routingKey, json, options, written));
	}

	/** Inserts a copy of the message into every bound queue that matches; the number of copies. */
	private int insertRouted(String exchange, String routingKey, String json, SendOptions options,
			java.util.Map<String, String> headers) {
		QueueSql.Publish publish = new QueueSql.Publish(exchange, routingKey, json, MessageHeaders.write(headers),
				options.priority(), options.notBefore(), options.delay().toMillis(), options.maxAttempts(),
				options.deduplicationKey(), options.group());
		List<String> routedTo = write(exchange, () -> this.jdbc.execute(this.sql.publish.with(publish),
				(PreparedStatement ps) -> {
					List<String> queues = new ArrayList<>();
					try (ResultSet rs = ps.executeQuery()) {
						while (rs.next()) {
							queues.add(rs.getString("queue"));
						}
					}
					return queues;
				}));
		if (routedTo == null || routedTo.isEmpty()) {
			List<String> policy = this.jdbc.query(this.sql.unroutablePolicy.with(new QueueSql.Exchange(exchange)),
					(rs, row) -> rs.getString("unroutable"));
			if (policy.isEmpty()) {
				throw new IllegalArgumentException("Exchange '" + exchange + "' is not declared; declare it under "
						+ "pgqueue.exchanges or with declare(ExchangeDefinition)");
			}
			this.meterRegistry.counter("pgqueue.messages.unroutable", "exchange", exchange).increment();
			if ("fail".equals(policy.get(0))) {
				throw new UnroutableMessageException("No binding of exchange '" + exchange + "' matches routing key '"
						+ routingKey + "'; nothing was sent (the exchange is declared with unroutable: fail)");
			}
			return 0;
		}
		routedTo.forEach((queue) -> sent(queue, 1));
		return routedTo.size();
	}

	/**
	 * Sends the JSON body {@code json} with {@code headers} as {@link #send} does, converter aside:
	 * the same statement, observation and metrics. For schedules, whose payload is stored as JSON.
	 */
	long sendJson(String queue, String json, java.util.Map<String, String> headers) {
		QueueNames.requireQueue(queue);
		String body = checkSize(queue, json);
		return this.sendObservation.observe(Operation.SEND, queue, null, null, 1, headers,
				(written) -> insert(queue, body, SendOptions.DEFAULTS, written));
	}

	/** Publishes the JSON body {@code json} with {@code headers} as {@link #publish} does, converter aside. */
	int publishJson(String exchange, String routingKey, String json, java.util.Map<String, String> headers) {
		QueueNames.requireQueue(exchange);
		String body = checkSize(exchange, json);
		java.util.Map<String, String> routed = new java.util.LinkedHashMap<>(headers);
		routed.put("pgqueue-exchange", exchange);
		routed.put("pgqueue-routing-key", routingKey);
		return this.sendObservation.observe(Operation.PUBLISH, null, exchange, routingKey, 1, routed,
				(written) -> insertRouted(exchange, routingKey, body, SendOptions.DEFAULTS, written));
	}

	@Override
	public <T> Optional<Lease<T>> receive(String queue, Class<T> payloadType) {
		return receive(queue, (Type) payloadType);
	}

	@Override
	public <T> Optional<Lease<T>> receive(String queue, Type payloadType) {
		return receive(queue, (HeaderFilter) null, payloadType);
	}

	@Override
	public <T> Optional<Lease<T>> receive(String queue, String filter, Class<T> payloadType) {
		Objects.requireNonNull(filter, "filter");
		return receive(queue, HeaderFilter.parse(filter), payloadType);
	}

	@SuppressWarnings("unchecked")
	private <T> Optional<Lease<T>> receive(String queue, HeaderFilter filter, Type payloadType) {
		QueueNames.requireQueue(queue);
		ConsumerSession session = this.context.openSession();
		try {
			for (int i = 0; i < RECEIVE_ATTEMPTS; i++) {
				ConsumerSession.Claim claim = session.claim(queue, 1, true, filter);
				List<ClaimedMessage> claimed = claim.messages();
				if (claimed.isEmpty()) {
					if (claim.deadLettered() > 0) {
						continue;
					}
					session.close();
					return Optional.empty();
				}
				ClaimedMessage message = claimed.get(0);
				try {
					QueueMessage<T> converted = (QueueMessage<T>) toQueueMessage(message, payloadType, this.converter);
					return Optional.of(new Lease<>(session, message, converted));
				}
				catch (PayloadConversionException ex) {
					session.deadLetter(List.of(ConsumerSession.DeadLetter.of(message, ex.getMessage())));
				}
			}
			session.close();
			return Optional.empty();
		}
		catch (RuntimeException ex) {
			session.close();
			throw ex;
		}
	}

	@Override
	@SuppressWarnings("unchecked")
	public <T> Optional<Lease<T>> receive(String queue, long id, Class<T> payloadType) {
		QueueNames.requireQueue(queue);
		ConsumerSession session = this.context.openSession();
		try {
			List<ClaimedMessage> claimed = session.claimById(queue, id).messages();
			if (claimed.isEmpty()) {
				session.close();
				return Optional.empty();
			}
			ClaimedMessage message = claimed.get(0);
			try {
				QueueMessage<T> converted = (QueueMessage<T>) toQueueMessage(message, payloadType, this.converter);
				return Optional.of(new Lease<>(session, message, converted));
			}
			catch (PayloadConversionException ex) {
				session.release(List.of(id), false); // the attempt not counted; the catch below closes the session
				throw new PayloadConversionException("Message " + id + " of queue '" + queue + "' cannot be read as "
						+ payloadType.getName() + " (it was left in the queue): " + ex.getMessage(), ex);
			}
		}
		catch (RuntimeException ex) {
			session.close();
			throw ex;
		}
	}

	/** Converts a claimed row into the message a handler sees. */
	static QueueMessage<Object> toQueueMessage(ClaimedMessage message, Type payloadType, PayloadConverter converter) {
		java.util.Map<String, String> headers = MessageHeaders.read(message.headersJson());
		Object payload = converter.read(message.payloadJson(), payloadType,
				headers.get(PayloadConverter.CONTENT_TYPE_HEADER));
		return new QueueMessage<>(message.id(), message.queue(), payload, headers, message.priority(),
				message.attempt(), message.maxAttempts(), message.createdAt());
	}

	@Override
	public CancelResult cancel(String queue, long id) {
		QueueNames.requireQueue(queue);
		int ns = namespace();
		Boolean removed = this.removals.run((connection) -> {
			try (PreparedStatement ps = this.sql.cancel.prepare(connection, new QueueSql.Cancel(id, queue, ns));
					ResultSet rs = ps.executeQuery()) {
				return rs.next() && rs.getBoolean("deleted");
			}
		});
		if (Boolean.TRUE.equals(removed)) {
			return CancelResult.REMOVED;
		}
		boolean exists = this.jdbc.query(this.sql.exists.with(new QueueSql.Exists(id, queue)),
				(rs, row) -> rs.getBoolean("exists")).get(0);
		return exists ? CancelResult.HELD : CancelResult.NOT_FOUND;
	}

	@Override
	public QueueStats stats(String queue) {
		QueueNames.requireQueue(queue);
		int ns = namespace();
		return this.jdbc.query(this.sql.stats.with(new QueueSql.Stats(queue, ns)), (rs, row) -> {
			double oldest = rs.getDouble("oldest_age_s");
			return new QueueStats(queue, rs.getLong("ready"), rs.getLong("delayed"), rs.getLong("in_flight"),
					rs.getLong("dead_lettered"), Duration.ofMillis((long) (oldest * 1000)));
		}).get(0);
	}

	private int namespace() {
		return this.context.lockNamespace();
	}

	/**
	 * Runs a sending statement; a send inside a read-only transaction (SQLSTATE 25006) or on a
	 * server whose disk is full (53100) fails with a sentence that says so rather than a raw SQL
	 * error.
	 */
	private static <T> T write(String target, java.util.function.Supplier<T> statement) {
		try {
			return statement.get();
		}
		catch (org.springframework.dao.DataAccessException ex) {
			if (ex.getMostSpecificCause() instanceof java.sql.SQLException sql) {
				if ("25006".equals(sql.getSQLState())) {
					throw new QueueException("Cannot send to '" + target + "' in a read-only transaction (for example "
							+ "@Transactional(readOnly = true)); send from a read-write transaction", ex);
				}
				if (DISK_FULL.equals(sql.getSQLState())) {
					throw new QueueException(diskFull(target, sql), ex);
				}
			}
			throw ex;
		}
	}

	/**
	 * An ERROR (a data file could not grow) aborted the statement: nothing was sent. A PANIC (the
	 * WAL could not grow) crashed the server, possibly after this transaction's commit record was
	 * written: its outcome is unknown.
	 */
	static String diskFull(String target, java.sql.SQLException sql) {
		String message = String.valueOf(sql.getMessage());
		int end = message.indexOf('\n');
		String first = (end >= 0) ? message.substring(0, end) : message;
		if (first.startsWith("ERROR:")) {
			return "Cannot send to '" + target + "': the database server is out of disk space (" + first
					+ "); nothing was sent, send again once space is freed on the server";
		}
		return "Cannot send to '" + target + "': the database server ran out of disk space and stopped (" + first
				+ "); whether this send was committed is unknown, so look for the message before sending it again "
				+ "once space is freed and the server runs";
	}

	void sent(String queue, int count) {
		this.sentCounters.computeIfAbsent(queue, (name) -> Counter.builder("pgqueue.messages.sent")
			.description("Messages sent")
			.tag("queue", name)
			.register(this.meterRegistry)).increment(count);
	}

	private String checkSize(String queue, String json) {
		// UTF-8 is at most 3 bytes per UTF-16 char: count exactly only when it could matter.
		if ((long) json.length() * 3 > this.maxPayloadBytes) {
			int bytes = json.getBytes(java.nio.charset.StandardCharsets.UTF_8).length;
			if (bytes > this.maxPayloadBytes) {
				throw new IllegalArgumentException("Payload for queue '" + queue + "' is " + bytes
						+ " bytes of JSON, above the limit of " + this.maxPayloadBytes
						+ " bytes; send a reference to the data instead, or raise pgqueue.max-payload-size");
			}
		}
		return json;
	}

	/**
	 * The headers of a message with {@code payload}: the converter's content type added, unless it
	 * is JSON. A sender may name the content type itself only for a {@code String} payload, whose
	 * text is then the body (an XML document in a String, say), and only as a text or XML type.
	 */
	private java.util.Map<String, String> withContentType(String target, Object payload,
			java.util.Map<String, String> headers) {
		String named = headers.get(PayloadConverter.CONTENT_TYPE_HEADER);
		if (named != null) {
			if (!(payload instanceof String) || !TextBodies.isText(named)) {
				throw new IllegalArgumentException("Header " + PayloadConverter.CONTENT_TYPE_HEADER + " of a message to '"
						+ target + "' is '" + named + "', but the payload converter writes this "
						+ payload.getClass().getName() + " as " + describeContentType(payload) + "; remove the header "
						+ "(only a String payload may name its content type, and only a text or XML one)");
			}
			return headers;
		}
		String contentType = this.converter.contentType(payload);
		if (contentType == null) {
			return headers;
		}
		java.util.Map<String, String> withContentType = new java.util.LinkedHashMap<>(headers);
		withContentType.put(PayloadConverter.CONTENT_TYPE_HEADER, contentType);
		return withContentType;
	}

	private String describeContentType(Object payload) {
		String contentType = this.converter.contentType(payload);
		return (contentType != null) ? contentType : "JSON";
	}

	private static Object requirePayload(Object payload, String queue) {
		if (payload == null) {
			throw new IllegalArgumentException("Payload for queue '" + queue + "' must not be null");
		}
		return payload;
	}

	private static QueueSql.Send send(String queue, String json, SendOptions options,
			java.util.Map<String, String> headers) {
		return new QueueSql.Send(queue, json, MessageHeaders.write(headers), options.priority(), options.notBefore(),
				options.delay().toMillis(), options.maxAttempts(), options.group(), options.deduplicationKey());
	}

	/** Builds a {@link QueueTemplate}: whether and how its sends are observed. */
	public static final class Builder {

		private final QueueContext context;

		private boolean observationEnabled;

		private QueueSendObservationConvention observationConvention;

		private Builder(QueueContext context) {
			this.context = Objects.requireNonNull(context, "QueueContext must not be null");
		}

		/**
		 * Whether every {@code send}, {@code sendBatch} and {@code publish} is observed as
		 * {@code pgqueue.send} in the context's observation registry, with the trace context written
		 * into the message's headers by the registry's propagating handlers. Default false.
		 */
		public Builder observationEnabled(boolean observationEnabled) {
			this.observationEnabled = observationEnabled;
			return this;
		}

		/**
		 * The convention of the {@code pgqueue.send} observation; null (the default) for
		 * {@link io.github.pgqueue.observation.DefaultQueueSendObservationConvention}.
		 */
		public Builder observationConvention(QueueSendObservationConvention observationConvention) {
			this.observationConvention = observationConvention;
			return this;
		}

		/** The template. */
		public QueueTemplate build() {
			return new QueueTemplate(this);
		}

	}

}
