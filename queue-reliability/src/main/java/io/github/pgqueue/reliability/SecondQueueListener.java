package io.github.pgqueue.reliability;

import io.github.pgqueue.QueueMessage;
import io.github.pgqueue.annotation.QueueListener;

/**
 * Lets one consumer JVM work on a second queue ({@code --chaos.second-queue}) with the same
 * handler as its first, so that one JVM consumes a {@code session} queue and a
 * {@code transactional} one side by side (the mode is each queue's {@code pgqueue.queues.*.mode}).
 */
public class SecondQueueListener {

	private final JobListener jobs;

	public SecondQueueListener(JobListener jobs) {
		this.jobs = jobs;
	}

	@QueueListener(id = "chaos-second", queues = "${chaos.second-queue}", concurrency = "${chaos.concurrency:2}")
	public void on(QueueMessage<Job> message) throws InterruptedException {
		this.jobs.on(message);
	}

}
