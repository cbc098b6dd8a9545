package io.github.pgqueue;

import java.lang.reflect.Type;

import tools.jackson.core.JacksonException;
import tools.jackson.databind.JavaType;
import tools.jackson.databind.json.JsonMapper;

/**
 * A {@link PayloadConverter} backed by a Jackson 3 {@link JsonMapper}. Payloads never carry
 * type information, so reading one never instantiates a class the JSON names: only the type the
 * listener declares is built.
 */
public final class JacksonPayloadConverter implements PayloadConverter {

	private final JsonMapper mapper;

	/** Uses a mapper with Jackson's defaults. */
	public JacksonPayloadConverter() {
		this(JsonMapper.builder().build());
	}

	public JacksonPayloadConverter(JsonMapper mapper) {
		this.mapper = mapper;
	}

	@Override
	public String write(Object payload) {
		if (payload == null) {
			throw new IllegalArgumentException("Payload must not be null");
		}
		try {
			return this.mapper.writeValueAsString(payload);
		}
		catch (JacksonException ex) {
			throw new PayloadConversionException("Cannot write payload of type " + payload.getClass().getName()
					+ " as JSON: " + ex.getOriginalMessage(), ex);
		}
	}

	@Override
	public Object read(String json, Type type) {
		JavaType javaType = this.mapper.getTypeFactory().constructType(type);
		Object payload;
		try {
			payload = this.mapper.readValue(json, javaType);
		}
		catch (JacksonException ex) {
			throw new PayloadConversionException("Cannot read payload as " + javaType.toCanonical() + ": "
					+ ex.getOriginalMessage(), ex);
		}
		if (payload == null) {
			// sends refuse null payloads; a JSON null can only come from plain SQL
			throw new PayloadConversionException("Cannot read payload as " + javaType.toCanonical()
					+ ": it is JSON null", null);
		}
		return payload;
	}

}
