/**
 * A Spring Cloud Stream binder on pgqueue: a destination is an exchange, a consumer group is a
 * durable queue bound to it, a partition key is the FIFO group of a message. Applications use it
 * through Spring Cloud Stream's functions and {@code StreamBridge}; this package holds the binder,
 * its provisioning and its extended properties under {@code spring.cloud.stream.pgqueue}.
 */
package io.github.pgqueue.stream.binder;
