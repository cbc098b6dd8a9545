package io.github.pgqueue.boot.autoconfigure;

import java.time.Duration;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;

import io.github.pgqueue.QueueTemplate;
import io.github.pgqueue.SendOptions;
import io.github.pgqueue.annotation.QueueListener;
import io.github.pgqueue.testing.EmbeddedPostgres;
import io.github.pgqueue.testing.PostgresExtension;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;

import org.springframework.boot.autoconfigure.AutoConfigurations;
import org.springframework.boot.jdbc.autoconfigure.DataSourceAutoConfiguration;
import org.springframework.boot.test.context.runner.ApplicationContextRunner;
import org.springframework.jdbc.core.JdbcTemplate;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

/** {@code @QueueListener(filter = ...)}: each method takes the messages its filter matches; a bad filter fails startup. */
@ExtendWith(PostgresExtension.class)
class FilteredListenerAutoConfigurationTests {

	private final EmbeddedPostgres postgres = EmbeddedPostgres.get();

	private final ApplicationContextRunner runner = new ApplicationContextRunner()
		.withConfiguration(AutoConfigurations.of(DataSourceAutoConfiguration.class, PgQueueAutoConfiguration.class))
		.withPropertyValues("spring.datasource.url=" + this.postgres.jdbcUrl(),
				"spring.datasource.username=" + this.postgres.username(), "pgqueue.listener.poll-interval=200ms",
				"pgqueue.queues.emails.max-attempts=3", "app.region=eu");

	static class Mailers {

		final List<String> welcomes = new CopyOnWriteArrayList<>();

		final List<String> resets = new CopyOnWriteArrayList<>();

		@QueueListener(queues = "emails", filter = "type = 'welcome' and region in ('${app.region}', 'us')")
		void welcome(String to) {
			this.welcomes.add(to);
		}

		@QueueListener(queues = "emails", filter = "type = 'reset'", mode = "transactional")
		void reset(String to) {
			this.resets.add(to);
		}

	}

	static class BadFilter {

		@QueueListener(queues = "emails", id = "mailer", filter = "type = welcome")
		void on(String to) {
		}

	}

	@Test
	void eachListenerTakesTheMessagesItsFilterMatches() {
		this.runner.withBean(Mailers.class).run((context) -> {
			QueueTemplate template = context.getBean(QueueTemplate.class);
			template.send("emails", "a", SendOptions.builder().header("type", "welcome").header("region", "eu").build());
			template.send("emails", "b", SendOptions.builder().header("type", "reset").build());
			template.send("emails", "c", SendOptions.builder().header("type", "welcome").header("region", "asia").build());
			template.send("emails", "d", SendOptions.builder().header("type", "welcome").header("region", "us").build());
			Mailers mailers = context.getBean(Mailers.class);
			JdbcTemplate jdbc = new JdbcTemplate(this.postgres.dataSource());
			await().atMost(Duration.ofSeconds(10))
				.until(() -> jdbc.queryForObject("SELECT count(*) FROM pgqueue.message WHERE queue = 'emails'",
						Integer.class) == 1);
			assertThat(mailers.welcomes).containsExactlyInAnyOrder("a", "d");
			assertThat(mailers.resets).containsExactly("b");
			assertThat(jdbc.queryForObject("SELECT payload #>> '{}' FROM pgqueue.message WHERE queue = 'emails'",
					String.class)).isEqualTo("c");
		});
	}

	@Test
	void aFilterThatCannotBeParsedFailsStartupNamingFilterAndListener() {
		this.runner.withBean(BadFilter.class).run((context) -> assertThat(context).hasFailed()
			.getFailure()
			.rootCause()
			.hasMessage("filter 'type = welcome' of listener 'mailer': expected a value: a string in single quotes "
					+ "or a number at position 8"));
	}

}
