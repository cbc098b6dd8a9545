package io.github.pgqueue;

import java.util.regex.Pattern;

/**
 * Validation of queue and schema names, the names that reach SQL: queue names travel as bind parameters, the schema
 * name is validated here once and then quoted into the statements.
 */
public final class QueueNames {

	/** The longest queue name; the schema's {@code queue_name} domain enforces the same. */
	public static final int MAX_LENGTH = 63;

	private static final Pattern QUEUE = Pattern.compile("[A-Za-z0-9_.-]{1," + MAX_LENGTH + "}");

	private static final Pattern SCHEMA = Pattern.compile("[a-z_][a-z0-9_]{0,62}");

	private QueueNames() {
	}

	/**
	 * Returns {@code name} if it is a valid queue name.
	 * @throws IllegalArgumentException naming the value and the rule it breaks
	 */
	public static String requireQueue(String name) {
		if (name == null) {
			throw new IllegalArgumentException("Queue name must not be null");
		}
		if (!QUEUE.matcher(name).matches()) {
			throw new IllegalArgumentException("Invalid queue name '" + printable(name)
					+ "': use 1 to " + MAX_LENGTH + " letters, digits, '_', '.' or '-'");
		}
		return name;
	}

	/**
	 * Returns {@code schema} if it is a valid schema name.
	 * @throws IllegalArgumentException naming the value and the rule it breaks
	 */
	public static String requireSchema(String schema) {
		if (schema == null || !SCHEMA.matcher(schema).matches()) {
			throw new IllegalArgumentException("Invalid pgqueue schema name '" + printable(schema)
					+ "': use 1 to 63 lower-case letters, digits or '_', starting with a letter or '_'");
		}
		return schema;
	}

	/**
	 * The dead-letter queue of {@code queue} when none is configured: {@code <queue>.dlq}; when
	 * that would pass {@value #MAX_LENGTH} characters, the first 50 characters, {@code -}, the first
	 * 8 hex digits of the name's MD5 and {@code .dlq}, so that two long names never share one and
	 * no name is its own (the schema's {@code default_dead_letter_queue} computes the same).
	 */
	public static String defaultDeadLetterQueue(String queue) {
		if (queue.length() <= MAX_LENGTH - 4) {
			return queue + ".dlq";
		}
		try {
			byte[] digest = java.security.MessageDigest.getInstance("MD5")
				.digest(queue.getBytes(java.nio.charset.StandardCharsets.UTF_8));
			return queue.substring(0, 50) + "-" + java.util.HexFormat.of().formatHex(digest, 0, 4) + ".dlq";
		}
		catch (java.security.NoSuchAlgorithmException ex) {
			throw new IllegalStateException("MD5 is required of every Java platform", ex);
		}
	}

	private static String printable(String value) {
		if (value == null) {
			return "null";
		}
		String shown = (value.length() > 80) ? value.substring(0, 80) + "...(" + value.length() + " chars)" : value;
		return shown.replace("\n", "\\n").replace("\r", "\\r");
	}

}
