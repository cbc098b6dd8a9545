package io.github.pgqueue;

import java.util.List;
import java.util.Objects;
import java.util.regex.Pattern;

/**
 * An exchange and its bindings: {@link QueueOperations#publish} sends one message to every bound
 * queue whose binding matches the routing key.
 * @param name the exchange (same rules as a queue name)
 * @param type how routing keys are matched
 * @param bindings the queues it routes to
 * @param unroutable what a publish that matches no binding does
 */
public record ExchangeDefinition(String name, Type type, List<Binding> bindings, Unroutable unroutable) {

	private static final Pattern TOPIC_WORD = Pattern.compile("[A-Za-z0-9_-]+|\\*|#");

	/** An exchange that drops what matches no binding. */
	public ExchangeDefinition(String name, Type type, List<Binding> bindings) {
		this(name, type, bindings, Unroutable.DROP);
	}

	public ExchangeDefinition {
		QueueNames.requireQueue(name);
		Objects.requireNonNull(type, () -> "Exchange '" + name + "' needs a type: fanout, direct or topic");
		Objects.requireNonNull(unroutable, () -> "Exchange '" + name + "' needs an unroutable policy: drop or fail");
		bindings = List.copyOf(Objects.requireNonNull(bindings, "bindings"));
		for (Binding binding : bindings) {
			binding.keyRegex(type, name);
		}
	}

	/** What a publish that matches no binding does. */
	public enum Unroutable {

		/** Nothing is inserted; the publish returns 0 and counts the message as unroutable. */
		DROP,

		/** The publish fails with {@link UnroutableMessageException} (and counts it as unroutable). */
		FAIL

	}

	/** How an exchange matches routing keys. */
	public enum Type {

		/** Every bound queue gets every message; routing keys are ignored. */
		FANOUT,

		/** A queue gets the message when its binding's key equals the routing key. */
		DIRECT,

		/**
		 * A queue gets the message when its binding's pattern matches the routing key: words separated
		 * by {@code .}, {@code *} stands for exactly one word, {@code #} for zero or more.
		 */
		TOPIC

	}

	/**
	 * One queue bound to the exchange.
	 * @param queue the queue messages are sent to
	 * @param routingKey the key (direct) or pattern (topic); ignored for fanout, may be empty
	 */
	public record Binding(String queue, String routingKey) {

		public Binding {
			QueueNames.requireQueue(queue);
			routingKey = (routingKey != null) ? routingKey : "";
			if (routingKey.length() > 255) {
				throw new IllegalArgumentException("Routing key of the binding to queue '" + queue
						+ "' is longer than 255 characters");
			}
		}

		/**
		 * The binding as an anchored regular expression over the routing key's words, each with a
		 * '.' before it (the empty key has no word, so it is the empty string; {@code a..b} has three,
		 * the middle one empty): the form the publish statement matches with PostgreSQL's {@code ~}.
		 * Topic patterns follow AMQP 0-9-1: {@code *} is exactly one word, {@code #} zero or more.
		 */
		public String keyRegex(Type type, String exchange) {
			return switch (type) {
				case FANOUT -> "";
				case DIRECT -> "^" + (this.routingKey.isEmpty() ? "" : "\\." + literal(this.routingKey)) + "$";
				case TOPIC -> topicRegex(exchange);
			};
		}

		private String topicRegex(String exchange) {
			StringBuilder regex = new StringBuilder("^");
			for (String word : this.routingKey.split("\\.", -1)) {
				if (!TOPIC_WORD.matcher(word).matches()) {
					throw new IllegalArgumentException("Topic pattern '" + this.routingKey + "' of exchange '" + exchange
							+ "' (binding to queue '" + this.queue + "') has an invalid word '" + word
							+ "': use words of letters, digits, '_' or '-', '*' or '#', separated by '.'");
				}
				regex.append(switch (word) {
					case "*" -> "\\.[^.]*";
					case "#" -> "(\\.[^.]*)*";
					default -> "\\." + literal(word);
				});
			}
			return regex.append('$').toString();
		}

		/**
		 * {@code text} as a regular expression matching itself: ASCII characters other than
		 * letters and digits get a backslash (in PostgreSQL's regular expressions a backslash
		 * before one of those is that character); every other code point, emoji included, stands
		 * for itself as a whole (escaping half of a surrogate pair would break it).
		 */
		private static String literal(String text) {
			StringBuilder escaped = new StringBuilder();
			text.codePoints().forEach((codePoint) -> {
				if (codePoint < 128 && !Character.isLetterOrDigit(codePoint)) {
					escaped.append('\\');
				}
				escaped.appendCodePoint(codePoint);
			});
			return escaped.toString();
		}

	}

}
