package io.github.pgqueue.sample;

import java.math.BigDecimal;

/** An order as it travels through the queues. */
public record Order(String id, String item, int quantity, BigDecimal amount, String email) {
}
