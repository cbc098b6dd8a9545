package io.github.pgqueue;

import java.lang.reflect.Type;

import tools.jackson.core.JacksonException;
import tools.jackson.databind.JavaType;
import tools.jackson.databind.json.JsonMapper;

/**
 * A {@link PayloadConverter} backed by a Jackson 3 {@link JsonMapper}. Payloads never carry
 * type information, so reading one never instantiates a class the JSON names: only the type the
 * listener declares is built. A {@code String} payload is a {@value PayloadConverter#TEXT_PLAIN}
 * body; a text or XML body is read as a {@code String} (an XML body as anything else needs an
 * XML converter such as {@link JaxbPayloadConverter}).
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
	public String contentType(Object payload) {
		return (payload instanceof String) ? TEXT_PLAIN : null;
	}

	@Override
	public Object read(String json, Type type, String contentType) {
		if (TextBodies.isXml(contentType) && type != String.class && type != Object.class) {
			throw new PayloadConversionException("Cannot read " + contentType + " body as " + type.getTypeName()
					+ ": this converter reads XML bodies only as String; use an XML converter (JaxbPayloadConverter, "
					+ "chosen by the starter when JAXB is on the classpath)", null);
		}
		return read(json, type);
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
