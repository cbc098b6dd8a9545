package io.github.pgqueue;

import java.util.Locale;

import tools.jackson.core.JacksonException;
import tools.jackson.databind.JsonNode;
import tools.jackson.databind.json.JsonMapper;

/** Bodies that are text (plain text, XML): kept in the jsonb column as one JSON string. */
final class TextBodies {

	private static final JsonMapper MAPPER = JsonMapper.builder().build();

	private TextBodies() {
	}

	/** Whether {@code contentType} (parameters such as {@code ;charset=} ignored) is an XML type. */
	static boolean isXml(String contentType) {
		String type = mediaType(contentType);
		return type != null && (type.equals(PayloadConverter.APPLICATION_XML) || type.equals("text/xml")
				|| type.endsWith("+xml"));
	}

	/** Whether {@code contentType} is a type a {@code String} payload may be sent as: text or XML. */
	static boolean isText(String contentType) {
		String type = mediaType(contentType);
		return type != null && (type.startsWith("text/") || isXml(type));
	}

	private static String mediaType(String contentType) {
		if (contentType == null) {
			return null;
		}
		int parameters = contentType.indexOf(';');
		return ((parameters < 0) ? contentType : contentType.substring(0, parameters)).trim()
			.toLowerCase(Locale.ROOT);
	}

	/** The JSON string holding {@code text}. */
	static String toJson(String text) {
		return MAPPER.writeValueAsString(text);
	}

	/**
	 * The text a body of {@code contentType} holds.
	 * @throws PayloadConversionException if the body is not one JSON string
	 */
	static String fromJson(String json, String contentType) {
		JsonNode node;
		try {
			node = MAPPER.readTree(json);
		}
		catch (JacksonException ex) {
			throw new PayloadConversionException("Cannot read " + contentType + " body: it is not valid JSON: "
					+ ex.getOriginalMessage(), ex);
		}
		if (node == null || !node.isString()) {
			throw new PayloadConversionException("Cannot read " + contentType + " body: the payload column must hold "
					+ "its text as one JSON string, but holds a JSON " + ((node != null) ? node.getNodeType() : "null")
					.toString().toLowerCase(Locale.ROOT), null);
		}
		return node.stringValue();
	}

}
