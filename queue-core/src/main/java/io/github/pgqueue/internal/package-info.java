/**
 * Internals of pgqueue: the SQL, consumer sessions, poll loops and the LISTEN connection. Not an API; may change in any release.
 */
package io.github.pgqueue.internal;
