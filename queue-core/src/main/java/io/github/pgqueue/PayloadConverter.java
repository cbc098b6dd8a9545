package io.github.pgqueue;

import java.lang.reflect.Type;

/**
 * Converts payloads to the JSON stored in the {@code payload} column and back. Replace it to
 * change how payloads are written; the default is {@link JacksonPayloadConverter}.
 */
public interface PayloadConverter {

	/**
	 * Writes {@code payload} as a JSON document.
	 * @throws PayloadConversionException if it cannot be written
	 */
	String write(Object payload);

	/**
	 * Reads {@code json} as {@code type}.
	 * @throws PayloadConversionException if it cannot be read as that type
	 */
	Object read(String json, Type type);

}
