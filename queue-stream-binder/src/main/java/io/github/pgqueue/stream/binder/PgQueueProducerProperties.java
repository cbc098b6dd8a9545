package io.github.pgqueue.stream.binder;

import java.time.Duration;

/**
 * The pgqueue settings of one producer binding, under
 * {@code spring.cloud.stream.pgqueue.bindings.<name>.producer}. The headers
 * {@value PgQueueBinderHeaders#PRIORITY} and {@value PgQueueBinderHeaders#DELAY} of a message
 * override them for that message.
 */
public class PgQueueProducerProperties {

	/** Priority of the messages sent: lower is delivered first. */
	private int priority;

	/** How long after the send commits the messages become visible. */
	private Duration delay = Duration.ZERO;

	/** The routing key messages are published with; the destination's name when not set. */
	private String routingKey;

	public int getPriority() {
		return this.priority;
	}

	public void setPriority(int priority) {
		this.priority = priority;
	}

	public Duration getDelay() {
		return this.delay;
	}

	public void setDelay(Duration delay) {
		this.delay = delay;
	}

	public String getRoutingKey() {
		return this.routingKey;
	}

	public void setRoutingKey(String routingKey) {
		this.routingKey = routingKey;
	}

}
