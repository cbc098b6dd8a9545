package io.github.pgqueue.stream.binder.orders;

/** The invoice of one order. */
public record Invoice(String customer, int sequence, int total) {
}
