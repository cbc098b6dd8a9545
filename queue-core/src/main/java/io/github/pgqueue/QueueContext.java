package io.github.pgqueue;

import java.util.List;
import java.util.Objects;

import javax.sql.DataSource;

import io.github.pgqueue.internal.ConsumerSession;
import io.github.pgqueue.internal.QueueSql;
import io.github.pgqueue.internal.RecordedRemovals;
import io.micrometer.core.instrument.MeterRegistry;
import io.micrometer.core.instrument.composite.CompositeMeterRegistry;
import io.micrometer.observation.ObservationRegistry;

import org.springframework.jdbc.core.JdbcTemplate;

/**
 * What a {@link QueueTemplate}, a {@link QueueAdmin} and the listener containers of one schema
 * share: the data source, the schema and its lock namespace, the payload limit and converter, and
 * the meter and observation registries. Thread-safe; build one per schema and data source with
 * {@link #builder(DataSource)} (or {@link #of(DataSource)} for the defaults) and hand it to each
 * of them, as a {@code ConnectionFactory} is handed to a {@code RabbitTemplate}, a
 * {@code RabbitAdmin} and a listener container.
 */
public final class QueueContext {

	/** The schema pgqueue's tables live in unless configured otherwise. */
	public static final String DEFAULT_SCHEMA = "pgqueue";

	/** The default payload limit: 1 MiB of JSON. */
	public static final int DEFAULT_MAX_PAYLOAD_BYTES = 1024 * 1024;

	private final DataSource dataSource;

	private final QueueSql sql;

	private final JdbcTemplate jdbc;

	private final RecordedRemovals removals;

	private final PayloadConverter converter;

	private final MeterRegistry meterRegistry;

	private final ObservationRegistry observationRegistry;

	private final Integer configuredNamespace;

	private volatile Integer namespace;

	private final int maxPayloadBytes;

	private QueueContext(Builder builder) {
		this.dataSource = builder.dataSource;
		this.sql = QueueSql.of(builder.schema);
		this.jdbc = new JdbcTemplate(builder.dataSource);
		this.removals = new RecordedRemovals(builder.dataSource, this.sql);
		this.converter = builder.converter;
		this.meterRegistry = builder.meterRegistry;
		this.observationRegistry = builder.observationRegistry;
		this.configuredNamespace = builder.lockNamespace;
		this.maxPayloadBytes = builder.maxPayloadBytes;
	}

	/** Starts building a context on {@code dataSource}. */
	public static Builder builder(DataSource dataSource) {
		return new Builder(dataSource);
	}

	/** A context on {@code dataSource} with the defaults: schema {@value #DEFAULT_SCHEMA}, JSON payloads. */
	public static QueueContext of(DataSource dataSource) {
		return builder(dataSource).build();
	}

	/** The data source sends, receives and administration run on. */
	public DataSource dataSource() {
		return this.dataSource;
	}

	/** The validated schema of pgqueue's tables. */
	public String schema() {
		return this.sql.schema();
	}

	/**
	 * The first int4 of every lock key pgqueue takes in this schema, as stored in it when it was
	 * created; read on first use.
	 * @throws IllegalStateException if the builder's expected {@link Builder#lockNamespace} differs
	 */
	public int lockNamespace() {
		Integer ns = this.namespace;
		if (ns == null) {
			ns = storedNamespace();
			if (this.configuredNamespace != null && !this.configuredNamespace.equals(ns)) {
				throw new IllegalStateException("pgqueue.lock-namespace is " + this.configuredNamespace
						+ " but schema '" + this.sql.schema() + "' was created with lock namespace " + ns
						+ ", which every process of this schema uses; remove the setting or set it to " + ns);
			}
			this.namespace = ns;
		}
		return ns;
	}

	private int storedNamespace() {
		List<Integer> stored = this.jdbc.query(this.sql.namespace.with(new QueueSql.None()),
				(rs, row) -> rs.getInt("lock_namespace"));
		if (stored.size() != 1) {
			throw new IllegalStateException("Table " + this.sql.schema() + ".setting must hold exactly one row with "
					+ "the lock namespace, but holds " + stored.size() + "; it is written when the schema is created");
		}
		return stored.get(0);
	}

	/** The largest payload, in bytes of JSON, that is sent or read. */
	public int maxPayloadBytes() {
		return this.maxPayloadBytes;
	}

	/** The payload converter. */
	public PayloadConverter payloadConverter() {
		return this.converter;
	}

	/** The meter registry metrics are recorded in. */
	public MeterRegistry meterRegistry() {
		return this.meterRegistry;
	}

	/**
	 * The observation registry sends and listeners record observations in when observation is
	 * enabled for them; {@link ObservationRegistry#NOOP} by default.
	 */
	public ObservationRegistry observationRegistry() {
		return this.observationRegistry;
	}

	/** The statements of this context's schema. */
	QueueSql sql() {
		return this.sql;
	}

	/** Runs removals (cancel, redrive, purge) so that one that rolls back is told from a dead consumer. */
	RecordedRemovals removals() {
		return this.removals;
	}

	/** Opens a consumer session on a connection of its own. */
	ConsumerSession openSession() {
		return ConsumerSession.open(this.dataSource, this.sql, lockNamespace(), this.maxPayloadBytes);
	}

	/** Builds a {@link QueueContext}. */
	public static final class Builder {

		private final DataSource dataSource;

		private String schema = DEFAULT_SCHEMA;

		private Integer lockNamespace;

		private PayloadConverter converter = new JacksonPayloadConverter();

		private MeterRegistry meterRegistry = new CompositeMeterRegistry();

		private int maxPayloadBytes = DEFAULT_MAX_PAYLOAD_BYTES;

		private ObservationRegistry observationRegistry = ObservationRegistry.NOOP;

		private Builder(DataSource dataSource) {
			this.dataSource = Objects.requireNonNull(dataSource, "DataSource must not be null");
		}

		/** The schema of pgqueue's tables; default {@value QueueContext#DEFAULT_SCHEMA}. */
		public Builder schema(String schema) {
			this.schema = QueueNames.requireSchema(schema);
			return this;
		}

		/**
		 * The lock namespace this context expects. The namespace itself (the first int4 of every
		 * advisory-lock key) is stored in the schema when it is created, and every process reads
		 * it from there; a context whose expectation differs fails on first use, naming both.
		 * By default nothing is expected.
		 */
		public Builder lockNamespace(Integer lockNamespace) {
			this.lockNamespace = lockNamespace;
			return this;
		}

		/** How payloads are written and read; default JSON with a {@link JacksonPayloadConverter}. */
		public Builder payloadConverter(PayloadConverter converter) {
			this.converter = Objects.requireNonNull(converter, "PayloadConverter must not be null");
			return this;
		}

		/** Where metrics are recorded; default a registry of its own that no one reads. */
		public Builder meterRegistry(MeterRegistry meterRegistry) {
			this.meterRegistry = Objects.requireNonNull(meterRegistry, "MeterRegistry must not be null");
			return this;
		}

		/**
		 * The largest payload in bytes of JSON: larger sends are rejected, and a consumer
		 * dead-letters a larger message without reading it. Default 1 MiB.
		 */
		public Builder maxPayloadBytes(int maxPayloadBytes) {
			if (maxPayloadBytes < 1) {
				throw new IllegalArgumentException("Max payload bytes must be at least 1, was " + maxPayloadBytes);
			}
			this.maxPayloadBytes = maxPayloadBytes;
			return this;
		}

		/**
		 * The observation registry of the {@code pgqueue.send} observations of templates and the
		 * {@code pgqueue.process} observations of listeners on this context that have observation
		 * enabled. Default {@link ObservationRegistry#NOOP}.
		 */
		public Builder observationRegistry(ObservationRegistry observationRegistry) {
			this.observationRegistry = Objects.requireNonNull(observationRegistry,
					"ObservationRegistry must not be null");
			return this;
		}

		/** The context. */
		public QueueContext build() {
			return new QueueContext(this);
		}

	}

}
