package io.github.pgqueue.boot.autoconfigure.dashboard;

import java.util.Map;

import jakarta.servlet.http.HttpServletRequest;

import org.springframework.security.web.csrf.CsrfToken;

/**
 * Spring Security's CSRF token of a request, for the dashboard's script to send back with its
 * writes. Loaded only when Spring Security is on the class path.
 */
final class CsrfTokens {

	private CsrfTokens() {
	}

	/** Whether Spring Security's CSRF filter handled the request (it rejects a bad token before us). */
	static boolean checked(HttpServletRequest request) {
		return request.getAttribute(CsrfToken.class.getName()) instanceof CsrfToken;
	}

	/** The header name and token, or an empty map when no CSRF filter handled the request. */
	static Map<String, String> of(HttpServletRequest request) {
		if (request.getAttribute(CsrfToken.class.getName()) instanceof CsrfToken token) {
			return Map.of("headerName", token.getHeaderName(), "token", token.getToken());
		}
		return Map.of();
	}

}
