/**
 * The sample application the binder's migration test runs unchanged on pgqueue and on Kafka.
 */
package io.github.pgqueue.stream.binder.orders;
