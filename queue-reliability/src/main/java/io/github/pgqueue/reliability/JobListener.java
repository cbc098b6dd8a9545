package io.github.pgqueue.reliability;

import io.github.pgqueue.QueueMessage;
import io.github.pgqueue.annotation.QueueListener;
import io.github.pgqueue.listener.QueueListenerEndpointRegistry;

import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import org.springframework.beans.factory.ObjectProvider;
import org.springframework.jdbc.core.JdbcTemplate;
import org.springframework.transaction.support.TransactionSynchronizationManager;

/**
 * Handles {@link Job} payloads: records the delivery, works for the job's time, then injects the
 * job's fault.
 */
public class JobListener {

	/** The exit status of a JVM halted by a job. */
	public static final int HALT_STATUS = 99;

	private static final Logger logger = LoggerFactory.getLogger(JobListener.class);

	/**
	 * Set by the handler about to halt: from then on no handler of this JVM records a delivery,
	 * so that what it wrote down as the JVM's claims is all a halt can leave unacked.
	 */
	private static volatile boolean halting;

	private final DeliveryRecorder recorder;

	private final ObjectProvider<QueueListenerEndpointRegistry> registry;

	private final JdbcTemplate jdbc;

	private final String consumer;

	public JobListener(DeliveryRecorder recorder, ObjectProvider<QueueListenerEndpointRegistry> registry,
			JdbcTemplate jdbc, String consumer) {
		this.recorder = recorder;
		this.registry = registry;
		this.jdbc = jdbc;
		this.consumer = consumer;
	}

	/**
	 * In a transactional listener (the queue's {@code mode}), also writes the job's effect in the
	 * listener's transaction, before the fault: the suite checks each job took effect once.
	 */
	@QueueListener(id = "chaos", queues = "${chaos.queue}", concurrency = "${chaos.concurrency:2}")
	public void on(QueueMessage<Job> message) throws InterruptedException {
		while (halting) {
			Thread.sleep(1000);
		}
		// Read first: a handler that starts once the registry is stopping breaks graceful shutdown.
		boolean running = this.registry.getObject().isRunning();
		Job job = message.payload();
		if (job == null) {
			this.recorder.record(headerKey(message), message, Fault.THROW, running);
			throw new IllegalArgumentException("Message " + message.id() + " has a null payload");
		}
		Fault fault = job.faultOrNone();
		boolean once = fault == Fault.TERMINATE_BEFORE_ACK || fault == Fault.THROW_ONCE;
		boolean injects = fault != Fault.NONE && (!once || message.attempt() == 1);
		this.recorder.record(job.key(), message, injects ? fault : null, running);
		if (TransactionSynchronizationManager.isActualTransactionActive()) {
			this.jdbc.update("INSERT INTO chaos.effect (key, message_id, attempt, consumer) VALUES (?, ?, ?, ?)",
					job.key(), message.id(), message.attempt(), this.consumer);
		}
		if (job.workMillis() > 0) {
			try {
				Thread.sleep(job.workMillis());
			}
			catch (InterruptedException ex) {
				if (!this.registry.getObject().isRunning()) {
					// Interrupted because the listener stops after its shutdown timeout: this delivery
					// ends without an ack, so its redelivery is legitimate.
					this.recorder.faultDelivery(message, "interrupted-by-stop");
				}
				throw ex;
			}
		}
		this.recorder.recordEnd(message);
		if (!injects) {
			return;
		}
		switch (fault) {
			case THROW -> throw new IllegalStateException("Job " + job.key() + " always fails");
			case THROW_ONCE -> throw new IllegalStateException("Job " + job.key() + " fails its first attempt");
			case ERROR -> {
				if (job.key() % 2 == 0) {
					recurse(0);
				}
				throw new OutOfMemoryError("Job " + job.key() + " throws an OutOfMemoryError");
			}
			case HALT -> {
				halting = true;
				this.recorder.faultConsumer(fault);
				logger.warn("Job {} (message {}, attempt {}) halts this JVM", job.key(), message.id(),
						message.attempt());
				Runtime.getRuntime().halt(HALT_STATUS);
			}
			case TERMINATE_BEFORE_ACK -> this.recorder.terminateHolderOf(message.id(), fault);
			default -> throw new IllegalStateException("Unknown fault " + fault);
		}
	}

	/** Recurses until the stack overflows: a real {@code StackOverflowError}. */
	private static int recurse(int depth) {
		return recurse(depth + 1) + 1;
	}

	static long headerKey(QueueMessage<?> message) {
		String key = message.header("chaos-key");
		return (key != null) ? Long.parseLong(key) : -1;
	}

}
