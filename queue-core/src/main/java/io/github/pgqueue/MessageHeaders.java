package io.github.pgqueue;

import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.Map;

import tools.jackson.core.JacksonException;
import tools.jackson.core.type.TypeReference;
import tools.jackson.databind.json.JsonMapper;

/**
 * A message's headers as the {@code headers} jsonb column holds them: a JSON object whose values
 * are read as strings (a row inserted by plain SQL may hold numbers, booleans or {@code null}).
 * For code that reads message rows itself, such as test support.
 */
public final class MessageHeaders {

	private static final JsonMapper MAPPER = JsonMapper.builder().build();

	private static final TypeReference<Map<String, Object>> MAP = new TypeReference<>() {
	};

	private MessageHeaders() {
	}

	static String write(Map<String, String> headers) {
		return headers.isEmpty() ? "{}" : MAPPER.writeValueAsString(headers);
	}

	/**
	 * The headers in {@code json}, the text of a {@code headers} column, in their order there;
	 * empty for {@code null}.
	 * @throws PayloadConversionException if {@code json} is not a JSON object
	 */
	public static Map<String, String> read(String json) {
		if (json == null || json.equals("{}")) {
			return Map.of();
		}
		try {
			Map<String, Object> raw = MAPPER.readValue(json, MAP);
			Map<String, String> headers = new LinkedHashMap<>();
			raw.forEach((name, value) -> headers.put(name, (value != null) ? String.valueOf(value) : null));
			return Collections.unmodifiableMap(headers);
		}
		catch (JacksonException ex) {
			throw new PayloadConversionException("Cannot read message headers as a JSON object: "
					+ ex.getOriginalMessage(), ex);
		}
	}

}
