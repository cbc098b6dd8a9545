package io.github.pgqueue.reliability;

import java.util.LinkedHashMap;
import java.util.Map;

/**
 * Messages written with plain SQL, as any language or psql could: the payload exactly as given,
 * and the key in a {@code chaos-key} header since the payload may not have one.
 */
final class RawMessages {

	private final ChaosDatabase database;

	private final String queue;

	private final Map<Long, String> sent = new LinkedHashMap<>();

	RawMessages(ChaosDatabase database, String queue) {
		this.database = database;
		this.queue = queue;
	}

	/** Inserts one message whose payload is the JSON text {@code json}. */
	void insert(long key, String json) {
		this.database.jdbc().update("INSERT INTO pgqueue.message (queue, payload, headers) "
				+ "VALUES (?, ?::jsonb, jsonb_build_object('chaos-key', ?::text))", this.queue, json, key);
		this.sent.put(key, json);
	}

	/** Inserts a good job, the kind the producer sends. */
	void insertJob(long key) {
		insert(key, "{\"key\": " + key + ", \"workMillis\": 1}");
	}

	/** The keys inserted, with their payloads. */
	Map<Long, String> sent() {
		return this.sent;
	}

}
