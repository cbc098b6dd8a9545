/**
 * Listener containers: the registry, its containers and, package-private, the poll loops that
 * claim messages in session or transactional mode, hand them to a listener and complete them, and
 * the LISTEN connection that wakes them. Built on {@code io.github.pgqueue.internal}, never the
 * other way round.
 */
package io.github.pgqueue.listener;
