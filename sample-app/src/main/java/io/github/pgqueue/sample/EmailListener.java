package io.github.pgqueue.sample;

import java.util.concurrent.ThreadLocalRandom;

import io.github.pgqueue.QueueMessage;
import io.github.pgqueue.annotation.QueueListener;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import org.springframework.stereotype.Component;

/**
 * Emails a confirmation. The mail server fails now and then (the message is retried with back-off)
 * and addresses at bounce.example never work (the message ends in the dead-letter queue).
 */
@Component
class EmailListener {

	private static final Logger logger = LoggerFactory.getLogger(EmailListener.class);

	private final double failureRate;

	EmailListener(SampleProperties properties) {
		this.failureRate = properties.getEmailFailureRate();
	}

	@QueueListener(queues = "emails", id = "emails")
	void send(QueueMessage<Order> message) {
		Order order = message.payload();
		if (order.email().endsWith("@bounce.example")) {
			throw new IllegalStateException("mailbox " + order.email() + " does not exist");
		}
		if (ThreadLocalRandom.current().nextDouble() < this.failureRate) {
			throw new IllegalStateException("mail server busy, try again later");
		}
		logger.info("emailed  order {} to {} (attempt {})", order.id(), order.email(), message.attempt());
	}

}
