package io.github.pgqueue.stream.binder.orders;

/** An order of the sample application: which customer, its number in that customer's sequence, the amount. */
public record Order(String customer, int sequence, int amount) {
}
