package io.github.pgqueue.testing;

import org.junit.jupiter.api.Test;

/**
 * The server the shared {@link EmbeddedPostgres} started is the PostgreSQL version the build
 * chose (see {@link ServerVersion}); the version it ran is in this test's output file.
 */
class PostgresVersionTests {

	@Test
	void theTestsRunOnThePostgresqlVersionTheBuildChose() {
		ServerVersion.assertTheBuildsChoice("queue-core's");
	}

}
