package io.github.pgqueue.benchmarks;

/**
 * The payload type of pgqueue's benchmark listeners: the sequence number a producer sent.
 * @param n the sequence number, or {@link Payloads#UNTRACKED}
 */
public record Tick(long n) {
}
