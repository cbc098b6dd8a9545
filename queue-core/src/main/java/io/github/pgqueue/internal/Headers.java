package io.github.pgqueue.internal;

import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.Map;

import io.github.pgqueue.PayloadConversionException;
import tools.jackson.core.JacksonException;
import tools.jackson.core.type.TypeReference;
import tools.jackson.databind.json.JsonMapper;

/** Headers to and from the {@code headers} jsonb column; values written by plain SQL may be any JSON. */
public final class Headers {

	private static final JsonMapper MAPPER = JsonMapper.builder().build();

	private static final TypeReference<Map<String, Object>> MAP = new TypeReference<>() {
	};

	private Headers() {
	}

	public static String write(Map<String, String> headers) {
		return headers.isEmpty() ? "{}" : MAPPER.writeValueAsString(headers);
	}

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
