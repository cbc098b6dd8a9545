/**
 * The @QueueListener annotation and the post-processor that turns annotated methods into listener endpoints.
 */
package io.github.pgqueue.annotation;
