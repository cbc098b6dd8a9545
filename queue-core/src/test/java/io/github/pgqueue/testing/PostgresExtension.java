package io.github.pgqueue.testing;

import org.junit.jupiter.api.extension.BeforeEachCallback;
import org.junit.jupiter.api.extension.ExtensionContext;

/**
 * Starts the shared {@link EmbeddedPostgres} and empties pgqueue's tables before each test.
 */
public final class PostgresExtension implements BeforeEachCallback {

	@Override
	public void beforeEach(ExtensionContext context) {
		EmbeddedPostgres.get().reset();
	}

}
