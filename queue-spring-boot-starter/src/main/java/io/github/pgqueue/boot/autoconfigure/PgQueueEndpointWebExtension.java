package io.github.pgqueue.boot.autoconfigure;

import java.util.LinkedHashMap;
import java.util.Map;

import org.jspecify.annotations.Nullable;

import org.springframework.boot.actuate.endpoint.InvalidEndpointRequestException;
import org.springframework.boot.actuate.endpoint.annotation.Selector;
import org.springframework.boot.actuate.endpoint.annotation.WriteOperation;
import org.springframework.boot.actuate.endpoint.web.WebEndpointResponse;
import org.springframework.boot.actuate.endpoint.web.annotation.EndpointWebExtension;

/**
 * The {@code pgqueue} endpoint's write over HTTP: a request it refuses (an unknown action or
 * queue, no action) answers 400 with the reason in the body. Left to Boot, the refusal would go
 * to the error page, whose body leaves the reason out unless
 * {@code spring.web.error.include-message} says otherwise.
 */
@EndpointWebExtension(endpoint = PgQueueEndpoint.class)
public class PgQueueEndpointWebExtension {

	private final PgQueueEndpoint endpoint;

	public PgQueueEndpointWebExtension(PgQueueEndpoint endpoint) {
		this.endpoint = endpoint;
	}

	/**
	 * Acts on one queue as {@link PgQueueEndpoint#queue} does; a refused request answers 400 with
	 * {@code {"queue", "action", "error"}}. The action may be missing here, so that its absence is
	 * answered the same way rather than by Boot's bare 400.
	 */
	@WriteOperation
	public WebEndpointResponse<Map<String, Object>> queue(@Selector String queue, @Nullable String action,
			@Nullable Integer max, @Nullable Long id) {
		try {
			return new WebEndpointResponse<>(this.endpoint.queue(queue, action, max, id));
		}
		catch (InvalidEndpointRequestException ex) {
			Map<String, Object> body = new LinkedHashMap<>();
			body.put("queue", queue);
			body.put("action", action);
			body.put("error", ex.getMessage());
			return new WebEndpointResponse<>(body, WebEndpointResponse.STATUS_BAD_REQUEST);
		}
	}

}
