/**
 * Listener containers: poller threads that claim messages, hand them to a listener and complete them, and the registry that runs them.
 */
package io.github.pgqueue.listener;
