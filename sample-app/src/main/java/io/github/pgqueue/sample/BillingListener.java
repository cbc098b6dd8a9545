package io.github.pgqueue.sample;

import io.github.pgqueue.annotation.QueueListener;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import org.springframework.stereotype.Component;

/** Bills each order. */
@Component
class BillingListener {

	private static final Logger logger = LoggerFactory.getLogger(BillingListener.class);

	@QueueListener(queues = "billing", id = "billing", concurrency = "2")
	void bill(Order order) {
		logger.info("billed   order {}: {} x {} for {}", order.id(), order.quantity(), order.item(), order.amount());
	}

}
