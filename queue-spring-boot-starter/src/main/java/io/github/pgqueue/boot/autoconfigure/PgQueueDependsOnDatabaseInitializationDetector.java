package io.github.pgqueue.boot.autoconfigure;

import java.util.Set;

import io.github.pgqueue.QueueOperations;
import io.github.pgqueue.listener.QueueListenerEndpointRegistry;

import org.springframework.boot.sql.init.dependency.AbstractBeansOfTypeDependsOnDatabaseInitializationDetector;

/** Makes the beans that use pgqueue's tables wait for the database initializers, ours included. */
class PgQueueDependsOnDatabaseInitializationDetector extends AbstractBeansOfTypeDependsOnDatabaseInitializationDetector {

	@Override
	protected Set<Class<?>> getDependsOnDatabaseInitializationBeanTypes() {
		return Set.of(QueueOperations.class, QueueListenerEndpointRegistry.class);
	}

}
