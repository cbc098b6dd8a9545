/**
 * Micrometer Observation support: the {@code pgqueue.send} and {@code pgqueue.process}
 * observations, their contexts (which carry trace context in message headers) and their
 * conventions, which an application may replace to change names and tags.
 */
package io.github.pgqueue.observation;
