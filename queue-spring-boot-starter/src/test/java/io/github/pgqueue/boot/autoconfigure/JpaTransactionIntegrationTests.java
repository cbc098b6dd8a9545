package io.github.pgqueue.boot.autoconfigure;

import java.util.Map;

import javax.sql.DataSource;

import io.github.pgqueue.QueueTemplate;
import io.github.pgqueue.testing.EmbeddedPostgres;
import io.github.pgqueue.testing.PostgresExtension;
import jakarta.persistence.Entity;
import jakarta.persistence.EntityManager;
import jakarta.persistence.EntityManagerFactory;
import jakarta.persistence.Id;
import jakarta.persistence.Table;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;

import org.springframework.boot.autoconfigure.AutoConfigurations;
import org.springframework.boot.jdbc.autoconfigure.DataSourceAutoConfiguration;
import org.springframework.boot.test.context.runner.ApplicationContextRunner;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Configuration;
import org.springframework.jdbc.core.JdbcTemplate;
import org.springframework.orm.jpa.EntityManagerFactoryUtils;
import org.springframework.orm.jpa.JpaTransactionManager;
import org.springframework.orm.jpa.LocalContainerEntityManagerFactoryBean;
import org.springframework.orm.jpa.vendor.HibernateJpaVendorAdapter;
import org.springframework.transaction.PlatformTransactionManager;
import org.springframework.transaction.support.TransactionTemplate;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatIllegalStateException;

/** A send joins the transaction of a {@link JpaTransactionManager}: it commits and rolls back with the entities. */
@ExtendWith(PostgresExtension.class)
class JpaTransactionIntegrationTests {

	private final EmbeddedPostgres postgres = EmbeddedPostgres.get();

	private final ApplicationContextRunner runner = new ApplicationContextRunner()
		.withConfiguration(AutoConfigurations.of(DataSourceAutoConfiguration.class, PgQueueAutoConfiguration.class))
		.withPropertyValues("spring.datasource.url=" + this.postgres.jdbcUrl(),
				"spring.datasource.username=" + this.postgres.username())
		.withUserConfiguration(Jpa.class);

	@Test
	void aSendCommitsAndRollsBackWithTheJpaTransaction() {
		this.runner.run((context) -> {
			TransactionTemplate transactions = new TransactionTemplate(context.getBean(PlatformTransactionManager.class));
			EntityManagerFactory factory = context.getBean(EntityManagerFactory.class);
			QueueTemplate queues = context.getBean(QueueTemplate.class);
			JdbcTemplate jdbc = new JdbcTemplate(context.getBean(DataSource.class));

			transactions.executeWithoutResult((status) -> {
				EntityManager entities = EntityManagerFactoryUtils.getTransactionalEntityManager(factory);
				entities.persist(new ShopOrder(1L));
				entities.flush();
				queues.send("orders", Map.of("order", 1));
			});
			assertThatIllegalStateException().isThrownBy(() -> transactions.executeWithoutResult((status) -> {
				EntityManager entities = EntityManagerFactoryUtils.getTransactionalEntityManager(factory);
				entities.persist(new ShopOrder(2L));
				entities.flush();
				queues.send("orders", Map.of("order", 2));
				throw new IllegalStateException("payment declined");
			}));

			assertThat(jdbc.queryForList("SELECT id FROM jpa_shop_order", Long.class)).containsExactly(1L);
			assertThat(jdbc.queryForList("SELECT payload->>'order' FROM pgqueue.message WHERE queue = 'orders'",
					String.class)).containsExactly("1");
			jdbc.execute("DROP TABLE jpa_shop_order");
		});
	}

	@Entity
	@Table(name = "jpa_shop_order")
	static class ShopOrder {

		@Id
		private Long id;

		protected ShopOrder() {
		}

		ShopOrder(Long id) {
			this.id = id;
		}

	}

	@Configuration(proxyBeanMethods = false)
	static class Jpa {

		@Bean
		LocalContainerEntityManagerFactoryBean entityManagerFactory(DataSource dataSource) {
			LocalContainerEntityManagerFactoryBean factory = new LocalContainerEntityManagerFactoryBean();
			factory.setDataSource(dataSource);
			factory.setJpaVendorAdapter(new HibernateJpaVendorAdapter());
			factory.setManagedTypes(org.springframework.orm.jpa.persistenceunit.PersistenceManagedTypes
				.of(ShopOrder.class.getName()));
			factory.setJpaPropertyMap(Map.of("hibernate.hbm2ddl.auto", "create-drop"));
			return factory;
		}

		@Bean
		JpaTransactionManager transactionManager(EntityManagerFactory entityManagerFactory) {
			return new JpaTransactionManager(entityManagerFactory);
		}

	}

}
