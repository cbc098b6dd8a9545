/**
 * The reliability suite of pgqueue: a consumer application, run as separate JVMs, whose
 * listeners record every delivery (key, message id, attempt, consumer JVM) in a table of their
 * own and inject faults on request, so that a harness can kill, terminate and crash them and
 * then count every delivery by key.
 */
package io.github.pgqueue.reliability;
