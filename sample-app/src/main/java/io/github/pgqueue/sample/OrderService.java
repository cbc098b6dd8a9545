package io.github.pgqueue.sample;

import java.util.UUID;

import io.github.pgqueue.QueueOperations;
import io.github.pgqueue.SendOptions;

import org.springframework.stereotype.Service;
import org.springframework.transaction.annotation.Transactional;

/**
 * Accepts orders: each is published to the {@code orders} exchange, which routes it to the billing
 * and email queues (see application.yml), inside the caller's transaction.
 */
@Service
public class OrderService {

	private final QueueOperations queues;

	public OrderService(QueueOperations queues) {
		this.queues = queues;
	}

	@Transactional
	public Order place(Order request) {
		Order order = new Order((request.id() != null) ? request.id() : UUID.randomUUID().toString().substring(0, 8),
				request.item(), request.quantity(), request.amount(), request.email());
		this.queues.publish("orders", "order.created", order,
				SendOptions.builder().header("order-id", order.id()).build());
		return order;
	}

}
