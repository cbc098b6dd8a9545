/**
 * The opt-in web dashboard ({@code pgqueue.dashboard.enabled}): a static page, script and style
 * sheet from the starter's jar and a small JSON API under {@code pgqueue.dashboard.path} that
 * shows queues, messages, dead letters and listeners, and — unless read-only — cancels, redrives,
 * deletes and pauses. Everything but the auto-configuration and its properties is package-private.
 */
package io.github.pgqueue.boot.autoconfigure.dashboard;
