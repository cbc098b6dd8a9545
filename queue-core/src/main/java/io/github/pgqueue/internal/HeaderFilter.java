package io.github.pgqueue.internal;

import java.math.BigDecimal;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Set;

import tools.jackson.databind.json.JsonMapper;

/**
 * A filter on message headers, parsed from a small language and turned into parameters, never into
 * SQL: {@code name = 'value'}, {@code name in ('a', 'b')}, and {@code and} of those. A name is
 * letters, digits, {@code _ . -} (starting with a letter or {@code _}) or any text in double
 * quotes; a value is a string in single quotes ({@code ''} for a quote) or a number. Keywords are
 * case-insensitive; a name appears at most once.
 * <p>
 * The filter is expanded into its alternatives, each a JSON object that a matching message's
 * headers contain (jsonb {@code @>}): {@code type = 'a' and region in ('eu', 'us')} is
 * {@code [{"type":"a","region":"eu"}, {"type":"a","region":"us"}]}. The claim tests
 * {@code headers @> ANY (alternatives)}, which the GIN index on headers answers.
 */
public final class HeaderFilter {

	/** The most alternatives a filter may expand to (the product of its sets' sizes). */
	public static final int MAX_ALTERNATIVES = 256;

	private static final JsonMapper MAPPER = JsonMapper.builder().build();

	private final String text;

	private final String[] documents;

	private HeaderFilter(String text, String[] documents) {
		this.text = text;
		this.documents = documents;
	}

	/**
	 * Parses {@code text}; null or blank means no filter (null is returned).
	 * @throws IllegalArgumentException naming the filter and what is wrong with it
	 */
	public static HeaderFilter parse(String text) {
		return parse(text, "");
	}

	/**
	 * Parses {@code text} as {@link #parse(String)} does, with {@code owner} (such as
	 * {@code " of listener 'x'"}) after the filter in error messages.
	 */
	public static HeaderFilter parse(String text, String owner) {
		if (text == null || text.isBlank()) {
			return null;
		}
		Map<String, List<Object>> conditions = new Parser(text, owner).parse();
		List<Map<String, Object>> alternatives = new ArrayList<>();
		alternatives.add(new LinkedHashMap<>());
		for (Map.Entry<String, List<Object>> condition : conditions.entrySet()) {
			if ((long) alternatives.size() * condition.getValue().size() > MAX_ALTERNATIVES) {
				throw new IllegalArgumentException("filter '" + text + "'" + owner + ": its sets allow more than " + MAX_ALTERNATIVES
						+ " combinations of values; use fewer values");
			}
			List<Map<String, Object>> expanded = new ArrayList<>();
			for (Map<String, Object> alternative : alternatives) {
				for (Object value : condition.getValue()) {
					Map<String, Object> next = new LinkedHashMap<>(alternative);
					next.put(condition.getKey(), value);
					expanded.add(next);
				}
			}
			alternatives = expanded;
		}
		return new HeaderFilter(text, alternatives.stream().map(MAPPER::writeValueAsString).toArray(String[]::new));
	}

	/** The filter as written. */
	public String text() {
		return this.text;
	}

	/** The JSON objects of the alternatives: a message matches if its headers contain one of them. */
	public String[] documents() {
		return this.documents.clone();
	}

	@Override
	public String toString() {
		return this.text;
	}

	/** A recursive-descent parser over the text: {@code condition ("and" condition)*}. */
	private static final class Parser {

		private final String text;

		private final String owner;

		private int pos;

		Parser(String text, String owner) {
			this.text = text;
			this.owner = owner;
		}

		Map<String, List<Object>> parse() {
			Map<String, List<Object>> conditions = new LinkedHashMap<>();
			do {
				skipSpace();
				int at = this.pos;
				String name = name();
				skipSpace();
				List<Object> values;
				if (peek() == '=') {
					this.pos++;
					values = List.of(value());
				}
				else if (keyword("in")) {
					values = set();
				}
				else {
					throw error("expected '=' or 'in' after header '" + name + "'");
				}
				if (conditions.put(name, values) != null) {
					this.pos = at;
					throw error("header '" + name + "' appears twice");
				}
				skipSpace();
			}
			while (keyword("and"));
			skipSpace();
			if (this.pos < this.text.length()) {
				throw error("expected 'and' or the end of the filter");
			}
			return conditions;
		}

		private List<Object> set() {
			skipSpace();
			expect('(');
			Set<Object> values = new LinkedHashSet<>();
			do {
				values.add(value());
				skipSpace();
			}
			while (accept(','));
			expect(')');
			return List.copyOf(values);
		}

		private String name() {
			if (peek() == '"') {
				this.pos++;
				int end = this.text.indexOf('"', this.pos);
				if (end < 0) {
					throw error("unterminated quoted header name");
				}
				String name = this.text.substring(this.pos, end);
				if (name.isEmpty()) {
					throw error("empty header name");
				}
				this.pos = end + 1;
				return name;
			}
			int start = this.pos;
			if (this.pos < this.text.length() && isNameStart(this.text.charAt(this.pos))) {
				while (this.pos < this.text.length() && isNamePart(this.text.charAt(this.pos))) {
					this.pos++;
				}
			}
			if (start == this.pos) {
				throw error("expected a header name");
			}
			return this.text.substring(start, this.pos);
		}

		private Object value() {
			skipSpace();
			char c = peek();
			if (c == '\'') {
				StringBuilder value = new StringBuilder();
				this.pos++;
				while (true) {
					if (this.pos >= this.text.length()) {
						throw error("unterminated string");
					}
					char next = this.text.charAt(this.pos++);
					if (next == '\'') {
						if (peek() != '\'') {
							return value.toString();
						}
						this.pos++;
					}
					value.append(next);
				}
			}
			int start = this.pos;
			while (this.pos < this.text.length() && "+-.0123456789eE".indexOf(this.text.charAt(this.pos)) >= 0) {
				this.pos++;
			}
			if (start == this.pos) {
				throw error("expected a value: a string in single quotes or a number");
			}
			String literal = this.text.substring(start, this.pos);
			try {
				return new BigDecimal(literal);
			}
			catch (NumberFormatException ex) {
				this.pos = start;
				throw error("'" + literal + "' is not a number");
			}
		}

		private boolean keyword(String word) {
			skipSpace();
			int end = this.pos + word.length();
			if (end <= this.text.length() && this.text.substring(this.pos, end).toLowerCase(Locale.ROOT).equals(word)
					&& (end == this.text.length() || !isNamePart(this.text.charAt(end)))) {
				this.pos = end;
				return true;
			}
			return false;
		}

		private boolean accept(char c) {
			skipSpace();
			if (peek() == c) {
				this.pos++;
				return true;
			}
			return false;
		}

		private void expect(char c) {
			if (!accept(c)) {
				throw error("expected '" + c + "'");
			}
		}

		private char peek() {
			return (this.pos < this.text.length()) ? this.text.charAt(this.pos) : '\0';
		}

		private void skipSpace() {
			while (this.pos < this.text.length() && Character.isWhitespace(this.text.charAt(this.pos))) {
				this.pos++;
			}
		}

		private IllegalArgumentException error(String what) {
			String where = (this.pos < this.text.length()) ? " at position " + (this.pos + 1) : " at its end";
			return new IllegalArgumentException("filter '" + this.text + "'" + this.owner + ": " + what + where);
		}

		private static boolean isNameStart(char c) {
			return Character.isLetter(c) || c == '_';
		}

		private static boolean isNamePart(char c) {
			return Character.isLetterOrDigit(c) || c == '_' || c == '.' || c == '-';
		}

	}

}
