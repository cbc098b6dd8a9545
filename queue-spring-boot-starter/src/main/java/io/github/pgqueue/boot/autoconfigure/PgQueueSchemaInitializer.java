package io.github.pgqueue.boot.autoconfigure;

import java.util.ArrayList;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;

import javax.sql.DataSource;

import io.github.pgqueue.ExchangeDefinition;
import io.github.pgqueue.QueueAdmin;
import io.github.pgqueue.QueueContext;
import io.github.pgqueue.QueueDefinition;
import io.github.pgqueue.ScheduleDefinition;
import org.flywaydb.core.Flyway;
import org.flywaydb.core.api.FlywayException;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import org.springframework.beans.factory.InitializingBean;
import org.springframework.boot.context.properties.source.InvalidConfigurationPropertyValueException;

/**
 * Migrates pgqueue's schema with a private Flyway instance (its own history table, so the
 * application's own migrations are untouched) and writes the queue definitions of
 * {@code pgqueue.queues} and {@code pgqueue.exchanges}, then the schedules of {@code pgqueue.schedules}
 * (created, or changed to match). Beans that use the schema depend on this one.
 */
public class PgQueueSchemaInitializer implements InitializingBean {

	/** The history table of pgqueue's migrations, inside pgqueue's schema. */
	public static final String HISTORY_TABLE = "pgqueue_schema_history";

	/** The migrations' placeholder for {@code pgqueue.lock-namespace}, stored when the schema is created. */
	static final String LOCK_NAMESPACE_PLACEHOLDER = "lockNamespace";

	private static final Logger logger = LoggerFactory.getLogger(PgQueueSchemaInitializer.class);

	private final DataSource dataSource;

	private final String schema;

	private final Integer lockNamespace;

	private final List<QueueDefinition> definitions;

	private final List<ExchangeDefinition> exchanges = new ArrayList<>();

	private final List<ScheduleDefinition> schedules = new ArrayList<>();

	PgQueueSchemaInitializer(DataSource dataSource, PgQueueProperties properties) {
		PgQueuePropertiesValidator.validate(properties);
		this.dataSource = dataSource;
		this.schema = properties.getSchema();
		this.lockNamespace = properties.getLockNamespace();
		this.definitions = definitions(properties.getQueues());
		properties.getExchanges().forEach((name, exchange) -> this.exchanges
			.add(PgQueuePropertiesValidator.exchange(name, exchange, properties.getQueues().keySet())));
		properties.getSchedules().forEach((name, schedule) -> this.schedules
			.add(PgQueuePropertiesValidator.schedule(name, schedule)));
	}

	@Override
	public void afterPropertiesSet() {
		try {
			var result = Flyway.configure(getClass().getClassLoader())
				.dataSource(this.dataSource)
				.locations("classpath:db/pgqueue")
				.schemas(this.schema)
				.defaultSchema(this.schema)
				.table(HISTORY_TABLE)
				.baselineOnMigrate(true)
				.baselineVersion("0")
				.cleanDisabled(true)
				.placeholders(Map.of(LOCK_NAMESPACE_PLACEHOLDER,
						(this.lockNamespace != null) ? this.lockNamespace.toString() : ""))
				.load()
				.migrate();
			if (result.migrationsExecuted > 0) {
				logger.info("Migrated pgqueue schema '{}' to version {}", this.schema, result.targetSchemaVersion);
			}
		}
		catch (FlywayException ex) {
			throw new IllegalStateException("pgqueue could not create or migrate its schema '" + this.schema
					+ "': " + ex.getMessage() + ". Check spring.datasource.* and that the database user may create "
					+ "a schema (or create it and grant the user rights on it)", ex);
		}
		QueueContext context = QueueContext.builder(this.dataSource)
			.schema(this.schema)
			.lockNamespace(this.lockNamespace)
			.build();
		context.lockNamespace(); // fails here, naming both, if pgqueue.lock-namespace disagrees with the schema
		QueueAdmin admin = new QueueAdmin(context);
		this.definitions.forEach(admin::declare);
		this.exchanges.forEach(admin::declare);
		for (ScheduleDefinition schedule : this.schedules) {
			try {
				admin.declareSchedule(schedule);
			}
			catch (IllegalStateException ex) {
				// the one thing the database can refuse: a target that is not declared
				throw new InvalidConfigurationPropertyValueException("pgqueue.schedules." + schedule.name()
						+ ((schedule.queue() != null) ? ".queue" : ".exchange"), schedule.target(), ex.getMessage());
			}
		}
	}

	/** The exchanges of {@code pgqueue.exchanges}. */
	List<ExchangeDefinition> exchanges() {
		return this.exchanges;
	}

	/** Names of the queues that listeners may consume: the defined ones and their dead-letter queues. */
	Set<String> knownQueues() {
		Set<String> known = new LinkedHashSet<>();
		for (QueueDefinition definition : this.definitions) {
			known.add(definition.name());
			known.add(definition.effectiveDeadLetterQueue());
		}
		return known;
	}

	/** Converts and validates {@code pgqueue.queues}, naming the property that is wrong. */
	static List<QueueDefinition> definitions(Map<String, PgQueueProperties.Queue> queues) {
		List<QueueDefinition> definitions = new ArrayList<>();
		queues.forEach((name, queue) -> definitions.add(PgQueuePropertiesValidator.definition(name, queue)));
		return definitions;
	}

}
