package io.github.pgqueue;

import java.lang.reflect.Type;

/**
 * Converts payloads to the body stored in the {@code payload} column and back. A body is JSON,
 * or — for a content type such as {@value #TEXT_PLAIN} or {@value #APPLICATION_XML} — the text of
 * the body as one JSON string, with the content type in the header {@value #CONTENT_TYPE_HEADER}
 * (a message without it has a JSON body). Replace it to change how payloads are written; the
 * default is {@link JacksonPayloadConverter}, and {@link JaxbPayloadConverter} adds XML.
 */
public interface PayloadConverter {

	/** The header naming the content type of a body that is not JSON; absent for JSON. */
	String CONTENT_TYPE_HEADER = "pgqueue-content-type";

	/** The content type of a text body: a {@code String} payload. */
	String TEXT_PLAIN = "text/plain";

	/** The content type of an XML body. */
	String APPLICATION_XML = "application/xml";

	/**
	 * Writes {@code payload} as the JSON of its body: a JSON document, or for a payload whose
	 * {@link #contentType(Object)} is not null the text of the body as a JSON string.
	 * @throws PayloadConversionException if it cannot be written
	 */
	String write(Object payload);

	/**
	 * Reads the JSON body {@code json} as {@code type}.
	 * @throws PayloadConversionException if it cannot be read as that type
	 */
	Object read(String json, Type type);

	/**
	 * The content type {@link #write(Object)} gives {@code payload}, written into the header
	 * {@value #CONTENT_TYPE_HEADER}; null (the default) for JSON, which writes no header.
	 */
	default String contentType(Object payload) {
		return null;
	}

	/**
	 * Reads the body {@code json} of a message whose header {@value #CONTENT_TYPE_HEADER} is
	 * {@code contentType} (null for JSON) as {@code type}. The default ignores the content type:
	 * a text body is a JSON string, which {@link #read(String, Type)} reads as a {@code String}.
	 * @throws PayloadConversionException if it cannot be read as that type
	 */
	default Object read(String json, Type type, String contentType) {
		return read(json, type);
	}

}
