package io.github.pgqueue.boot.autoconfigure.dashboard;

import io.github.pgqueue.boot.autoconfigure.PgQueueAutoConfiguration;
import io.github.pgqueue.testing.EmbeddedPostgres;
import io.github.pgqueue.testing.PostgresExtension;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;

import org.springframework.boot.autoconfigure.AutoConfigurations;
import org.springframework.boot.jdbc.autoconfigure.DataSourceAutoConfiguration;
import org.springframework.boot.test.context.FilteredClassLoader;
import org.springframework.boot.test.context.runner.ApplicationContextRunner;
import org.springframework.boot.test.context.runner.WebApplicationContextRunner;
import org.springframework.web.servlet.DispatcherServlet;

import static org.assertj.core.api.Assertions.assertThat;

/** The dashboard is opt-in, and only in a servlet web application with Spring MVC. */
@ExtendWith(PostgresExtension.class)
class PgQueueDashboardAutoConfigurationTests {

	private final EmbeddedPostgres postgres = EmbeddedPostgres.get();

	private final AutoConfigurations configurations = AutoConfigurations.of(DataSourceAutoConfiguration.class,
			PgQueueAutoConfiguration.class, PgQueueDashboardAutoConfiguration.class);

	private final WebApplicationContextRunner web = new WebApplicationContextRunner()
		.withConfiguration(this.configurations)
		.withPropertyValues("spring.datasource.url=" + this.postgres.jdbcUrl(),
				"spring.datasource.username=" + this.postgres.username());

	@Test
	void dashboardIsOffUnlessEnabled() {
		this.web.run((context) -> assertThat(context).hasNotFailed()
			.doesNotHaveBean(DashboardController.class)
			.doesNotHaveBean(ProcessedRates.class));
	}

	@Test
	void enabledDashboardIsServedInAServletApplicationReadOnlyByDefault() {
		this.web.withPropertyValues("pgqueue.dashboard.enabled=true").run((context) -> {
			assertThat(context).hasSingleBean(DashboardController.class).hasSingleBean(ProcessedRates.class);
			PgQueueDashboardProperties properties = context.getBean(PgQueueDashboardProperties.class);
			assertThat(properties.isReadOnly()).isTrue();
			assertThat(properties.getPath()).isEqualTo("/pgqueue");
			assertThat(properties.getRole()).isEqualTo("PGQUEUE_ADMIN");
		});
	}

	@Test
	void noDashboardOutsideAWebApplication() {
		new ApplicationContextRunner().withConfiguration(this.configurations)
			.withPropertyValues("spring.datasource.url=" + this.postgres.jdbcUrl(),
					"spring.datasource.username=" + this.postgres.username(), "pgqueue.dashboard.enabled=true")
			.run((context) -> assertThat(context).hasNotFailed().doesNotHaveBean(DashboardController.class));
	}

	@Test
	void noDashboardWithoutSpringMvc() {
		this.web.withPropertyValues("pgqueue.dashboard.enabled=true")
			.withClassLoader(new FilteredClassLoader(DispatcherServlet.class))
			.run((context) -> assertThat(context).hasNotFailed().doesNotHaveBean(DashboardController.class));
	}

	@Test
	void aPathEndingInASlashFailsStartupNamingTheProperty() {
		this.web.withPropertyValues("pgqueue.dashboard.enabled=true", "pgqueue.dashboard.path=/ops/queues/")
			.run((context) -> assertThat(context).hasFailed()
				.getFailure()
				.rootCause()
				.hasMessageContaining("pgqueue.dashboard.path"));
	}

}
