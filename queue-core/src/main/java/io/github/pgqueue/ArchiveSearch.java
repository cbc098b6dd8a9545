package io.github.pgqueue;

import java.time.Instant;
import java.util.Objects;

/**
 * What {@link MessageArchive#search} looks for: every condition given must hold; a null one is not
 * asked. Start from {@link #all()} and narrow it.
 * @param queue the queue the messages completed in
 * @param id a message id
 * @param headerName a header that must have {@code headerValue}
 * @param headerValue the value of {@code headerName}
 * @param completedFrom the earliest completion time (inclusive)
 * @param completedBefore the completion time the messages must be older than
 * @param limit the most messages returned, newest completion first: 1 to 1 000
 */
public record ArchiveSearch(String queue, Long id, String headerName, String headerValue, Instant completedFrom,
		Instant completedBefore, int limit) {

	/** The {@link #limit()} of {@link #all()}. */
	public static final int DEFAULT_LIMIT = 100;

	/** The largest {@link #limit()}. */
	public static final int MAX_LIMIT = 1000;

	public ArchiveSearch {
		if (queue != null) {
			QueueNames.requireQueue(queue);
		}
		if ((headerName == null) != (headerValue == null) || (headerName != null && headerName.isEmpty())) {
			throw new IllegalArgumentException("An archive search by header needs a header name and a value, was "
					+ headerName + " = " + headerValue);
		}
		if (limit < 1 || limit > MAX_LIMIT) {
			throw new IllegalArgumentException("An archive search's limit must be 1 to " + MAX_LIMIT + ", was " + limit);
		}
	}

	/** Every archived message, up to {@link #DEFAULT_LIMIT}. */
	public static ArchiveSearch all() {
		return new ArchiveSearch(null, null, null, null, null, null, DEFAULT_LIMIT);
	}

	/** This search, in one queue. */
	public ArchiveSearch inQueue(String queue) {
		return new ArchiveSearch(Objects.requireNonNull(queue, "Queue must not be null"), this.id, this.headerName,
				this.headerValue, this.completedFrom, this.completedBefore, this.limit);
	}

	/** This search, for one message id. */
	public ArchiveSearch withId(long id) {
		return new ArchiveSearch(this.queue, id, this.headerName, this.headerValue, this.completedFrom,
				this.completedBefore, this.limit);
	}

	/** This search, for messages whose header {@code name} is {@code value}. */
	public ArchiveSearch withHeader(String name, String value) {
		return new ArchiveSearch(this.queue, this.id, Objects.requireNonNull(name, "Header name must not be null"),
				Objects.requireNonNull(value, "Header value must not be null"), this.completedFrom,
				this.completedBefore, this.limit);
	}

	/** This search, for messages completed from {@code from} (inclusive) to {@code before}; either may be null. */
	public ArchiveSearch completedBetween(Instant from, Instant before) {
		return new ArchiveSearch(this.queue, this.id, this.headerName, this.headerValue, from, before, this.limit);
	}

	/** This search, returning at most {@code limit} messages. */
	public ArchiveSearch withLimit(int limit) {
		return new ArchiveSearch(this.queue, this.id, this.headerName, this.headerValue, this.completedFrom,
				this.completedBefore, limit);
	}

}
