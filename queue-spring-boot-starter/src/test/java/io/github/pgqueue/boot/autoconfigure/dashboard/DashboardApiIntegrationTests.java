package io.github.pgqueue.boot.autoconfigure.dashboard;

import java.util.ArrayList;
import java.util.List;

import io.github.pgqueue.QueueTemplate;
import io.github.pgqueue.SendOptions;
import io.github.pgqueue.annotation.QueueListener;
import io.github.pgqueue.boot.autoconfigure.PgQueueAutoConfiguration;
import io.github.pgqueue.testing.EmbeddedPostgres;
import io.github.pgqueue.testing.PostgresExtension;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;

import org.springframework.boot.autoconfigure.AutoConfigurations;
import org.springframework.boot.jdbc.autoconfigure.DataSourceAutoConfiguration;
import org.springframework.boot.test.context.runner.WebApplicationContextRunner;
import org.springframework.http.MediaType;
import org.springframework.test.web.servlet.MockMvc;
import org.springframework.test.web.servlet.request.RequestPostProcessor;
import org.springframework.test.web.servlet.setup.MockMvcBuilders;

import static org.assertj.core.api.Assertions.assertThat;
import static org.hamcrest.Matchers.contains;
import static org.hamcrest.Matchers.containsString;
import static org.hamcrest.Matchers.hasSize;
import static org.springframework.security.test.web.servlet.request.SecurityMockMvcRequestPostProcessors.csrf;
import static org.springframework.security.test.web.servlet.request.SecurityMockMvcRequestPostProcessors.user;
import static org.springframework.security.test.web.servlet.setup.SecurityMockMvcConfigurers.springSecurity;
import static org.springframework.test.web.servlet.request.MockMvcRequestBuilders.get;
import static org.springframework.test.web.servlet.request.MockMvcRequestBuilders.post;
import static org.springframework.test.web.servlet.result.MockMvcResultMatchers.jsonPath;
import static org.springframework.test.web.servlet.result.MockMvcResultMatchers.status;

/** The dashboard's JSON API on a real database: paging, and the dead-letter actions. */
@ExtendWith(PostgresExtension.class)
class DashboardApiIntegrationTests {

	private final EmbeddedPostgres postgres = EmbeddedPostgres.get();

	private final WebApplicationContextRunner runner = new WebApplicationContextRunner()
		.withConfiguration(AutoConfigurations.of(DataSourceAutoConfiguration.class, PgQueueAutoConfiguration.class,
				PgQueueDashboardAutoConfiguration.class))
		.withUserConfiguration(DashboardSecurityIntegrationTests.SecuredApplication.class)
		.withPropertyValues("spring.datasource.url=" + this.postgres.jdbcUrl(),
				"spring.datasource.username=" + this.postgres.username(), "pgqueue.dashboard.enabled=true",
				"pgqueue.dashboard.read-only=false", "pgqueue.queues.api.max-attempts=3",
				"pgqueue.queues.other.max-attempts=3", "pgqueue.queues.kept.retention=1d");

	private final RequestPostProcessor admin = user("alice").roles("PGQUEUE_ADMIN");

	@Test
	void redrivesChosenDeadLettersAllOfAQueueAndDeletesOne() {
		this.runner.run((context) -> {
			MockMvc mvc = MockMvcBuilders.webAppContextSetup(context).apply(springSecurity()).build();
			QueueTemplate queues = context.getBean(QueueTemplate.class);
			List<Long> dead = deadLetters(queues, "api", 3);
			long otherDead = deadLetters(queues, "other", 1).get(0);

			mvc.perform(get("/pgqueue/api/dead-letters").param("origin", "api").with(this.admin))
				.andExpect(status().isOk())
				.andExpect(jsonPath("$.deadLetters[*].id", contains(dead.get(2).intValue(), dead.get(1).intValue(),
						dead.get(0).intValue())))
				.andExpect(jsonPath("$.deadLetters[0].origin").value("api"))
				.andExpect(jsonPath("$.deadLetters[0].queue").value("api.dlq"))
				.andExpect(jsonPath("$.deadLetters[0].lastError", containsString("broken on purpose")));
			mvc.perform(get("/pgqueue/api/dead-letters").with(this.admin)).andExpect(jsonPath("$.deadLetters", hasSize(4)));

			mvc.perform(post("/pgqueue/api/dead-letters/redrive").with(this.admin)
				.with(csrf())
				.with(DashboardWrites.fromThePage())
				.contentType(MediaType.APPLICATION_JSON)
				.content("{\"ids\":[" + dead.get(0) + "," + dead.get(1) + "," + otherDead + "]}"))
				.andExpect(status().isOk())
				.andExpect(jsonPath("$.moved").value(3));
			assertThat(queues.stats("api").ready()).isEqualTo(2);
			assertThat(queues.stats("other").ready()).isOne();
			assertThat(queues.stats("api").deadLettered()).isOne();

			mvc.perform(post("/pgqueue/api/dead-letters/delete").param("queue", "api.dlq")
				.param("id", String.valueOf(dead.get(2)))
				.with(this.admin)
				.with(csrf())
				.with(DashboardWrites.fromThePage())).andExpect(jsonPath("$.result").value("REMOVED"));
			assertThat(queues.stats("api").deadLettered()).isZero();

			// Two new messages; the two redriven ones, oldest, are received and dead-lettered again.
			deadLetters(queues, "api", 2);
			assertThat(queues.stats("api").deadLettered()).isEqualTo(2);
			mvc.perform(post("/pgqueue/api/dead-letters/redrive").with(this.admin)
				.with(csrf())
				.with(DashboardWrites.fromThePage())
				.contentType(MediaType.APPLICATION_JSON)
				.content("{\"origin\":\"api\"}")).andExpect(jsonPath("$.moved").value(2));
			assertThat(queues.stats("api").ready()).isEqualTo(4);
			assertThat(queues.stats("api").deadLettered()).isZero();

			mvc.perform(get("/pgqueue/api/queue").param("name", "api").param("order", "oldest").param("limit", "1")
				.with(this.admin))
				.andExpect(status().isOk())
				.andExpect(jsonPath("$.total").value(4))
				.andExpect(jsonPath("$.policy.maxAttempts").value(3))
				.andExpect(jsonPath("$.policy.deadLetterQueue").value("api.dlq"))
				.andExpect(jsonPath("$.messages[*].id", contains(dead.get(0).intValue())))
				.andExpect(jsonPath("$.messages[0].payload").value("\"<i>message 0</i>\""))
				.andExpect(jsonPath("$.messages[0].attempts").value(0));
			mvc.perform(get("/pgqueue/api/queue").param("name", "not a queue").with(this.admin))
				.andExpect(status().isBadRequest());
			mvc.perform(post("/pgqueue/api/listeners/pause").param("id", "nobody")
				.with(this.admin)
				.with(csrf())
				.with(DashboardWrites.fromThePage()))
				.andExpect(status().isBadRequest())
				.andExpect(jsonPath("$.error").value("No listener with id 'nobody'"));
		});
	}

	@Test
	void showsAQueuesArchiveAndSendsAnArchivedMessageAgainOnlyFromThePage() {
		this.runner.run((context) -> {
			MockMvc mvc = MockMvcBuilders.webAppContextSetup(context).apply(springSecurity()).build();
			QueueTemplate queues = context.getBean(QueueTemplate.class);
			long kept = queues.send("kept", "keep me", io.github.pgqueue.SendOptions.builder().header("tenant", "acme").build());
			queues.send("kept", "and me");
			context.getBean(io.github.pgqueue.QueueAdmin.class).purge("kept", io.github.pgqueue.QueueAdmin.Purge.ALL);

			mvc.perform(get("/pgqueue/api/queue").param("name", "kept").with(this.admin))
				.andExpect(jsonPath("$.policy.retentionMs").value(86_400_000));
			mvc.perform(get("/pgqueue/api/archive").param("queue", "kept").with(this.admin))
				.andExpect(status().isOk())
				.andExpect(jsonPath("$.archive", hasSize(2)));
			mvc.perform(get("/pgqueue/api/archive").param("queue", "kept").param("header", "tenant").param("value", "acme")
				.with(this.admin))
				.andExpect(jsonPath("$.archive[*].id", contains((int) kept)))
				.andExpect(jsonPath("$.archive[0].outcome").value("PURGED"))
				.andExpect(jsonPath("$.archive[0].payload").value("\"keep me\""));

			mvc.perform(post("/pgqueue/api/archive/resend").param("queue", "kept").param("id", String.valueOf(kept))
				.with(this.admin)
				.with(csrf())).andExpect(status().isForbidden());
			assertThat(queues.stats("kept").ready()).as("a write not from the page is refused").isZero();
			mvc.perform(post("/pgqueue/api/archive/resend").param("queue", "kept").param("id", String.valueOf(kept))
				.with(this.admin)
				.with(csrf())
				.with(DashboardWrites.fromThePage()))
				.andExpect(status().isOk())
				.andExpect(jsonPath("$.sent").isNumber());
			assertThat(queues.stats("kept").ready()).isOne();
			mvc.perform(post("/pgqueue/api/archive/resend").param("queue", "kept").param("id", "999999")
				.with(this.admin)
				.with(csrf())
				.with(DashboardWrites.fromThePage()))
				.andExpect(status().isBadRequest())
				.andExpect(jsonPath("$.error", containsString("holds no message 999999")));
		});
	}

	@Test
	void listsSchedulesAndPausesAndResumesOne() {
		this.runner.withPropertyValues("pgqueue.scheduler.enabled=false", "pgqueue.schedules.nightly.cron=0 0 2 * * *",
				"pgqueue.schedules.nightly.zone=Europe/Paris", "pgqueue.schedules.nightly.queue=api").run((context) -> {
					MockMvc mvc = MockMvcBuilders.webAppContextSetup(context).apply(springSecurity()).build();
					mvc.perform(get("/pgqueue/api/schedules").with(this.admin))
						.andExpect(status().isOk())
						.andExpect(jsonPath("$.schedules[0].name").value("nightly"))
						.andExpect(jsonPath("$.schedules[0].cron").value("0 0 2 * * *"))
						.andExpect(jsonPath("$.schedules[0].zone").value("Europe/Paris"))
						.andExpect(jsonPath("$.schedules[0].target").value("queue api"))
						.andExpect(jsonPath("$.schedules[0].paused").value(false))
						.andExpect(jsonPath("$.schedules[0].nextFireAt", containsString("T")))
						.andExpect(jsonPath("$.schedules[0].fired").value(0));
					mvc.perform(post("/pgqueue/api/schedules/pause").param("name", "nightly")
						.with(this.admin)
						.with(csrf())
						.with(DashboardWrites.fromThePage())).andExpect(status().isOk());
					mvc.perform(get("/pgqueue/api/schedules").with(this.admin))
						.andExpect(jsonPath("$.schedules[0].paused").value(true));
					mvc.perform(post("/pgqueue/api/schedules/resume").param("name", "nightly")
						.with(this.admin)
						.with(csrf())
						.with(DashboardWrites.fromThePage())).andExpect(status().isOk());
					mvc.perform(get("/pgqueue/api/schedules").with(this.admin))
						.andExpect(jsonPath("$.schedules[0].paused").value(false));
					mvc.perform(post("/pgqueue/api/schedules/pause").param("name", "absent")
						.with(this.admin)
						.with(csrf())
						.with(DashboardWrites.fromThePage()))
						.andExpect(status().isBadRequest())
						.andExpect(jsonPath("$.error").value("Schedule 'absent' does not exist"));
					mvc.perform(post("/pgqueue/api/schedules/pause").param("name", "nightly").with(this.admin))
						.andExpect(status().isForbidden());
				});
	}

	@Test
	void showsEachQueuesRateLimitAndHowManyMessagesWaitForIt() {
		this.runner.withPropertyValues("pgqueue.queues.api.rate-limit=6000/m").run((context) -> {
			MockMvc mvc = MockMvcBuilders.webAppContextSetup(context).apply(springSecurity()).build();
			context.getBean(QueueTemplate.class).sendBatch("api", java.util.stream.IntStream.range(0, 130).boxed().toList());

			mvc.perform(get("/pgqueue/api/queues").with(this.admin))
				.andExpect(status().isOk())
				.andExpect(jsonPath("$.queues[?(@.queue == 'api')].rateLimit").value("6000/m"))
				.andExpect(jsonPath("$.queues[?(@.queue == 'api')].waitingForRateLimit").value(30))
				.andExpect(jsonPath("$.queues[?(@.queue == 'other')].rateLimit").value(org.hamcrest.Matchers.contains(
						org.hamcrest.Matchers.nullValue())))
				.andExpect(jsonPath("$.queues[?(@.queue == 'other')].waitingForRateLimit").value(0));
			mvc.perform(get("/pgqueue/api/queue").param("name", "api").with(this.admin))
				.andExpect(jsonPath("$.policy.rateLimit").value("6000/m"));
			mvc.perform(get("/pgqueue/api/queue").param("name", "other").with(this.admin))
				.andExpect(jsonPath("$.policy.rateLimit").doesNotExist());
		});
	}

	@Test
	void showsEachQueuesConcurrencyKeyItsLimitPerKeyAndHowManyMessagesWaitForIt() {
		this.runner.withPropertyValues("pgqueue.queues.api.concurrency-key=tenant",
				"pgqueue.queues.api.max-in-flight-per-key=2", "pgqueue.queues.kept.concurrency-key=region",
				"pgqueue.queues.paced.concurrency-key=tenant", "pgqueue.queues.paced.rate-limit-per-key=60/m")
			.run((context) -> {
				MockMvc mvc = MockMvcBuilders.webAppContextSetup(context).apply(springSecurity()).build();
				QueueTemplate queues = context.getBean(QueueTemplate.class);
				queues.sendBatch("api", List.of(1, 2, 3), SendOptions.builder().header("tenant", "acme").build());
				queues.sendBatch("api", List.of(4, 5), SendOptions.builder().header("tenant", "globex").build());

				mvc.perform(get("/pgqueue/api/queues").with(this.admin))
					.andExpect(status().isOk())
					.andExpect(jsonPath("$.queues[?(@.queue == 'api')].concurrencyKey").value("tenant"))
					.andExpect(jsonPath("$.queues[?(@.queue == 'api')].maxInFlightPerKey").value(2))
					.andExpect(jsonPath("$.queues[?(@.queue == 'api')].waitingForKeyLimit").value(1))
					.andExpect(jsonPath("$.queues[?(@.queue == 'kept')].waitingForKeyLimit").value(
							org.hamcrest.Matchers.contains(org.hamcrest.Matchers.nullValue())))
					.andExpect(jsonPath("$.queues[?(@.queue == 'kept')].concurrencyKey").value("region"))
					.andExpect(jsonPath("$.queues[?(@.queue == 'kept')].maxInFlightPerKey").value(
							org.hamcrest.Matchers.contains(org.hamcrest.Matchers.nullValue())))
					.andExpect(jsonPath("$.queues[?(@.queue == 'other')].concurrencyKey").value(
							org.hamcrest.Matchers.contains(org.hamcrest.Matchers.nullValue())));
				mvc.perform(get("/pgqueue/api/queue").param("name", "api").with(this.admin))
					.andExpect(jsonPath("$.policy.concurrencyKey").value("tenant"))
					.andExpect(jsonPath("$.policy.maxInFlightPerKey").value(2))
					.andExpect(jsonPath("$.waitingForKeyLimit").value(1));
				queues.sendBatch("paced", List.of(1, 2, 3), SendOptions.builder().header("tenant", "acme").build());
				mvc.perform(get("/pgqueue/api/queues").with(this.admin))
					.andExpect(jsonPath("$.queues[?(@.queue == 'paced')].rateLimitPerKey").value("60/m"))
					.andExpect(jsonPath("$.queues[?(@.queue == 'paced')].waitingForKeyLimit").value(2));
				mvc.perform(get("/pgqueue/api/queue").param("name", "paced").with(this.admin))
					.andExpect(jsonPath("$.rateLimitPerKey").value("60/m"))
					.andExpect(jsonPath("$.waitingForKeyLimit").value(2));
				mvc.perform(get("/pgqueue/api/queue").param("name", "kept").with(this.admin))
					.andExpect(jsonPath("$.policy.concurrencyKey").value("region"))
					.andExpect(jsonPath("$.policy.maxInFlightPerKey").doesNotExist())
					.andExpect(jsonPath("$.waitingForKeyLimit").doesNotExist());
				mvc.perform(get("/pgqueue/api/queue").param("name", "other").with(this.admin))
					.andExpect(jsonPath("$.policy.concurrencyKey").doesNotExist());
			});
	}

	@Test
	void aListenerStartTheRegistryRefusesIsAConflictThatSaysWhy() {
		this.runner.withUserConfiguration(LaterListener.class).run((context) -> {
			MockMvc mvc = MockMvcBuilders.webAppContextSetup(context).apply(springSecurity()).build();
			mvc.perform(post("/pgqueue/api/listeners/start").param("id", "later")
				.with(this.admin)
				.with(csrf())
				.with(DashboardWrites.fromThePage()))
				.andExpect(status().isConflict())
				.andExpect(jsonPath("$.error", containsString("queue 'later', which does not exist")));
		});
	}

	/** A listener that starts later, on a queue nobody created. */
	static class LaterListener {

		@QueueListener(id = "later", queues = "later", autoStartup = "false")
		void handle(String payload) {
		}

	}

	/** Sends n messages and dead-letters each through a lease's reject. */
	private static List<Long> deadLetters(QueueTemplate queues, String queue, int n) {
		List<Long> ids = new ArrayList<>();
		for (int i = 0; i < n; i++) {
			ids.add(queues.send(queue, "<i>message " + i + "</i>"));
		}
		for (int i = 0; i < n; i++) {
			queues.receive(queue, String.class).orElseThrow().reject("broken on purpose");
		}
		return ids;
	}

}
