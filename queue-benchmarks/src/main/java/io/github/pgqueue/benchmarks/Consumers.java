package io.github.pgqueue.benchmarks;

/** Running consumers of one system; closing stops them and waits for their threads. */
@FunctionalInterface
interface Consumers extends AutoCloseable {

	@Override
	void close();

}
