package io.github.pgqueue.test;

import java.time.Duration;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;

import io.github.pgqueue.annotation.QueueListener;

import org.springframework.boot.autoconfigure.SpringBootApplication;
import org.springframework.stereotype.Component;

/**
 * An application with one listener: it delivers emails, except to bounce.example, which always
 * fails; an email whose subject is {@value #SLOW} takes {@link #SLOW_WORK} to deliver.
 */
@SpringBootApplication
class TestApplication {

	static final String SLOW = "slow";

	static final Duration SLOW_WORK = Duration.ofMillis(300);

	/** A payload. */
	record Email(String to, String subject) {
	}

	@Component
	static class Mailer {

		final List<Email> delivered = new CopyOnWriteArrayList<>();

		@QueueListener(queues = "emails")
		void send(Email email) {
			if (email.to().endsWith("@bounce.example")) {
				throw new IllegalStateException("mailbox " + email.to() + " does not exist");
			}
			if (email.subject().equals(SLOW)) {
				try {
					Thread.sleep(SLOW_WORK.toMillis());
				}
				catch (InterruptedException ex) {
					Thread.currentThread().interrupt();
					throw new IllegalStateException("Interrupted while delivering " + email, ex);
				}
			}
			this.delivered.add(email);
		}

	}

}
