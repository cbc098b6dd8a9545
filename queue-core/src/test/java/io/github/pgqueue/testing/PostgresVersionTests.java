package io.github.pgqueue.testing;

import org.junit.jupiter.api.Test;

import static org.assertj.core.api.Assertions.assertThat;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

/**
 * The server the shared {@link EmbeddedPostgres} started is the PostgreSQL version the build
 * chose (see {@link ServerVersion}); the version it ran is in this test's output file.
 */
class PostgresVersionTests {

	@Test
	void theTestsRunOnThePostgresqlVersionTheBuildChose() {
		int number = ServerVersion.number(EmbeddedPostgres.get().dataSource());
		System.out.println("queue-core's tests run on PostgreSQL " + ServerVersion.format(number)
				+ " (server_version_num " + number + ")");
		String expected = ServerVersion.expected();
		assumeTrue(expected != null, () -> "no " + ServerVersion.BINARIES_PROPERTY + ": not run by Maven, "
				+ "so there is no version to compare with");
		assertThat(ServerVersion.format(number))
			.as("PostgreSQL of the embedded server; the build chose zonky's binaries %s",
					System.getProperty(ServerVersion.BINARIES_PROPERTY))
			.isEqualTo(expected);
	}

}
