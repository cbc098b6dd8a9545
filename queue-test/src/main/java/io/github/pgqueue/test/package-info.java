/**
 * Test support for applications that use pgqueue: {@link io.github.pgqueue.test.EmbeddedPgQueue}
 * gives a {@code @SpringBootTest} a real PostgreSQL without Docker, and
 * {@link io.github.pgqueue.test.QueueTestSupport} waits for queues to drain and reads what they hold.
 */
package io.github.pgqueue.test;
