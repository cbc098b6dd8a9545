package io.github.pgqueue.boot.autoconfigure;

import java.time.Duration;
import java.util.List;
import java.util.Map;

import javax.sql.DataSource;

import io.github.pgqueue.ConsumptionMode;
import io.github.pgqueue.QueueMessage;
import io.github.pgqueue.QueueTemplate;
import io.github.pgqueue.annotation.QueueListener;
import io.github.pgqueue.listener.QueueListenerEndpointRegistry;
import io.github.pgqueue.testing.EmbeddedPostgres;
import io.github.pgqueue.testing.PostgresExtension;
import jakarta.persistence.Entity;
import jakarta.persistence.EntityManager;
import jakarta.persistence.EntityManagerFactory;
import jakarta.persistence.Id;
import jakarta.persistence.PersistenceContext;
import jakarta.persistence.Table;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;

import org.springframework.boot.autoconfigure.AutoConfigurations;
import org.springframework.boot.jdbc.autoconfigure.DataSourceAutoConfiguration;
import org.springframework.boot.jdbc.autoconfigure.DataSourceTransactionManagerAutoConfiguration;
import org.springframework.boot.test.context.runner.ApplicationContextRunner;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Configuration;
import org.springframework.jdbc.core.JdbcTemplate;
import org.springframework.jdbc.support.JdbcTransactionManager;
import org.springframework.orm.jpa.JpaTransactionManager;
import org.springframework.orm.jpa.LocalContainerEntityManagerFactoryBean;
import org.springframework.orm.jpa.support.PersistenceAnnotationBeanPostProcessor;
import org.springframework.orm.jpa.vendor.HibernateJpaVendorAdapter;

import static io.github.pgqueue.testing.Db.count;
import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

/**
 * {@code mode: transactional} from {@code application.yml} and {@code @QueueListener}: a handler's
 * writes through {@code JdbcTemplate} or JPA commit with its message's removal, or not at all.
 */
@ExtendWith(PostgresExtension.class)
class TransactionalListenerIntegrationTests {

	private final EmbeddedPostgres postgres = EmbeddedPostgres.get();

	private final JdbcTemplate jdbc = new JdbcTemplate(this.postgres.dataSource());

	private final ApplicationContextRunner runner = new ApplicationContextRunner()
		.withConfiguration(AutoConfigurations.of(DataSourceAutoConfiguration.class,
				DataSourceTransactionManagerAutoConfiguration.class, PgQueueAutoConfiguration.class))
		.withPropertyValues("spring.datasource.url=" + this.postgres.jdbcUrl(),
				"spring.datasource.username=" + this.postgres.username(), "pgqueue.queues.payments.mode=transactional",
				"pgqueue.queues.payments.max-attempts=2", "pgqueue.queues.payments.backoff.initial=10ms",
				"pgqueue.queues.audit.max-attempts=2", "pgqueue.listener.poll-interval=100ms");

	@BeforeEach
	@AfterEach
	void table() {
		this.jdbc.execute("DROP TABLE IF EXISTS payment");
		this.jdbc.execute("CREATE TABLE payment (amount int PRIMARY KEY)");
	}

	static class Payments {

		private final JdbcTemplate jdbc;

		Payments(DataSource dataSource) {
			this.jdbc = new JdbcTemplate(dataSource);
		}

		@QueueListener(queues = "payments")
		void pay(int amount) {
			this.jdbc.update("INSERT INTO payment (amount) VALUES (?)", amount);
			if (amount < 0) {
				throw new IllegalStateException("refunds are not payments");
			}
		}

	}

	@Test
	void aQueueConfiguredTransactionalCommitsTheHandlersWritesWithTheMessage() {
		this.runner.withBean(Payments.class).run((context) -> {
			assertThat(context.getBean(QueueListenerEndpointRegistry.class).getListenerContainers())
				.singleElement().satisfies((container) -> assertThat(container.endpoint().containerProperties().mode())
					.isEqualTo(ConsumptionMode.TRANSACTIONAL));
			QueueTemplate queues = context.getBean(QueueTemplate.class);
			queues.sendBatch("payments", List.of(10, 20, -5, 30));
			await().atMost(Duration.ofSeconds(20)).until(() -> count("payments") == 0);
			assertThat(this.jdbc.queryForList("SELECT amount FROM payment ORDER BY amount", Integer.class))
				.as("the failing handler's insert was rolled back, twice").containsExactly(10, 20, 30);
			assertThat(count("payments.dlq")).isEqualTo(1);
		});
	}

	static class Audit {

		@PersistenceContext
		private EntityManager entities;

		@QueueListener(queues = "audit", mode = "${audit.mode:transactional}", transactionTimeout = "5s")
		void record(QueueMessage<String> message) {
			this.entities.persist(new AuditEntry(message.id(), message.payload()));
			this.entities.flush();
			if (message.payload().startsWith("bad")) {
				throw new IllegalArgumentException("bad entry");
			}
		}

	}

	@Test
	void aJpaHandlerJoinsTheTransactionOfTheJpaTransactionManager() {
		this.runner.withUserConfiguration(Jpa.class).withBean(Audit.class).run((context) -> {
			assertThat(context.getBean(QueueListenerEndpointRegistry.class).getListenerContainers())
				.singleElement().satisfies((container) -> {
					assertThat(container.endpoint().containerProperties().mode()).isEqualTo(ConsumptionMode.TRANSACTIONAL);
					assertThat(container.endpoint().containerProperties().transactionTimeout()).isEqualTo(Duration.ofSeconds(5));
				});
			QueueTemplate queues = context.getBean(QueueTemplate.class);
			long good = queues.send("audit", "login");
			long bad = queues.send("audit", "bad login");
			await().atMost(Duration.ofSeconds(20)).until(() -> count("audit") == 0);
			assertThat(this.jdbc.queryForList("SELECT id FROM audit_entry", Long.class))
				.as(() -> "dead letters: " + this.jdbc.queryForList("SELECT id, last_error FROM pgqueue.message"))
				.containsExactly(good);
			assertThat(this.jdbc.queryForObject("SELECT queue FROM pgqueue.message WHERE id = ?", String.class, bad))
				.isEqualTo("audit.dlq");
			this.jdbc.execute("DROP TABLE audit_entry");
		});
	}

	static class Configurable {

		@QueueListener(queues = "audit", mode = "${audit.mode}")
		void record(String entry) {
		}

	}

	@Test
	void anUnknownModeFailsStartupNamingTheListener() {
		this.runner.withBean(Configurable.class).withPropertyValues("audit.mode=exactly-once").run((context) -> {
			assertThat(context).hasFailed();
			assertThat(context.getStartupFailure())
				.hasMessageContaining("Configurable.record")
				.hasMessageContaining("mode 'exactly-once'; use session or transactional");
		});
	}

	static class Mixed {

		@QueueListener(queues = { "payments", "audit" })
		void both(String payload) {
		}

	}

	@Test
	void aListenerOnQueuesOfDifferentModesFailsStartup() {
		this.runner.withBean(Mixed.class).run((context) -> {
			assertThat(context).hasFailed();
			assertThat(context.getStartupFailure())
				.hasMessageContaining("configured with different modes")
				.hasMessageContaining("[payments, audit]");
		});
	}

	@Test
	void severalTransactionManagersWithoutAPrimaryFailStartup() {
		this.runner.withBean(Payments.class)
			.withBean("one", JdbcTransactionManager.class, () -> new JdbcTransactionManager(this.postgres.dataSource()))
			.withBean("other", JdbcTransactionManager.class, () -> new JdbcTransactionManager(this.postgres.dataSource()))
			.run((context) -> {
				assertThat(context).hasFailed();
				assertThat(context.getStartupFailure())
					.hasMessageContaining("2 PlatformTransactionManager beans and none is @Primary");
			});
	}

	@Test
	void aTransactionManagerOfAnotherDataSourceFailsStartup() {
		this.runner.withBean(Payments.class)
			.withBean("other", JdbcTransactionManager.class, () -> new JdbcTransactionManager(this.postgres.dataSource()))
			.run((context) -> {
				assertThat(context).hasFailed();
				assertThat(context.getStartupFailure())
					.hasMessageContaining("manages another DataSource than pgqueue's");
			});
	}

	@Entity
	@Table(name = "audit_entry")
	static class AuditEntry {

		@Id
		private Long id;

		private String text;

		protected AuditEntry() {
		}

		AuditEntry(Long id, String text) {
			this.id = id;
			this.text = text;
		}

	}

	@Configuration(proxyBeanMethods = false)
	static class Jpa {

		@Bean
		static PersistenceAnnotationBeanPostProcessor persistenceAnnotationBeanPostProcessor() {
			return new PersistenceAnnotationBeanPostProcessor();
		}

		@Bean
		LocalContainerEntityManagerFactoryBean entityManagerFactory(DataSource dataSource) {
			LocalContainerEntityManagerFactoryBean factory = new LocalContainerEntityManagerFactoryBean();
			factory.setDataSource(dataSource);
			factory.setJpaVendorAdapter(new HibernateJpaVendorAdapter());
			factory.setManagedTypes(org.springframework.orm.jpa.persistenceunit.PersistenceManagedTypes
				.of(AuditEntry.class.getName()));
			factory.setJpaPropertyMap(Map.of("hibernate.hbm2ddl.auto", "create"));
			return factory;
		}

		@Bean
		JpaTransactionManager transactionManager(EntityManagerFactory entityManagerFactory) {
			return new JpaTransactionManager(entityManagerFactory);
		}

	}

}
