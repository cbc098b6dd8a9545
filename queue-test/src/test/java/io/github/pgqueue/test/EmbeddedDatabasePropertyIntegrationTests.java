package io.github.pgqueue.test;

import java.time.Duration;

import javax.sql.DataSource;

import io.github.pgqueue.QueueOperations;
import io.github.pgqueue.test.TestApplication.Email;
import org.junit.jupiter.api.Test;

import org.springframework.beans.factory.annotation.Autowired;
import org.springframework.boot.test.context.SpringBootTest;
import org.springframework.jdbc.core.JdbcTemplate;

import static org.assertj.core.api.Assertions.assertThat;

/** The property turns the embedded database on without the annotation; the context gets a database of its own. */
@SpringBootTest(properties = EmbeddedPgQueue.PROPERTY + "=true")
class EmbeddedDatabasePropertyIntegrationTests {

	@Autowired
	private DataSource dataSource;

	@Autowired
	private QueueOperations queues;

	@Autowired
	private QueueTestSupport support;

	@Test
	void theContextRunsOnADatabaseOfItsOwnOnTheSharedServer() {
		JdbcTemplate jdbc = new JdbcTemplate(this.dataSource);
		assertThat(jdbc.queryForObject("SELECT current_database()", String.class)).startsWith("pgqueue_test_");
		assertThat(jdbc.queryForObject("SELECT current_setting('port')::int", Integer.class))
			.isEqualTo(SharedPostgres.get().port());
		assertThat(jdbc.queryForObject("SELECT count(*) FROM pg_database WHERE datname LIKE 'pgqueue_test_%'",
				Long.class)).isEqualTo(SharedPostgres.get().databasesCreated());

		this.queues.send("emails", new Email("p@example.com", "property"));
		this.support.awaitDrained("emails", Duration.ofSeconds(30));
	}

}
