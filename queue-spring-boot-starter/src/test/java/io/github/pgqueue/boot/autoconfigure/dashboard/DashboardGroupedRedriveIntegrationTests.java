package io.github.pgqueue.boot.autoconfigure.dashboard;

import io.github.pgqueue.Lease;
import io.github.pgqueue.QueueTemplate;
import io.github.pgqueue.boot.autoconfigure.PgQueueAutoConfiguration;
import io.github.pgqueue.testing.EmbeddedPostgres;
import io.github.pgqueue.testing.PostgresExtension;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;

import org.springframework.boot.autoconfigure.AutoConfigurations;
import org.springframework.boot.jdbc.autoconfigure.DataSourceAutoConfiguration;
import org.springframework.boot.test.context.runner.WebApplicationContextRunner;
import org.springframework.http.MediaType;
import org.springframework.jdbc.core.JdbcTemplate;
import org.springframework.test.web.servlet.MockMvc;
import org.springframework.test.web.servlet.request.RequestPostProcessor;
import org.springframework.test.web.servlet.setup.MockMvcBuilders;

import static org.assertj.core.api.Assertions.assertThat;
import static org.springframework.security.test.web.servlet.request.SecurityMockMvcRequestPostProcessors.csrf;
import static org.springframework.security.test.web.servlet.request.SecurityMockMvcRequestPostProcessors.user;
import static org.springframework.security.test.web.servlet.setup.SecurityMockMvcConfigurers.springSecurity;
import static org.springframework.test.web.servlet.request.MockMvcRequestBuilders.post;
import static org.springframework.test.web.servlet.result.MockMvcResultMatchers.jsonPath;

/**
 * The dashboard's redrive of a chosen dead letter that is a FIFO group's middle message in its
 * dead-letter queue: the rest of that group stays behind its held head, and the redriven message
 * comes back with its id, outside any group.
 */
@ExtendWith(PostgresExtension.class)
class DashboardGroupedRedriveIntegrationTests {

	private final EmbeddedPostgres postgres = EmbeddedPostgres.get();

	private final JdbcTemplate jdbc = new JdbcTemplate(this.postgres.dataSource());

	private final WebApplicationContextRunner runner = new WebApplicationContextRunner()
		.withConfiguration(AutoConfigurations.of(DataSourceAutoConfiguration.class, PgQueueAutoConfiguration.class,
				PgQueueDashboardAutoConfiguration.class))
		.withUserConfiguration(DashboardSecurityIntegrationTests.SecuredApplication.class)
		.withPropertyValues("spring.datasource.url=" + this.postgres.jdbcUrl(),
				"spring.datasource.username=" + this.postgres.username(), "pgqueue.dashboard.enabled=true",
				"pgqueue.dashboard.read-only=false", "pgqueue.queues.api.max-attempts=3");

	private final RequestPostProcessor admin = user("alice").roles("PGQUEUE_ADMIN");

	@Test
	void redrivingAGroupsMiddleDeadLetterKeepsTheRestOfTheGroupBehindItsHead() {
		this.runner.run((context) -> {
			MockMvc mvc = MockMvcBuilders.webAppContextSetup(context).apply(springSecurity()).build();
			QueueTemplate queues = context.getBean(QueueTemplate.class);
			long first = deadLetter();
			long middle = deadLetter();
			long last = deadLetter();
			try (Lease<Object> head = queues.receive("api.dlq", Object.class).orElseThrow()) {
				assertThat(head.message().id()).isEqualTo(first);
				mvc.perform(post("/pgqueue/api/dead-letters/redrive").with(this.admin).with(csrf()).with(DashboardWrites.fromThePage())
					.contentType(MediaType.APPLICATION_JSON)
					.content("{\"ids\":[" + middle + "]}")).andExpect(jsonPath("$.moved").value(1));
				assertThat(queues.receive("api.dlq", Object.class)).as("the last one while the first is held").isEmpty();
				assertThat(this.jdbc.queryForMap("SELECT queue, group_key FROM pgqueue.message WHERE id = ?", middle))
					.containsEntry("queue", "api")
					.containsEntry("group_key", null);
				head.ack();
			}
			try (Lease<Object> next = queues.receive("api.dlq", Object.class).orElseThrow()) {
				assertThat(next.message().id()).isEqualTo(last);
				next.ack();
			}
		});
	}

	/** A dead letter of queue api in group g of api.dlq, written there by hand. */
	private long deadLetter() {
		return this.jdbc.queryForObject("INSERT INTO pgqueue.message (queue, payload, headers, group_key) "
				+ "VALUES ('api.dlq', '{}', '{\"pgqueue-dead-lettered-from\": \"api\"}', 'g') RETURNING id", Long.class);
	}

}
