package io.github.pgqueue.listener;

/**
 * Customizes every listener container when its endpoint registers, before it starts: for
 * example to run its pollers on a task executor of the application's. With Spring Boot, every
 * bean of this type is applied, in order.
 */
@FunctionalInterface
public interface QueueListenerContainerCustomizer {

	/** Customizes {@code container}, which has not started yet. */
	void customize(QueueListenerContainer container);

}
