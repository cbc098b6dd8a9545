package io.github.pgqueue.boot.autoconfigure.dashboard;

import io.github.pgqueue.QueueTemplate;
import io.github.pgqueue.boot.autoconfigure.PgQueueAutoConfiguration;
import io.github.pgqueue.testing.EmbeddedPostgres;
import io.github.pgqueue.testing.PostgresExtension;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;

import org.springframework.boot.autoconfigure.AutoConfigurations;
import org.springframework.boot.jdbc.autoconfigure.DataSourceAutoConfiguration;
import org.springframework.boot.test.context.FilteredClassLoader;
import org.springframework.boot.test.context.runner.WebApplicationContextRunner;
import org.springframework.context.annotation.Configuration;
import org.springframework.http.MediaType;
import org.springframework.test.web.servlet.MockMvc;
import org.springframework.test.web.servlet.setup.MockMvcBuilders;
import org.springframework.web.servlet.config.annotation.EnableWebMvc;

import static org.assertj.core.api.Assertions.assertThat;
import static org.hamcrest.Matchers.containsString;
import static org.springframework.test.web.servlet.request.MockMvcRequestBuilders.get;
import static org.springframework.test.web.servlet.request.MockMvcRequestBuilders.post;
import static org.springframework.test.web.servlet.result.MockMvcResultMatchers.jsonPath;
import static org.springframework.test.web.servlet.result.MockMvcResultMatchers.status;

/**
 * The read-write dashboard in an application without Spring Security: a write must carry what a
 * page of another site cannot make a browser send (a JSON body and the dashboard's header), so a
 * forged form post changes nothing even where the browser attaches the user's credentials.
 */
@ExtendWith(PostgresExtension.class)
class DashboardWithoutSecurityIntegrationTests {

	private final EmbeddedPostgres postgres = EmbeddedPostgres.get();

	private final WebApplicationContextRunner runner = new WebApplicationContextRunner()
		.withConfiguration(AutoConfigurations.of(DataSourceAutoConfiguration.class, PgQueueAutoConfiguration.class,
				PgQueueDashboardAutoConfiguration.class))
		.withClassLoader(new FilteredClassLoader("org.springframework.security"))
		.withUserConfiguration(OpenApplication.class)
		.withPropertyValues("spring.datasource.url=" + this.postgres.jdbcUrl(),
				"spring.datasource.username=" + this.postgres.username(), "pgqueue.dashboard.enabled=true",
				"pgqueue.dashboard.read-only=false", "pgqueue.queues.open.max-attempts=3");

	@Test
	void aCrossSiteFormPostIsRefusedAndCancelsNothing() {
		this.runner.run((context) -> {
			MockMvc mvc = MockMvcBuilders.webAppContextSetup(context).build();
			QueueTemplate queues = context.getBean(QueueTemplate.class);
			long id = queues.send("open", "kept");

			// What <form method="post" action="https://app.example/pgqueue/api/queue/cancel"> sends.
			mvc.perform(post("/pgqueue/api/queue/cancel").contentType(MediaType.APPLICATION_FORM_URLENCODED)
				.content("name=open&id=" + id)).andExpect(status().isForbidden())
				.andExpect(jsonPath("$.error", containsString("X-PgQueue-Request")));
			// The same with the parameters in the form's action URL.
			mvc.perform(post("/pgqueue/api/queue/cancel").param("name", "open").param("id", String.valueOf(id))
				.contentType(MediaType.APPLICATION_FORM_URLENCODED)).andExpect(status().isForbidden());
			// A form can send text/plain that looks like JSON, never application/json nor a header of its own.
			mvc.perform(post("/pgqueue/api/queue/cancel").param("name", "open").param("id", String.valueOf(id))
				.contentType(MediaType.TEXT_PLAIN)
				.content("{}")).andExpect(status().isForbidden());
			assertThat(queues.stats("open").ready()).isOne();
		});
	}

	@Test
	void aWriteWithTheHeaderButWithoutAJsonBodyIsAnUnsupportedMediaType() {
		this.runner.run((context) -> {
			MockMvc mvc = MockMvcBuilders.webAppContextSetup(context).build();
			QueueTemplate queues = context.getBean(QueueTemplate.class);
			long id = queues.send("open", "kept");
			mvc.perform(post("/pgqueue/api/queue/cancel").param("name", "open").param("id", String.valueOf(id))
				.header("X-PgQueue-Request", "dashboard")
				.contentType(MediaType.APPLICATION_FORM_URLENCODED))
				.andExpect(status().isUnsupportedMediaType())
				.andExpect(jsonPath("$.error", containsString("application/json")));
			assertThat(queues.stats("open").ready()).isOne();
		});
	}

	@Test
	void theDashboardsOwnWriteIsServed() {
		this.runner.run((context) -> {
			MockMvc mvc = MockMvcBuilders.webAppContextSetup(context).build();
			QueueTemplate queues = context.getBean(QueueTemplate.class);
			long id = queues.send("open", "cancelled");
			mvc.perform(get("/pgqueue/api/session")).andExpect(status().isOk())
				.andExpect(jsonPath("$.user").value("anonymous"));
			mvc.perform(post("/pgqueue/api/queue/cancel").param("name", "open").param("id", String.valueOf(id))
				.with(DashboardWrites.fromThePage()))
				.andExpect(status().isOk())
				.andExpect(jsonPath("$.result").value("REMOVED"));
			assertThat(queues.stats("open").ready()).isZero();
		});
	}

	@Configuration(proxyBeanMethods = false)
	@EnableWebMvc
	static class OpenApplication {

	}

}
