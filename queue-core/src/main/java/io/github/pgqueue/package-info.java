/**
 * The API of pgqueue: send, receive, cancel and inspect messages of PostgreSQL-backed queues.
 */
package io.github.pgqueue;
