package io.github.pgqueue.test;

import java.time.Duration;
import java.util.List;

import io.github.pgqueue.QueueOperations;
import io.github.pgqueue.SendOptions;
import io.github.pgqueue.test.TestApplication.Email;
import io.github.pgqueue.test.TestApplication.Mailer;
import org.junit.jupiter.api.Test;

import org.springframework.beans.factory.annotation.Autowired;
import org.springframework.boot.test.context.SpringBootTest;
import org.springframework.core.env.Environment;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatExceptionOfType;

/** QueueTestSupport on a real PostgreSQL, in an application whose only listener consumes {@code emails}. */
@SpringBootTest
@EmbeddedPgQueue
class QueueTestSupportIntegrationTests {

	private static final Duration TIMEOUT = Duration.ofSeconds(30);

	@Autowired
	private QueueOperations queues;

	@Autowired
	private QueueTestSupport support;

	@Autowired
	private Mailer mailer;

	@Autowired
	private Environment environment;

	@Test
	void theApplicationRunsOnANewDatabaseOfTheEmbeddedServerWhateverItConfigures() {
		assertThat(this.environment.getProperty("spring.datasource.url"))
			.startsWith("jdbc:postgresql://localhost:")
			.contains("/pgqueue_test_")
			.doesNotContain("replaced");
		assertThat(this.environment.getProperty("spring.datasource.username")).isEqualTo("postgres");
	}

	@Test
	void awaitDrainedReturnsOnceTheListenerHasHandledEveryMessage() {
		List<Email> emails = List.of(new Email("a@example.com", TestApplication.SLOW),
				new Email("b@example.com", TestApplication.SLOW), new Email("c@example.com", TestApplication.SLOW));
		this.queues.sendBatch("emails", emails);

		this.support.awaitDrained("emails", TIMEOUT);

		assertThat(this.mailer.delivered).containsAll(emails);
		assertThat(this.support.sent("emails", Email.class)).isEmpty();
	}

	@Test
	void sentReadsPayloadsHeadersAndOptionsInSendOrder() {
		this.queues.send("reports", new Email("x@example.com", "first"),
				SendOptions.builder().header("tenant", "acme").priority(2).group("customer-1").build());
		this.queues.send("reports", new Email("y@example.com", "second"),
				SendOptions.builder().deduplicationKey("report-2").delay(Duration.ofHours(1)).build());

		List<StoredMessage<Email>> sent = this.support.sent("reports", Email.class);

		assertThat(sent).extracting(StoredMessage::payload)
			.containsExactly(new Email("x@example.com", "first"), new Email("y@example.com", "second"));
		StoredMessage<Email> first = sent.get(0);
		assertThat(first.queue()).isEqualTo("reports");
		assertThat(first.header("tenant")).isEqualTo("acme");
		assertThat(first.priority()).isEqualTo(2);
		assertThat(first.group()).isEqualTo("customer-1");
		assertThat(first.attempts()).isZero();
		assertThat(first.lastError()).isNull();
		StoredMessage<Email> second = sent.get(1);
		assertThat(second.deduplicationKey()).isEqualTo("report-2");
		assertThat(second.visibleAt()).isAfter(second.createdAt().plus(Duration.ofMinutes(59)));
	}

	@Test
	void deadLettersCarryTheLastErrorAndTheirOrigin() {
		this.queues.send("emails", new Email("nobody@bounce.example", "lost"));

		this.support.awaitDrained("emails", TIMEOUT);

		List<StoredMessage<Email>> dead = this.support.deadLetters("emails", Email.class);
		assertThat(dead).singleElement().satisfies((letter) -> {
			assertThat(letter.queue()).isEqualTo("emails.dlq");
			assertThat(letter.payload()).isEqualTo(new Email("nobody@bounce.example", "lost"));
			assertThat(letter.lastError()).contains("mailbox nobody@bounce.example does not exist");
			assertThat(letter.header("pgqueue-dead-lettered-from")).isEqualTo("emails");
		});
	}

	@Test
	void awaitDrainedFailsListingWhatIsLeft() {
		long ready = this.queues.send("stuck", new Email("s@example.com", "waiting"));
		long delayed = this.queues.send("stuck", new Email("t@example.com", "later"),
				SendOptions.builder().delay(Duration.ofHours(1)).build());

		assertThatExceptionOfType(AssertionError.class)
			.isThrownBy(() -> this.support.awaitDrained("stuck", Duration.ofMillis(200)))
			.withMessageStartingWith("Queue 'stuck' was not drained within PT0.2S: 2 messages left "
					+ "(1 ready, 1 delayed or backing off, 0 held by a consumer)")
			.withMessageContaining("id " + ready + ", attempts 0 of 4, payload {")
			.withMessageContaining("\"subject\": \"waiting\"")
			.withMessageMatching("(?s).*id " + delayed + ", attempts 0 of 4, visible at \\S+Z, payload \\{.*");
	}

	@Test
	void sentNamesTheMessageWhosePayloadCannotBeReadAsTheType() {
		long id = this.queues.send("drafts", List.of("not", "an", "email"));

		assertThatExceptionOfType(AssertionError.class)
			.isThrownBy(() -> this.support.sent("drafts", Email.class))
			.withMessageStartingWith("Message " + id + " of queue 'drafts': Cannot read payload as " + Email.class.getName())
			.withMessageEndingWith("(Object.class reads any payload)");
		assertThat(this.support.sent("drafts", Object.class)).extracting(StoredMessage::payload)
			.contains(List.of("not", "an", "email"));
	}

}
