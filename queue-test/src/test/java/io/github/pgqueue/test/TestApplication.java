package io.github.pgqueue.test;

import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;

import io.github.pgqueue.annotation.QueueListener;

import org.springframework.boot.autoconfigure.SpringBootApplication;
import org.springframework.stereotype.Component;

/** An application with one listener: it delivers emails, except to bounce.example, which always fails. */
@SpringBootApplication
class TestApplication {

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
			this.delivered.add(email);
		}

	}

}
