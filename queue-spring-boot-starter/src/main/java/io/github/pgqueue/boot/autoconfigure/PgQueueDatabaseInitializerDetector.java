package io.github.pgqueue.boot.autoconfigure;

import java.util.Set;

import org.springframework.boot.sql.init.dependency.AbstractBeansOfTypeDatabaseInitializerDetector;

/** Tells Spring Boot that {@link PgQueueSchemaInitializer} initializes a database. */
class PgQueueDatabaseInitializerDetector extends AbstractBeansOfTypeDatabaseInitializerDetector {

	@Override
	protected Set<Class<?>> getDatabaseInitializerBeanTypes() {
		return Set.of(PgQueueSchemaInitializer.class);
	}

}
