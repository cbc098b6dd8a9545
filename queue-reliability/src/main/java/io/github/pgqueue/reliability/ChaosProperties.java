package io.github.pgqueue.reliability;

import org.springframework.boot.context.properties.ConfigurationProperties;

/**
 * What a chaos consumer JVM is told on its command line.
 * @param consumer name of this consumer; also the application name of its database sessions
 * @param recorderUrl JDBC URL of the connections that record deliveries, kept apart from the
 * consumer's own sessions so that terminating those does not touch the record
 * @param username database user of the recorder
 * @param listener {@code job} for {@link Job} payloads, {@code untyped} for whatever JSON arrives
 * @param recordEnds whether a handler also records when it ends ({@code chaos.delivery.ended_at}),
 * for scenarios that check that no two messages of a FIFO group were handled at once
 */
@ConfigurationProperties("chaos")
public record ChaosProperties(String consumer, String recorderUrl, String username, String listener,
		boolean recordEnds) {

	public ChaosProperties {
		if (consumer == null || recorderUrl == null) {
			throw new IllegalArgumentException("Start a chaos consumer with --chaos.consumer and --chaos.recorder-url");
		}
		username = (username != null) ? username : "postgres";
		listener = (listener != null) ? listener : "job";
	}

}
