package io.github.pgqueue.stream.binder;

import java.time.Duration;

import io.github.pgqueue.PayloadConversionException;
import io.github.pgqueue.QueueMessage;
import io.github.pgqueue.listener.DefaultQueueErrorHandler;
import io.github.pgqueue.listener.FailureAction;
import io.github.pgqueue.listener.QueueErrorHandler;
import org.apache.commons.logging.Log;
import org.apache.commons.logging.LogFactory;

import org.springframework.messaging.Message;
import org.springframework.messaging.MessageChannel;
import org.springframework.messaging.MessagingException;
import org.springframework.messaging.converter.MessageConversionException;
import org.springframework.messaging.support.ErrorMessage;

/**
 * What a consumer binding does with a message its handler failed: retries it with the queue's
 * back-off while it has attempts left; on its last attempt — or at once when its payload does not
 * convert to the handler's type (a conversion error, or the cast that fails when Spring Cloud
 * Stream hands an unconverted payload on), which no retry mends — sends an {@link ErrorMessage} to the binding's error channel
 * ({@code <destination>.<group>.errors}, bridged to {@code errorChannel}) and dead-letters it
 * to the group's dead-letter queue, with the error as its last error.
 */
final class BindingErrorHandler implements QueueErrorHandler {

	private static final Log logger = LogFactory.getLog(BindingErrorHandler.class);

	private final MessageChannel errorChannel;

	private final MessageMapping mapping;

	BindingErrorHandler(MessageChannel errorChannel, MessageMapping mapping) {
		this.errorChannel = errorChannel;
		this.mapping = mapping;
	}

	@Override
	public FailureAction handle(QueueMessage<?> message, Throwable error, Duration backoff) {
		boolean unconvertible = isConversionFailure(error);
		if (!unconvertible && message.attempt() < message.maxAttempts()) {
			return FailureAction.retry(backoff);
		}
		publish(message, error);
		String reason = unconvertible
				? "Payload does not convert; dead-lettered at once: " + DefaultQueueErrorHandler.describe(rootOf(error))
				: "Failed " + message.attempt() + " of " + message.maxAttempts() + " attempts; last error: "
						+ DefaultQueueErrorHandler.describe(rootOf(error));
		return FailureAction.deadLetter(reason);
	}

	private void publish(QueueMessage<?> message, Throwable error) {
		if (this.errorChannel == null) {
			return;
		}
		try {
			Message<byte[]> failed = this.mapping.toMessage(message);
			MessagingException payload = (error instanceof MessagingException messaging && messaging.getFailedMessage() != null)
					? messaging : new MessagingException(failed, error.getMessage(), error);
			this.errorChannel.send(new ErrorMessage(payload, failed));
		}
		catch (RuntimeException ex) {
			// the message is dead-lettered all the same; the error handler's own failure is reported here
			logger.warn("The error channel's handler failed for message " + message.id() + " of queue '"
					+ message.queue() + "'; the message goes to the dead-letter queue", ex);
		}
	}

	static boolean isConversionFailure(Throwable error) {
		for (Throwable cause = error; cause != null; cause = cause.getCause()) {
			// a payload the function's input type cannot take reaches it unconverted and fails the cast
			if (cause instanceof MessageConversionException || cause instanceof PayloadConversionException
					|| cause instanceof ClassCastException) {
				return true;
			}
			if (cause.getCause() == cause) {
				break;
			}
		}
		return false;
	}

	private static Throwable rootOf(Throwable error) {
		Throwable root = error;
		while (root instanceof MessagingException && root.getCause() != null) {
			root = root.getCause();
		}
		return root;
	}

}
