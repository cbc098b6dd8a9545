package io.github.pgqueue.boot.autoconfigure;

import io.github.pgqueue.testing.EmbeddedPostgres;
import io.github.pgqueue.testing.ServerVersion;
import org.junit.jupiter.api.Test;

/**
 * The server the shared {@link EmbeddedPostgres} of the starter's tests started is the PostgreSQL
 * version the build chose (see {@link ServerVersion}); the version it ran is in this test's output
 * file.
 */
class PostgresVersionTests {

	@Test
	void theTestsRunOnThePostgresqlVersionTheBuildChose() {
		ServerVersion.assertTheBuildsChoice("the starter's");
	}

}
