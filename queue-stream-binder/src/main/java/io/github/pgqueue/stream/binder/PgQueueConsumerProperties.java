package io.github.pgqueue.stream.binder;

import java.time.Duration;

import io.github.pgqueue.ConsumptionMode;

/**
 * The pgqueue settings of one consumer binding, under
 * {@code spring.cloud.stream.pgqueue.bindings.<name>.consumer}. Retries, back-off and concurrency
 * come from the common consumer properties ({@code maxAttempts}, {@code backOff*},
 * {@code concurrency}); these add what only pgqueue has.
 */
public class PgQueueConsumerProperties {

	/** How messages are consumed: session (advisory locks, no transaction open while the handler runs) or transactional (the handler runs in the transaction that deletes its message). */
	private ConsumptionMode mode = ConsumptionMode.SESSION;

	/** Only messages whose headers match this filter are consumed, e.g. "tenant = 'acme'"; the others stay in the queue. */
	private String filter;

	/** Messages claimed per statement; in batch mode, the most messages one call gets. Default: pgqueue.listener.batch-size. */
	private Integer batchSize;

	/** Longest an idle poller waits for work when no notification arrives. Default: pgqueue.listener.poll-interval. */
	private Duration pollInterval;

	/** Where messages go after their last attempt. Default: the group queue's name followed by ".dlq". */
	private String deadLetterQueueName;

	/** The topic pattern the group's queue is bound to the destination with: words separated by '.', '*' one word, '#' any number. */
	private String bindingRoutingKey = "#";

	/** How long one transaction of the transactional mode may take, handler included. Default: 30 seconds. */
	private Duration transactionTimeout;

	public ConsumptionMode getMode() {
		return this.mode;
	}

	public void setMode(ConsumptionMode mode) {
		this.mode = mode;
	}

	public String getFilter() {
		return this.filter;
	}

	public void setFilter(String filter) {
		this.filter = filter;
	}

	public Integer getBatchSize() {
		return this.batchSize;
	}

	public void setBatchSize(Integer batchSize) {
		this.batchSize = batchSize;
	}

	public Duration getPollInterval() {
		return this.pollInterval;
	}

	public void setPollInterval(Duration pollInterval) {
		this.pollInterval = pollInterval;
	}

	public String getDeadLetterQueueName() {
		return this.deadLetterQueueName;
	}

	public void setDeadLetterQueueName(String deadLetterQueueName) {
		this.deadLetterQueueName = deadLetterQueueName;
	}

	public String getBindingRoutingKey() {
		return this.bindingRoutingKey;
	}

	public void setBindingRoutingKey(String bindingRoutingKey) {
		this.bindingRoutingKey = bindingRoutingKey;
	}

	public Duration getTransactionTimeout() {
		return this.transactionTimeout;
	}

	public void setTransactionTimeout(Duration transactionTimeout) {
		this.transactionTimeout = transactionTimeout;
	}

}
