/**
 * Internals of pgqueue below both the template and the listener containers: the SQL, consumer
 * sessions, headers and listener metrics. They know nothing of listeners. Not an API; may change
 * in any release.
 */
package io.github.pgqueue.internal;
