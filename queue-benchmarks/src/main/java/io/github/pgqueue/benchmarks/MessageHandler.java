package io.github.pgqueue.benchmarks;

/** What every system's consumer calls when it starts handling a message: a no-op but for counting. */
@FunctionalInterface
interface MessageHandler {

	void onMessage(long sequence);

}
