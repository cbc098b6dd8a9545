/**
 * The binder's configuration, named in {@code META-INF/spring.binders} as binder {@code pgqueue}:
 * it builds the binder on the application's {@code QueueTemplate}, {@code QueueAdmin} and
 * listener registry.
 */
package io.github.pgqueue.stream.binder.config;
