package io.github.pgqueue.stream.binder;

import io.github.pgqueue.QueueTemplate;
import org.junit.jupiter.api.Test;

import org.springframework.integration.channel.DirectChannel;
import org.springframework.jdbc.datasource.DriverManagerDataSource;
import org.springframework.messaging.Message;
import org.springframework.messaging.MessageHandlingException;
import org.springframework.messaging.support.MessageBuilder;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/**
 * The producer's error channel: whatever its flow does, the caller of a failed send gets that
 * send's own failure.
 */
class PgQueueMessageHandlerTests {

	@Test
	void anErrorFlowThatFailsDoesNotHideTheFailedSendFromTheCaller() {
		DirectChannel errors = new DirectChannel();
		errors.subscribe((message) -> {
			throw new IllegalStateException("the error flow failed too");
		});
		// the send fails on its header before it needs the database
		QueueTemplate queues = QueueTemplate.builder(new DriverManagerDataSource("jdbc:postgresql://localhost:1/none"))
			.build();
		PgQueueMessageHandler handler = new PgQueueMessageHandler(queues, "strict", new PgQueueProducerProperties(),
				(message) -> null, new MessageMapping(), errors);
		Message<String> bad = MessageBuilder.withPayload("no priority")
			.setHeader(PgQueueBinderHeaders.PRIORITY, "high")
			.build();

		assertThatThrownBy(() -> handler.handleMessage(bad)).isInstanceOf(MessageHandlingException.class)
			.hasMessageStartingWith("Cannot send to destination 'strict': Header pgqueue_priority must be an integer")
			.satisfies((thrown) -> assertThat(thrown.getSuppressed()).singleElement()
				.satisfies((suppressed) -> assertThat(suppressed).hasStackTraceContaining("the error flow failed too")));
	}

}
