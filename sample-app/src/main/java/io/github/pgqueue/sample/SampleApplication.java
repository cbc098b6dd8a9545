package io.github.pgqueue.sample;

import org.springframework.boot.SpringApplication;
import org.springframework.boot.autoconfigure.SpringBootApplication;
import org.springframework.context.ConfigurableApplicationContext;
import org.springframework.scheduling.annotation.EnableScheduling;

/**
 * The pgqueue sample: orders arrive over REST (and from a small traffic generator), go to the
 * billing and email queues in one transaction, and two listeners process them. Runs on the
 * database of {@code spring.datasource.url}, or on an embedded PostgreSQL when none is set.
 */
@SpringBootApplication
@EnableScheduling
public class SampleApplication {

	public static void main(String[] args) {
		run(args);
	}

	/** Starts the application, with an embedded PostgreSQL if no database is configured. */
	public static ConfigurableApplicationContext run(String... args) {
		SpringApplication application = new SpringApplication(SampleApplication.class);
		application.addListeners(new EmbeddedDatabaseStarter());
		return application.run(args);
	}

}
