package io.github.pgqueue.benchmarks;

/**
 * The tiny JSON payload every system carries: a sequence number, by which a handler finds when its
 * message was committed. Backlogs loaded in bulk carry {@code -1}.
 */
final class Payloads {

	/** The sequence number of messages that were not sent by a measured producer. */
	static final long UNTRACKED = -1;

	private Payloads() {
	}

	static String json(long n) {
		return "{\"n\": " + n + "}";
	}

	/** Reads {@code n} back from the JSON text, as PostgreSQL or the sender wrote it. */
	static long sequence(String json) {
		int colon = json.indexOf(':');
		int end = json.indexOf('}', colon);
		return Long.parseLong(json.substring(colon + 1, end).trim());
	}

}
