package io.github.pgqueue;

/** What {@link QueueOperations#cancel(String, long)} did. */
public enum CancelResult {

	/** The message was waiting and is now deleted: no consumer will see it. */
	REMOVED,

	/** A consumer holds the message right now; it was left alone and may still be processed. */
	HELD,

	/** No such message in that queue: already processed, cancelled, or never sent there. */
	NOT_FOUND

}
