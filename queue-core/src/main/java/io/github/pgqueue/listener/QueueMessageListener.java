package io.github.pgqueue.listener;

import io.github.pgqueue.Acknowledgment;
import io.github.pgqueue.QueueMessage;

/**
 * Handles one message for a listener container. In {@link io.github.pgqueue.AckMode#AUTO} mode,
 * returning acks the message and throwing hands it to the {@link QueueErrorHandler}; in
 * {@link io.github.pgqueue.AckMode#MANUAL} mode the listener completes it through {@code ack}.
 */
@FunctionalInterface
public interface QueueMessageListener {

	void onMessage(QueueMessage<Object> message, Acknowledgment ack) throws Exception;

}
