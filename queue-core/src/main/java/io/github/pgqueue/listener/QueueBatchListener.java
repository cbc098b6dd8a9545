package io.github.pgqueue.listener;

import java.util.List;

import io.github.pgqueue.QueueMessage;

/**
 * Handles the messages of one claimed batch at once, in claim order. Returning acks them all. A
 * {@link BatchListenerFailedException} names the message that failed: in {@code session} mode the
 * ones before it are acked, it fails its attempt, and the ones after it are released without one;
 * in {@code transactional} mode the handler's writes are rolled back, so only that message fails
 * its attempt and every other one is released. Any other exception fails the attempt of every
 * message of the batch. Always {@link io.github.pgqueue.AckMode#AUTO}.
 */
@FunctionalInterface
public interface QueueBatchListener {

	void onMessages(List<QueueMessage<Object>> messages) throws Exception;

}
