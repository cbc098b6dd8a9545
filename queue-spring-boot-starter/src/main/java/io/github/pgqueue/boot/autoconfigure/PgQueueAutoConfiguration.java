package io.github.pgqueue.boot.autoconfigure;

import java.util.LinkedHashMap;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;

import javax.sql.DataSource;

import io.github.pgqueue.JacksonPayloadConverter;
import io.github.pgqueue.JaxbPayloadConverter;
import io.github.pgqueue.PayloadConverter;
import io.github.pgqueue.MessageArchive;
import io.github.pgqueue.QueueAdmin;
import io.github.pgqueue.QueueContext;
import io.github.pgqueue.QueueTemplate;
import io.github.pgqueue.ScheduleRunner;
import io.github.pgqueue.annotation.QueueListenerAnnotationBeanPostProcessor;
import io.github.pgqueue.annotation.QueueListenerDefaults;
import io.github.pgqueue.listener.QueueListenerContainerCustomizer;
import io.github.pgqueue.listener.QueueListenerEndpointRegistry;
import io.github.pgqueue.observation.QueueProcessObservationConvention;
import io.github.pgqueue.observation.QueueSendObservationConvention;
import io.micrometer.core.instrument.MeterRegistry;
import io.micrometer.core.instrument.composite.CompositeMeterRegistry;
import io.micrometer.observation.ObservationRegistry;
import tools.jackson.databind.json.JsonMapper;

import org.springframework.beans.factory.ObjectProvider;
import org.springframework.transaction.PlatformTransactionManager;
import org.springframework.boot.actuate.autoconfigure.endpoint.condition.ConditionalOnAvailableEndpoint;
import org.springframework.boot.actuate.endpoint.annotation.Endpoint;
import org.springframework.boot.autoconfigure.AutoConfiguration;
import org.springframework.boot.LazyInitializationExcludeFilter;
import org.springframework.boot.autoconfigure.condition.AnyNestedCondition;
import org.springframework.boot.autoconfigure.condition.ConditionalOnBean;
import org.springframework.boot.autoconfigure.condition.ConditionalOnSingleCandidate;
import org.springframework.boot.autoconfigure.condition.SearchStrategy;
import org.springframework.boot.autoconfigure.condition.ConditionalOnBooleanProperty;
import org.springframework.boot.autoconfigure.condition.ConditionalOnClass;
import org.springframework.boot.autoconfigure.condition.ConditionalOnMissingBean;
import org.springframework.boot.autoconfigure.condition.ConditionalOnMissingClass;
import org.springframework.boot.context.properties.EnableConfigurationProperties;
import org.springframework.boot.health.autoconfigure.contributor.ConditionalOnEnabledHealthIndicator;
import org.springframework.boot.health.contributor.HealthIndicator;
import org.springframework.boot.jdbc.autoconfigure.DataSourceAutoConfiguration;
import org.springframework.boot.thread.Threading;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Conditional;
import org.springframework.context.annotation.Configuration;
import org.springframework.core.env.Environment;
import org.springframework.jdbc.core.JdbcTemplate;

/**
 * Auto-configuration of pgqueue: migrates its schema, writes the queues of
 * {@code pgqueue.queues}, and provides the {@link QueueTemplate} and the {@code @QueueListener}
 * machinery. Backs off without a {@link DataSource}; off with {@code pgqueue.enabled=false}.
 * Observations ({@code pgqueue.template.observation-enabled},
 * {@code pgqueue.listener.observation-enabled}) are recorded in the context's
 * {@link ObservationRegistry}, with a {@link QueueSendObservationConvention} or
 * {@link QueueProcessObservationConvention} bean replacing the default conventions.
 */
// After Boot's metrics auto-configuration (as Boot's own DataSource pool metrics are), so that the
// MeterRegistry it defines is there when MetricsConfiguration's @ConditionalOnBean is evaluated.
@AutoConfiguration(after = DataSourceAutoConfiguration.class,
		afterName = { "org.springframework.boot.flyway.autoconfigure.FlywayAutoConfiguration",
				"org.springframework.boot.micrometer.metrics.autoconfigure.CompositeMeterRegistryAutoConfiguration" })
@ConditionalOnClass({ QueueTemplate.class, JdbcTemplate.class })
@Conditional(PgQueueAutoConfiguration.PgQueueDataSourceCondition.class)
@ConditionalOnBooleanProperty(name = "pgqueue.enabled", matchIfMissing = true)
@EnableConfigurationProperties(PgQueueProperties.class)
public final class PgQueueAutoConfiguration {

	/** What the template, the admin and the listener containers share. */
	@Bean
	@ConditionalOnMissingBean
	QueueContext pgQueueContext(@PgQueueDataSource ObjectProvider<DataSource> pgQueueDataSource,
			ObjectProvider<DataSource> dataSource, PgQueueProperties properties, PayloadConverter converter,
			ObjectProvider<MeterRegistry> meterRegistry, ObjectProvider<ObservationRegistry> observationRegistry) {
		PgQueuePropertiesValidator.validate(properties);
		return QueueContext.builder(dataSource(pgQueueDataSource, dataSource))
			.schema(properties.getSchema())
			.lockNamespace(properties.getLockNamespace())
			.maxPayloadBytes((int) Math.min(Integer.MAX_VALUE, properties.getMaxPayloadSize().toBytes()))
			.payloadConverter(converter)
			.meterRegistry(meterRegistry.getIfAvailable(CompositeMeterRegistry::new))
			.observationRegistry(observationRegistry.getIfUnique(() -> ObservationRegistry.NOOP))
			.build();
	}

	@Bean
	@ConditionalOnMissingBean
	QueueTemplate queueTemplate(QueueContext pgQueueContext, PgQueueProperties properties,
			ObjectProvider<QueueSendObservationConvention> sendObservationConvention) {
		return QueueTemplate.builder(pgQueueContext)
			.observationEnabled(properties.getTemplate().isObservationEnabled())
			.observationConvention(sendObservationConvention.getIfUnique())
			.build();
	}

	/** Queue administration at runtime: declare, create, alter, drop, purge, pause and resume queues. */
	@Bean
	@ConditionalOnMissingBean
	QueueAdmin queueAdmin(QueueContext pgQueueContext, PgQueueSchemaInitializer schema) {
		return new QueueAdmin(pgQueueContext);
	}

	/** The archive of the queues with a retention: search it, send a message of it again. */
	@Bean
	@ConditionalOnMissingBean
	MessageArchive messageArchive(QueueContext pgQueueContext, PgQueueSchemaInitializer schema) {
		return new MessageArchive(pgQueueContext);
	}

	/**
	 * This JVM's scheduler: sends the ticks of the schedules, each once among every JVM that runs
	 * one (off with {@code pgqueue.scheduler.enabled=false}).
	 */
	@Bean
	@ConditionalOnMissingBean
	@ConditionalOnBooleanProperty(name = "pgqueue.scheduler.enabled", matchIfMissing = true)
	ScheduleRunner pgQueueScheduleRunner(QueueTemplate queueTemplate, PgQueueSchemaInitializer schema) {
		return new ScheduleRunner(queueTemplate);
	}

	/** Each context declares its own queues (a child context's too). */
	@Bean
	@ConditionalOnMissingBean(search = SearchStrategy.CURRENT)
	PgQueueSchemaInitializer pgQueueSchemaInitializer(@PgQueueDataSource ObjectProvider<DataSource> pgQueueDataSource,
			ObjectProvider<DataSource> dataSource, PgQueueProperties properties, Environment environment) {
		PgQueuePropertiesValidator.checkQueueKeys(environment);
		PgQueuePropertiesValidator.checkScheduleKeys(environment);
		return new PgQueueSchemaInitializer(dataSource(pgQueueDataSource, dataSource), properties);
	}

	@Bean
	ListenerConnections pgQueueListenerConnections(@PgQueueDataSource ObjectProvider<DataSource> pgQueueDataSource,
			ObjectProvider<DataSource> dataSource, PgQueueProperties properties) {
		return new ListenerConnections(dataSource(pgQueueDataSource, dataSource),
				properties.getListener().isDedicatedPool(), properties.getListener().getJdbcUrl());
	}

	/** The {@link PgQueueDataSource} if there is one, else the single or primary DataSource. */
	private static DataSource dataSource(ObjectProvider<DataSource> pgQueueDataSource,
			ObjectProvider<DataSource> dataSource) {
		return pgQueueDataSource.getIfAvailable(dataSource::getObject);
	}

	/**
	 * Keeps {@code @QueueListener} beans out of lazy initialization (as Boot does for
	 * {@code @Scheduled}): a listener bean nobody injects would otherwise never be created, and
	 * its queue never consumed.
	 */
	@Bean
	static LazyInitializationExcludeFilter pgQueueListenerLazyInitializationExcludeFilter() {
		return (beanName, beanDefinition, beanType) -> QueueListenerAnnotationBeanPostProcessor
			.hasListenerMethods(beanType);
	}

	/**
	 * Each context its own registry: one in a child context does not reuse its parent's. Every
	 * {@link QueueListenerContainerCustomizer} bean is applied to every container, in order; the
	 * pollers run on virtual threads when {@code spring.threads.virtual.enabled} is set on Java 21+.
	 */
	@Bean
	@ConditionalOnMissingBean(search = SearchStrategy.CURRENT)
	QueueListenerEndpointRegistry pgQueueListenerEndpointRegistry(QueueContext pgQueueContext, QueueAdmin queueAdmin,
			ListenerConnections connections, PgQueueProperties properties, PgQueueSchemaInitializer schema,
			ObjectProvider<PlatformTransactionManager> transactionManagers,
			ObjectProvider<QueueListenerContainerCustomizer> customizers, Environment environment,
			ObjectProvider<QueueProcessObservationConvention> processObservationConvention) {
		PgQueueListenerEndpointRegistry registry = new PgQueueListenerEndpointRegistry(pgQueueContext, connections,
				properties.getListener().getShutdownTimeout(), transactionManagers, () -> knownQueues(schema, queueAdmin));
		List<QueueListenerContainerCustomizer> ordered = customizers.orderedStream().toList();
		registry.setContainerCustomizer((container) -> ordered.forEach((customizer) -> customizer.customize(container)));
		registry.setVirtualThreads(Threading.VIRTUAL.isActive(environment));
		registry.setObservationConvention(processObservationConvention.getIfUnique());
		return registry;
	}

	@Bean
	@ConditionalOnMissingBean(search = SearchStrategy.CURRENT)
	QueueListenerDefaults pgQueueListenerDefaults(PgQueueProperties properties, PgQueueSchemaInitializer schema,
			QueueAdmin queueAdmin) {
		PgQueueProperties.Listener listener = properties.getListener();
		Map<String, QueueListenerDefaults.Consumption> queues = new LinkedHashMap<>();
		properties.getQueues().forEach((name, queue) -> queues.put(name,
				new QueueListenerDefaults.Consumption(queue.getMode(), queue.getTransactionTimeout())));
		return new QueueListenerDefaults(listener.getConcurrency(), listener.getBatchSize(),
				listener.getPollInterval(), () -> knownQueues(schema, queueAdmin), queues,
				listener.isObservationEnabled());
	}

	/**
	 * The queues listeners may consume now: those of {@code pgqueue.queues}, those in the database
	 * (created at runtime too), and their dead-letter queues.
	 */
	private static Set<String> knownQueues(PgQueueSchemaInitializer schema, QueueAdmin queueAdmin) {
		Set<String> known = new LinkedHashSet<>(schema.knownQueues());
		known.addAll(queueAdmin.declaredQueues());
		return known;
	}

	@Bean
	static QueueListenerAnnotationBeanPostProcessor pgQueueListenerAnnotationBeanPostProcessor() {
		return new QueueListenerAnnotationBeanPostProcessor();
	}

	/** JSON bodies with the context's {@link JsonMapper}, if there is one. */
	private static JacksonPayloadConverter jsonConverter(ObjectProvider<JsonMapper> jsonMapper) {
		JsonMapper mapper = jsonMapper.getIfAvailable();
		return (mapper != null) ? new JacksonPayloadConverter(mapper) : new JacksonPayloadConverter();
	}

	/** With JAXB on the classpath, XML bodies for {@code @XmlRootElement} classes, JSON for the rest. */
	@Configuration(proxyBeanMethods = false)
	@ConditionalOnClass(name = "jakarta.xml.bind.JAXBContext")
	static class JaxbPayloadConverterConfiguration {

		@Bean
		@ConditionalOnMissingBean
		PayloadConverter pgQueuePayloadConverter(ObjectProvider<JsonMapper> jsonMapper) {
			return new JaxbPayloadConverter(jsonConverter(jsonMapper));
		}

	}

	/** Without JAXB, JSON bodies (and text ones for {@code String} payloads). */
	@Configuration(proxyBeanMethods = false)
	@ConditionalOnMissingClass("jakarta.xml.bind.JAXBContext")
	static class JsonPayloadConverterConfiguration {

		@Bean
		@ConditionalOnMissingBean
		PayloadConverter pgQueuePayloadConverter(ObjectProvider<JsonMapper> jsonMapper) {
			return jsonConverter(jsonMapper);
		}

	}

	@Configuration(proxyBeanMethods = false)
	@ConditionalOnClass(MeterRegistry.class)
	@ConditionalOnBean(MeterRegistry.class)
	static class MetricsConfiguration {

		@Bean
		QueueMetrics pgQueueMetrics(QueueTemplate queueTemplate, PgQueueProperties properties) {
			List<String> queues = properties.getQueues().keySet().stream().toList();
			Set<String> withDeadLetters = new LinkedHashSet<>(queues);
			Set<String> keyLimited = new LinkedHashSet<>();
			PgQueueSchemaInitializer.definitions(properties.getQueues()).forEach((definition) -> {
				withDeadLetters.add(definition.effectiveDeadLetterQueue());
				if (definition.concurrencyKey() != null && definition.concurrencyKey().maxInFlight() != null) {
					keyLimited.add(definition.name());
				}
			});
			return new QueueMetrics(queueTemplate, withDeadLetters, keyLimited);
		}

	}

	@Configuration(proxyBeanMethods = false)
	@ConditionalOnClass(HealthIndicator.class)
	@ConditionalOnEnabledHealthIndicator("pgqueue")
	static class HealthConfiguration {

		// Named so that the indicator is "pgqueue", as management.health.pgqueue.enabled says.
		@Bean
		@ConditionalOnMissingBean(name = "pgqueueHealthIndicator")
		PgQueueHealthIndicator pgqueueHealthIndicator(QueueListenerEndpointRegistry registry) {
			return new PgQueueHealthIndicator(registry);
		}

	}

	/**
	 * Matches with a single (or primary) DataSource, as Boot's own JDBC auto-configuration, or
	 * with one marked {@link PgQueueDataSource}.
	 */
	static final class PgQueueDataSourceCondition extends AnyNestedCondition {

		PgQueueDataSourceCondition() {
			super(ConfigurationPhase.REGISTER_BEAN);
		}

		@ConditionalOnSingleCandidate(DataSource.class)
		static class SingleDataSource {

		}

		@ConditionalOnBean(annotation = PgQueueDataSource.class)
		static class MarkedDataSource {

		}

	}

	/**
	 * The {@code pgqueue} actuator endpoint, when Actuator is present and the endpoint is available,
	 * with its web extension (a refused write answers 400 saying why).
	 */
	@Configuration(proxyBeanMethods = false)
	@ConditionalOnClass(Endpoint.class)
	static class EndpointConfiguration {

		@Bean
		@ConditionalOnMissingBean
		@ConditionalOnAvailableEndpoint
		PgQueueEndpoint pgQueueEndpoint(QueueAdmin queueAdmin, QueueListenerEndpointRegistry registry,
				MessageArchive messageArchive) {
			return new PgQueueEndpoint(queueAdmin, registry, messageArchive);
		}

		@Bean
		@ConditionalOnMissingBean
		@ConditionalOnAvailableEndpoint(endpoint = PgQueueEndpoint.class)
		PgQueueEndpointWebExtension pgQueueEndpointWebExtension(PgQueueEndpoint endpoint) {
			return new PgQueueEndpointWebExtension(endpoint);
		}

	}

}
