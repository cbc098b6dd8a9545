package io.github.pgqueue.annotation;

import java.lang.annotation.Documented;
import java.lang.annotation.ElementType;
import java.lang.annotation.Retention;
import java.lang.annotation.RetentionPolicy;
import java.lang.annotation.Target;

import io.github.pgqueue.AckMode;

/**
 * Marks a bean method as the handler of the messages of one or more queues. The method may take
 * the payload (converted from JSON to the parameter's type), a {@link io.github.pgqueue.QueueMessage},
 * {@link Header @Header} strings and an {@link io.github.pgqueue.Acknowledgment}. Returning acks
 * the message; throwing retries it with the queue's back-off and dead-letters it after its max
 * attempts. String attributes accept {@code ${...}} placeholders.
 */
@Target(ElementType.METHOD)
@Retention(RetentionPolicy.RUNTIME)
@Documented
public @interface QueueListener {

	/**
	 * The queues to consume; each must exist when the listener starts: declared under
	 * {@code pgqueue.queues} or in the database ({@code QueueAdmin.create}), or a dead-letter
	 * queue of one. Checked at startup for a listener that starts with the application, else at
	 * its start.
	 */
	String[] queues();

	/** Unique id of the listener, for logs, metrics and the registry; default {@code <bean>.<method>}. */
	String id() default "";

	/** Poller threads, each with a database connection; default {@code pgqueue.listener.concurrency}. */
	String concurrency() default "";

	/** Who completes a message: the container on return ({@code AUTO}) or the method ({@code MANUAL}). */
	AckMode ackMode() default AckMode.AUTO;

	/**
	 * Whether the listener starts with the application; {@code "true"} or {@code "false"} (start
	 * it through the {@code QueueListenerEndpointRegistry}, for example once its queue is created).
	 */
	String autoStartup() default "true";

	/** Name of a {@link io.github.pgqueue.listener.QueueErrorHandler} bean; default retry with back-off, then dead-letter. */
	String errorHandler() default "";

	/**
	 * How messages are taken: {@code "session"} or {@code "transactional"} (see
	 * {@link io.github.pgqueue.ConsumptionMode}); default the {@code mode} of the listener's queues
	 * under {@code pgqueue.queues}, which must then agree.
	 */
	String mode() default "";

	/**
	 * In transactional mode, the longest one batch's transaction may take, such as {@code "10s"};
	 * default the queues' {@code transaction-timeout} (30 s unless configured).
	 */
	String transactionTimeout() default "";

	/**
	 * Whether the method takes each claimed batch at once (up to {@code pgqueue.listener.batch-size}
	 * messages of one queue), as its one parameter: a {@code List<T>} of payloads or a
	 * {@code List<QueueMessage<T>>}. Returning acks the batch; a
	 * {@link io.github.pgqueue.listener.BatchListenerFailedException} names the message that failed
	 * (see {@link io.github.pgqueue.listener.QueueBatchListener}); any other exception fails them all.
	 */
	boolean batch() default false;

	/**
	 * Which messages the listener takes, by their headers: {@code "type = 'welcome'"},
	 * {@code "region in ('eu', 'us')"}, and {@code and} of those (a value is a string in single
	 * quotes or a number; see docs/concepts.md). Messages it rejects stay in the queue untouched, for other
	 * listeners and receives. Default: every message. A filter that cannot be parsed fails startup.
	 */
	String filter() default "";

}
