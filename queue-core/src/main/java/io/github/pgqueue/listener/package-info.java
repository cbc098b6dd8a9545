/**
 * Listener containers: the registry, its containers and, package-private, the path every message
 * takes from the table to a listener method and back.
 * <p>
 * A container runs {@code concurrency} {@link io.github.pgqueue.listener.PollLoop poll loops}, each
 * one thread that polls its queues in turn, sleeps when they are empty and is woken by the
 * {@link io.github.pgqueue.listener.NotifyListener LISTEN connection}, a sibling or the next delayed
 * message. Each poll is one pass of claim, dispatch and complete through the loop's
 * {@link io.github.pgqueue.listener.ConsumptionStrategy}, one per consumption mode:
 * <ul>
 * <li><b>claim</b>: a statement of {@code session.sql} (on the loop's
 * {@link io.github.pgqueue.internal.ConsumerSession}, with session locks) or of
 * {@code transactional.sql} (in the application's transaction); where it starts is kept by
 * {@link io.github.pgqueue.internal.ClaimCursors}, the same for both;</li>
 * <li><b>dispatch</b>: the {@link io.github.pgqueue.listener.Dispatcher} converts each payload,
 * calls the listener under its observation and asks the error handler what a failure means,
 * the same for both;</li>
 * <li><b>complete</b>: ack, retry, dead-letter or give back, in at most four statements: the
 * session's own, or the transaction's, which commit with the handlers' writes.</li>
 * </ul>
 * {@link io.github.pgqueue.listener.SessionStrategy} runs the three steps outside any transaction;
 * {@link io.github.pgqueue.listener.TransactionalStrategy} runs them in one transaction, with
 * savepoints around failing handlers, and hands messages whose consumer died to a session of its
 * own. Built on {@code io.github.pgqueue.internal}, never the other way round.
 */
package io.github.pgqueue.listener;
