package io.github.pgqueue.sample;

import java.util.List;
import java.util.Map;

import io.github.pgqueue.QueueAdmin;
import io.github.pgqueue.QueueStats;
import io.github.pgqueue.QueueTemplate;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import org.springframework.jdbc.core.JdbcTemplate;
import org.springframework.web.bind.annotation.GetMapping;
import org.springframework.web.bind.annotation.PathVariable;
import org.springframework.web.bind.annotation.PostMapping;
import org.springframework.web.bind.annotation.RequestBody;
import org.springframework.web.bind.annotation.RequestParam;
import org.springframework.web.bind.annotation.RestController;

/** Places orders, and shows, peeks at and redrives the queues. */
@RestController
class QueueController {

	private static final Logger logger = LoggerFactory.getLogger(QueueController.class);

	private final OrderService orders;

	private final QueueTemplate queues;

	private final QueueAdmin admin;

	private final JdbcTemplate jdbc;

	QueueController(OrderService orders, QueueTemplate queues, QueueAdmin admin, JdbcTemplate jdbc) {
		this.orders = orders;
		this.queues = queues;
		this.admin = admin;
		this.jdbc = jdbc;
	}

	@PostMapping("/orders")
	Order place(@RequestBody Order order) {
		Order placed = this.orders.place(order);
		logger.info("accepted order {} over REST", placed.id());
		return placed;
	}

	@GetMapping("/queues/{queue}/stats")
	QueueStats stats(@PathVariable String queue) {
		return this.queues.stats(queue);
	}

	/** The oldest dead letters of a queue: plain SQL on the message table, the way any tool can read it. */
	@GetMapping("/queues/{queue}/dead-letters")
	List<Map<String, Object>> deadLetters(@PathVariable String queue, @RequestParam(defaultValue = "20") int limit) {
		return this.jdbc.queryForList("SELECT id, payload::text AS payload, headers::text AS headers, last_error, "
				+ "created_at FROM pgqueue.message WHERE queue = ? ORDER BY id LIMIT ?",
				this.admin.deadLetterQueueOf(queue), Math.min(limit, 500));
	}

	@PostMapping("/queues/{queue}/redrive")
	Map<String, Integer> redrive(@PathVariable String queue, @RequestParam(defaultValue = "100") int max) {
		return Map.of("moved", this.admin.redrive(queue, max));
	}

}
