package io.github.pgqueue.boot.autoconfigure;

import io.github.pgqueue.QueueTemplate;
import io.github.pgqueue.testing.EmbeddedPostgres;
import io.github.pgqueue.testing.PostgresExtension;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;

import org.springframework.boot.autoconfigure.AutoConfigurations;
import org.springframework.boot.jdbc.autoconfigure.DataSourceAutoConfiguration;
import org.springframework.boot.test.context.runner.ApplicationContextRunner;
import org.springframework.jdbc.core.JdbcTemplate;

import static org.assertj.core.api.Assertions.assertThat;

/** The lock namespace is fixed in the schema when it is created; a process that disagrees does not start. */
@ExtendWith(PostgresExtension.class)
class PgQueueSchemaInitializerTests {

	private final EmbeddedPostgres postgres = EmbeddedPostgres.get();

	private final ApplicationContextRunner runner = new ApplicationContextRunner()
		.withConfiguration(AutoConfigurations.of(DataSourceAutoConfiguration.class, PgQueueAutoConfiguration.class))
		.withPropertyValues("spring.datasource.url=" + this.postgres.jdbcUrl(),
				"spring.datasource.username=" + this.postgres.username());

	@Test
	void aConfiguredLockNamespaceIsStoredWhenTheSchemaIsCreatedAndUsedByEveryProcess() {
		this.runner.withPropertyValues("pgqueue.schema=pgqueue_configured_ns", "pgqueue.lock-namespace=4243")
			.run((context) -> assertThat(context.getBean(QueueTemplate.class).context().lockNamespace()).isEqualTo(4243));
		this.runner.withPropertyValues("pgqueue.schema=pgqueue_configured_ns")
			.run((context) -> assertThat(context.getBean(QueueTemplate.class).context().lockNamespace())
				.as("a process without the setting reads it from the schema").isEqualTo(4243));
	}

	@Test
	void aLockNamespaceThatDisagreesWithTheSchemasFailsStartupNamingBoth() {
		int stored = new JdbcTemplate(this.postgres.dataSource())
			.queryForObject("SELECT lock_namespace FROM pgqueue.setting", Integer.class);
		this.runner.withPropertyValues("pgqueue.lock-namespace=4242").run((context) -> {
			assertThat(context).hasFailed();
			assertThat(context.getStartupFailure()).rootCause()
				.hasMessageContaining("pgqueue.lock-namespace is 4242")
				.hasMessageContaining("created with lock namespace " + stored);
		});
	}

}
