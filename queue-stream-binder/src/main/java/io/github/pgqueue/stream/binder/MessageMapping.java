package io.github.pgqueue.stream.binder;

import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Base64;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Set;
import java.util.UUID;

import io.github.pgqueue.PayloadConverter;
import io.github.pgqueue.QueueMessage;
import tools.jackson.core.JacksonException;
import tools.jackson.databind.JsonNode;
import tools.jackson.databind.json.JsonMapper;

import org.springframework.messaging.Message;
import org.springframework.messaging.MessageHeaders;
import org.springframework.messaging.support.GenericMessage;
import org.springframework.messaging.support.MessageBuilder;
import org.springframework.util.InvalidMimeTypeException;
import org.springframework.util.MimeType;
import org.springframework.util.MimeTypeUtils;

/**
 * How a Spring message becomes a pgqueue message and back. A body the binder gets as bytes is
 * stored as what it is, so that SQL, the dashboard and {@code @QueueListener} can read it: JSON as
 * the JSON document, text (and the bare text of a String sent as JSON) as text, anything else as
 * Base64 text marked by the header {@value #ENCODING_HEADER}. The consumer gets the same bytes back. Headers travel as text; Spring's own (id, timestamp,
 * channels) and pgqueue's received-message headers do not travel.
 */
final class MessageMapping {

	/** Marks a body stored as Base64 text; its value is {@code base64}. */
	static final String ENCODING_HEADER = "pgqueue-binder-encoding";

	private static final String BASE64 = "base64";

	private static final Set<String> NOT_CARRIED = Set.of(MessageHeaders.ID, MessageHeaders.TIMESTAMP,
			MessageHeaders.REPLY_CHANNEL, MessageHeaders.ERROR_CHANNEL, "deliveryAttempt", "sourceData",
			PgQueueBinderHeaders.PRIORITY, PgQueueBinderHeaders.DELAY, PgQueueBinderHeaders.ID,
			PgQueueBinderHeaders.QUEUE, PgQueueBinderHeaders.ATTEMPT, PgQueueBinderHeaders.BATCH_HEADERS);

	private final JsonMapper mapper = JsonMapper.builder().build();

	/**
	 * Reads a binding's payloads as the JSON text they are stored as, unparsed: the binding's own
	 * converters read the body once, into the function's type, so pgqueue does not parse it first.
	 */
	static final PayloadConverter STORED_TEXT = new PayloadConverter() {

		@Override
		public String write(Object payload) {
			throw new UnsupportedOperationException("This converter only reads the bodies of a binding's messages");
		}

		@Override
		public Object read(String json, java.lang.reflect.Type type) {
			if (json.equals("null")) {
				// sends refuse null payloads; a JSON null can only come from plain SQL
				throw new io.github.pgqueue.PayloadConversionException("Cannot read payload: it is JSON null", null);
			}
			return json;
		}

	};

	/** What is sent: the body for the payload converter and the headers. */
	record Outbound(Object body, Map<String, String> headers) {
	}

	Outbound toOutbound(Message<?> message) {
		Map<String, String> headers = new LinkedHashMap<>();
		message.getHeaders().forEach((name, value) -> {
			String text = headerText(name, value);
			if (text != null) {
				headers.put(name, text);
			}
		});
		String contentType = headers.get(MessageHeaders.CONTENT_TYPE);
		Object payload = message.getPayload();
		if (!(payload instanceof byte[] bytes)) {
			// native encoding, or a String: pgqueue's payload converter writes it
			return new Outbound(payload, headers);
		}
		if (contentType == null) {
			JsonNode json = jsonOrNull(bytes);
			if (json != null) {
				return new Outbound(json, headers);
			}
		}
		else if (isJson(contentType)) {
			JsonNode json = jsonOrNull(bytes);
			if (json != null) {
				return new Outbound(json, headers);
			}
			// a String sent as application/json is its bare text, not a JSON string: kept as text
		}
		String text = (isText(contentType) || isJson(contentType)) ? utf8OrNull(bytes) : null;
		if (text != null) {
			return new Outbound(text, headers);
		}
		headers.put(ENCODING_HEADER, BASE64);
		return new Outbound(Base64.getEncoder().encodeToString(bytes), headers);
	}

	/** The message a binding receives: its payload as bytes, its headers, pgqueue's headers added. */
	Message<byte[]> toMessage(QueueMessage<?> received) {
		// the headers are copied once, into the message's own (a builder would copy them twice more)
		return new GenericMessage<>(body((String) received.payload(), received.headers()), headers(received));
	}

	/**
	 * The headers of {@code received} as the binding sees them. The content type is a
	 * {@link MimeType}, which Spring Cloud Stream would otherwise parse from the text for each
	 * message; without one the body is JSON.
	 */
	Map<String, Object> headers(QueueMessage<?> received) {
		Map<String, String> stored = received.headers();
		Map<String, Object> headers = new HashMap<>(stored.size() + 6);
		stored.forEach((name, value) -> {
			if (value != null && !name.equals(ENCODING_HEADER)) {
				headers.put(name, value);
			}
		});
		Object contentType = headers.get(MessageHeaders.CONTENT_TYPE);
		if (contentType == null) {
			String pgContentType = stored.get(PayloadConverter.CONTENT_TYPE_HEADER);
			contentType = (pgContentType != null) ? pgContentType : MimeTypeUtils.APPLICATION_JSON;
		}
		headers.put(MessageHeaders.CONTENT_TYPE, mimeType(contentType));
		headers.put(PgQueueBinderHeaders.ID, received.id());
		headers.put(PgQueueBinderHeaders.QUEUE, received.queue());
		headers.put(PgQueueBinderHeaders.ATTEMPT, received.attempt());
		return headers;
	}

	/** A stored content type as a {@link MimeType} (parsed through Spring's cache), or as it is if it does not parse. */
	private static Object mimeType(Object contentType) {
		if (contentType instanceof String text) {
			try {
				return MimeTypeUtils.parseMimeType(text);
			}
			catch (InvalidMimeTypeException ex) {
				return text; // handed on as it was sent: the binding's converters report it
			}
		}
		return contentType;
	}

	/** One message of the messages of a batch: the payloads, the shared headers of the first, each one's headers. */
	Message<List<byte[]>> toBatchMessage(List<? extends QueueMessage<?>> received) {
		List<byte[]> payloads = new ArrayList<>(received.size());
		List<Map<String, Object>> each = new ArrayList<>(received.size());
		for (QueueMessage<?> message : received) {
			payloads.add(body((String) message.payload(), message.headers()));
			each.add(headers(message));
		}
		Map<String, Object> first = new LinkedHashMap<>(each.get(0));
		first.remove(PgQueueBinderHeaders.ID);
		first.remove(PgQueueBinderHeaders.ATTEMPT);
		return MessageBuilder.withPayload(payloads)
			.copyHeaders(first)
			.setHeader(PgQueueBinderHeaders.BATCH_HEADERS, each)
			.build();
	}

	private static String utf8OrNull(byte[] bytes) {
		try {
			return StandardCharsets.UTF_8.newDecoder().decode(java.nio.ByteBuffer.wrap(bytes)).toString();
		}
		catch (java.nio.charset.CharacterCodingException ex) {
			return null; // not text after all: kept as Base64
		}
	}

	private JsonNode jsonOrNull(byte[] bytes) {
		try {
			return this.mapper.readTree(bytes);
		}
		catch (JacksonException ex) {
			return null; // bytes without a content type that are not JSON: kept as Base64
		}
	}

	/**
	 * The bytes of a stored body, {@code json} as PostgreSQL gives it: a text or Base64 body is a
	 * JSON string, decoded; JSON is handed on as its text.
	 */
	private byte[] body(String json, Map<String, String> headers) {
		boolean base64 = BASE64.equals(headers.get(ENCODING_HEADER));
		if ((base64 || headers.get(PayloadConverter.CONTENT_TYPE_HEADER) != null) && json.startsWith("\"")) {
			String text = this.mapper.readValue(json, String.class);
			return base64 ? Base64.getDecoder().decode(text) : text.getBytes(StandardCharsets.UTF_8);
		}
		return json.getBytes(StandardCharsets.UTF_8);
	}

	private static String headerText(String name, Object value) {
		if (value == null || NOT_CARRIED.contains(name) || name.startsWith("pgqueue-")) {
			return null;
		}
		if (value instanceof String || value instanceof Number || value instanceof Boolean
				|| value instanceof Character || value instanceof UUID || value instanceof MimeType
				|| value instanceof Enum<?>) {
			return value.toString();
		}
		return null; // channels, byte arrays and other objects do not travel, as with Spring's header mappers
	}

	static boolean isJson(String contentType) {
		String type = mediaType(contentType);
		return type != null && (type.equals("application/json") || type.endsWith("+json"));
	}

	static boolean isText(String contentType) {
		String type = mediaType(contentType);
		return type != null && (type.startsWith("text/") || type.equals("application/xml") || type.endsWith("+xml"));
	}

	private static String mediaType(String contentType) {
		if (contentType == null || contentType.isBlank()) {
			return null;
		}
		int parameters = contentType.indexOf(';');
		return ((parameters < 0) ? contentType : contentType.substring(0, parameters)).trim().toLowerCase(Locale.ROOT);
	}

}
