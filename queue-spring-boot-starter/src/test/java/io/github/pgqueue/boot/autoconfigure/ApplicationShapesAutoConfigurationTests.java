package io.github.pgqueue.boot.autoconfigure;

import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.stream.Collectors;

import javax.sql.DataSource;

import com.zaxxer.hikari.HikariDataSource;
import io.github.pgqueue.QueueAdmin;
import io.github.pgqueue.QueueDefinition;
import io.github.pgqueue.QueueException;
import io.github.pgqueue.QueueTemplate;
import io.github.pgqueue.annotation.QueueListener;
import io.github.pgqueue.listener.QueueListenerContainer;
import io.github.pgqueue.listener.QueueListenerEndpointRegistry;
import io.github.pgqueue.testing.EmbeddedPostgres;
import io.github.pgqueue.testing.PostgresExtension;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;

import org.springframework.beans.factory.config.ConfigurableBeanFactory;
import org.springframework.boot.autoconfigure.AutoConfigurations;
import org.springframework.boot.jdbc.autoconfigure.DataSourceAutoConfiguration;
import org.springframework.boot.test.context.assertj.AssertableApplicationContext;
import org.springframework.boot.test.context.runner.ApplicationContextRunner;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Configuration;
import org.springframework.context.annotation.Lazy;
import org.springframework.context.annotation.Scope;
import org.springframework.jdbc.datasource.DataSourceTransactionManager;
import org.springframework.jdbc.datasource.SimpleDriverDataSource;
import org.springframework.transaction.support.TransactionTemplate;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.awaitility.Awaitility.await;

/**
 * Shapes of application the starter must work in, each tried in a real context on embedded
 * PostgreSQL: lazy and prototype listener beans, child contexts, DataSources that are not Hikari
 * or not alone, queue names with dots, read-only transactions.
 */
@ExtendWith(PostgresExtension.class)
class ApplicationShapesAutoConfigurationTests {

	private final EmbeddedPostgres postgres = EmbeddedPostgres.get();

	private final ApplicationContextRunner runner = new ApplicationContextRunner()
		.withConfiguration(AutoConfigurations.of(DataSourceAutoConfiguration.class, PgQueueAutoConfiguration.class))
		.withPropertyValues("spring.datasource.url=" + this.postgres.jdbcUrl(),
				"spring.datasource.username=" + this.postgres.username(), "pgqueue.queues.shapes.max-attempts=3",
				"pgqueue.listener.poll-interval=100ms");

	private static String failureMessages(AssertableApplicationContext context) {
		StringBuilder messages = new StringBuilder();
		for (Throwable t = context.getStartupFailure(); t != null; t = t.getCause()) {
			messages.append(t.getMessage()).append('\n');
		}
		return messages.toString();
	}

	@Test
	void listenerBeansAreCreatedAndStartedUnderGlobalLazyInitialization() {
		this.runner.withPropertyValues("spring.main.lazy-initialization=true")
			.withInitializer((context) -> context
				.addBeanFactoryPostProcessor(new org.springframework.boot.LazyInitializationBeanFactoryPostProcessor()))
			.withUserConfiguration(ShapesListener.class)
			.run((context) -> {
				assertThat(context.getBean(QueueListenerEndpointRegistry.class).getListenerContainers())
					.extracting((container) -> container.endpoint().id()).containsExactly("shapes-listener");
				assertDelivered(context);
			});
	}

	@Test
	void aLazyListenerBeanIsRegisteredAndStartedWhenItIsCreated() {
		this.runner.withUserConfiguration(LazyListenerConfiguration.class).run((context) -> {
			QueueListenerEndpointRegistry registry = context.getBean(QueueListenerEndpointRegistry.class);
			context.getBean(ShapesListener.class); // created late, after the registry started
			assertThat(registry.getListenerContainers()).extracting((container) -> container.endpoint().id())
				.containsExactly("shapes-listener");
			assertThat(registry.getListenerContainers()).allMatch(QueueListenerContainer::isRunning);
			assertDelivered(context);
		});
	}

	@Test
	void aPrototypeListenerBeanIsRejectedNamingTheBeanAndTheFix() {
		this.runner.withUserConfiguration(PrototypeListenerConfiguration.class)
			.run((context) -> assertThat(failureMessages(context)).contains("'prototypeListener'")
				.contains("scope 'prototype'")
				.contains("must be a singleton"));
	}

	@Test
	void aChildContextHasItsOwnRegistryAndClosingItStopsItsListeners() {
		this.runner.withUserConfiguration(ShapesListener.class).run((parent) -> {
			QueueListenerEndpointRegistry parentRegistry = parent.getBean(QueueListenerEndpointRegistry.class);
			new ApplicationContextRunner().withParent(parent)
				.withConfiguration(AutoConfigurations.of(PgQueueAutoConfiguration.class))
				.withPropertyValues("pgqueue.queues.child-queue.max-attempts=3")
				.withUserConfiguration(ChildListener.class)
				.run((child) -> {
					QueueListenerEndpointRegistry childRegistry = child.getBeanFactory()
						.getBean("pgQueueListenerEndpointRegistry", QueueListenerEndpointRegistry.class);
					assertThat(childRegistry).isNotSameAs(parentRegistry);
					assertThat(childRegistry.getListenerContainers()).extracting((c) -> c.endpoint().id())
						.containsExactly("child-listener");
					assertThat(parentRegistry.getListenerContainers()).extracting((c) -> c.endpoint().id())
						.containsExactly("shapes-listener");
					child.getBean(QueueTemplate.class).send("child-queue", "for the child");
					ChildListener listener = child.getBean(ChildListener.class);
					await().atMost(Duration.ofSeconds(10)).until(() -> listener.received.size() == 1);
					child.close();
					assertThat(childRegistry.getListenerContainers()).noneMatch(QueueListenerContainer::isRunning);
					assertThat(parentRegistry.isRunning()).isTrue();
				});
			assertDelivered(parent);
		});
	}

	@Test
	void aProducerOnlyApplicationStartsOnASimpleDriverDataSource() {
		new ApplicationContextRunner().withConfiguration(AutoConfigurations.of(PgQueueAutoConfiguration.class))
			.withBean(DataSource.class, this::simpleDriverDataSource)
			.withPropertyValues("pgqueue.queues.shapes.max-attempts=3")
			.run((context) -> {
				assertThat(context).hasNotFailed();
				assertThat(context.getBean(QueueTemplate.class).send("shapes", "sent")).isPositive();
			});
	}

	@Test
	void listenersOnASimpleDriverDataSourceTakeTheirConnectionsFromIt() {
		new ApplicationContextRunner().withConfiguration(AutoConfigurations.of(PgQueueAutoConfiguration.class))
			.withBean(DataSource.class, this::simpleDriverDataSource)
			.withPropertyValues("pgqueue.queues.shapes.max-attempts=3", "pgqueue.listener.poll-interval=100ms")
			.withUserConfiguration(ShapesListener.class)
			.run(ApplicationShapesAutoConfigurationTests::assertDelivered);
	}

	@Test
	void theDedicatedPoolCarriesOverTheApplicationPoolsSettings() {
		this.runner.withPropertyValues("spring.datasource.hikari.connection-init-sql=SET application_name = 'init-sql-ran'",
				"spring.datasource.hikari.connection-timeout=4321")
			.withUserConfiguration(ShapesListener.class)
			.run((context) -> {
				assertDelivered(context);
				HikariDataSource pool = context.getBean(ListenerConnections.class).dataSource()
					.unwrap(HikariDataSource.class);
				assertThat(pool.getPoolName()).isEqualTo("pgqueue-listeners");
				assertThat(pool.getConnectionTimeout()).isEqualTo(4321);
				assertThat(pool.getConnectionInitSql()).contains("init-sql-ran");
			});
	}

	@Test
	void twoDataSourcesWithoutAPrimaryMakeTheStarterBackOffAsBootsOwnJdbcDoes() {
		new ApplicationContextRunner().withConfiguration(AutoConfigurations.of(PgQueueAutoConfiguration.class))
			.withBean("first", DataSource.class, this::simpleDriverDataSource)
			.withBean("second", DataSource.class, this::simpleDriverDataSource)
			.run((context) -> assertThat(context).hasNotFailed().doesNotHaveBean(QueueTemplate.class));
	}

	@Test
	void thePgQueueDataSourceQualifierChoosesAmongSeveral() {
		new ApplicationContextRunner().withConfiguration(AutoConfigurations.of(PgQueueAutoConfiguration.class))
			.withUserConfiguration(TwoDataSources.class)
			.withPropertyValues("pgqueue.queues.shapes.max-attempts=3")
			.run((context) -> {
				assertThat(context).hasNotFailed();
				QueueTemplate template = context.getBean(QueueTemplate.class);
				assertThat(template.context().dataSource()).isSameAs(context.getBean("queueDatabase"));
				assertThat(template.send("shapes", "x")).isPositive();
			});
	}

	@Test
	void aQueueNameWithDotsOutsideBracketsFailsStartupSayingHowToWriteIt() {
		this.runner.withPropertyValues("pgqueue.queues.orders.created.max-attempts=7")
			.run((context) -> assertThat(failureMessages(context))
				.contains("pgqueue.queues.orders.created.max-attempts")
				.contains("pgqueue.queues[orders.created].max-attempts"));
		this.runner.withPropertyValues("pgqueue.queues[orders.created].max-attempts=7")
			.run((context) -> assertThat(new QueueAdmin(context.getBean(QueueTemplate.class).context()).declaredQueues())
				.contains("orders.created"));
	}

	/**
	 * Spring Boot binds a property written in camel case or with underscores as it binds the dashed
	 * form; so must the check of queue keys, and its hint for a name with dots.
	 */
	@Test
	void queuePropertiesBindInEveryFormSpringBootAccepts() {
		this.runner
			.withPropertyValues("pgqueue.queues.camel.maxAttempts=7", "pgqueue.queues.camel.backoff.initial=2s",
					"pgqueue.queues.camel.deadLetterQueue=camel-dead", "pgqueue.queues.camel-dead.max_attempts=4")
			.run((context) -> {
				assertThat(context).hasNotFailed();
				Map<String, QueueDefinition> queues = new QueueAdmin(context.getBean(QueueTemplate.class).context()).list()
					.stream()
					.collect(Collectors.toMap((info) -> info.definition().name(), QueueAdmin.QueueInfo::definition));
				assertThat(queues.get("camel").maxAttempts()).isEqualTo(7);
				assertThat(queues.get("camel").backoffInitial()).isEqualTo(Duration.ofSeconds(2));
				assertThat(queues.get("camel").deadLetterQueue()).isEqualTo("camel-dead");
				assertThat(queues.get("camel-dead").maxAttempts()).isEqualTo(4);
			});
		this.runner.withPropertyValues("pgqueue.queues.orders.created.maxAttempts=7")
			.run((context) -> assertThat(failureMessages(context))
				.contains("pgqueue.queues[orders.created].maxAttempts"));
	}

	@Test
	void aSendInAReadOnlyTransactionFailsSayingSo() {
		this.runner.run((context) -> {
			QueueTemplate template = context.getBean(QueueTemplate.class);
			TransactionTemplate readOnly = new TransactionTemplate(
					new DataSourceTransactionManager(context.getBean(DataSource.class)));
			readOnly.setReadOnly(true);
			assertThatThrownBy(() -> readOnly.executeWithoutResult((status) -> template.send("shapes", "x")))
				.isInstanceOf(QueueException.class)
				.hasMessage("Cannot send to 'shapes' in a read-only transaction (for example "
						+ "@Transactional(readOnly = true)); send from a read-write transaction");
		});
	}

	@Test
	void theHealthIndicatorIsNamedAsItsSwitch() {
		this.runner.run((context) -> assertThat(context).hasBean("pgqueueHealthIndicator"));
		this.runner.withPropertyValues("management.health.pgqueue.enabled=false")
			.run((context) -> assertThat(context).doesNotHaveBean(PgQueueHealthIndicator.class));
	}

	private DataSource simpleDriverDataSource() {
		return new SimpleDriverDataSource(new org.postgresql.Driver(), this.postgres.jdbcUrl(),
				this.postgres.username(), "");
	}

	private static void assertDelivered(AssertableApplicationContext context) {
		assertThat(context).hasNotFailed();
		long id = context.getBean(QueueTemplate.class).send("shapes", "hello");
		ShapesListener listener = context.getBean(ShapesListener.class);
		await().atMost(Duration.ofSeconds(10)).until(() -> listener.received.contains(id));
	}

	static class ShapesListener {

		final List<Long> received = new CopyOnWriteArrayList<>();

		@QueueListener(id = "shapes-listener", queues = "shapes")
		void on(io.github.pgqueue.QueueMessage<String> message) {
			this.received.add(message.id());
		}

	}

	static class ChildListener {

		final List<String> received = new CopyOnWriteArrayList<>();

		@QueueListener(id = "child-listener", queues = "child-queue")
		void on(String payload) {
			this.received.add(payload);
		}

	}

	@Configuration(proxyBeanMethods = false)
	static class LazyListenerConfiguration {

		@Bean
		@Lazy
		ShapesListener shapesListener() {
			return new ShapesListener();
		}

	}

	@Configuration(proxyBeanMethods = false)
	static class PrototypeListenerConfiguration {

		@Bean
		@Scope(ConfigurableBeanFactory.SCOPE_PROTOTYPE)
		ShapesListener prototypeListener() {
			return new ShapesListener();
		}

		@Bean
		Object firstUser(ShapesListener listener) {
			return listener;
		}

	}

	@Configuration(proxyBeanMethods = false)
	static class TwoDataSources {

		@Bean
		DataSource applicationDatabase() {
			return new SimpleDriverDataSource(new org.postgresql.Driver(), "jdbc:postgresql://localhost:1/nowhere");
		}

		@Bean
		@PgQueueDataSource
		DataSource queueDatabase() {
			EmbeddedPostgres postgres = EmbeddedPostgres.get();
			return new SimpleDriverDataSource(new org.postgresql.Driver(), postgres.jdbcUrl(), postgres.username(), "");
		}

	}

}
