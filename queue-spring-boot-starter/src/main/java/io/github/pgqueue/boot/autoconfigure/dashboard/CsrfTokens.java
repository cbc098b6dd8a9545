package io.github.pgqueue.boot.autoconfigure.dashboard;

import java.nio.charset.StandardCharsets;
import java.security.MessageDigest;
import java.util.Map;

import jakarta.servlet.http.HttpServletRequest;

import org.springframework.security.web.csrf.CsrfToken;
import org.springframework.security.web.csrf.CsrfTokenRequestAttributeHandler;
import org.springframework.security.web.csrf.CsrfTokenRequestHandler;
import org.springframework.security.web.csrf.DeferredCsrfToken;
import org.springframework.security.web.csrf.XorCsrfTokenRequestAttributeHandler;

/**
 * Spring Security's CSRF token of a request, for the dashboard's script to send back with its
 * writes, and the check of the token a write sent back. Loaded only when Spring Security is on the
 * class path.
 */
final class CsrfTokens {

	/** Token values as the page may send them: plain, or masked as Spring Security's default handler hands them out. */
	private static final CsrfTokenRequestHandler PLAIN = new CsrfTokenRequestAttributeHandler();

	private static final CsrfTokenRequestHandler MASKED = new XorCsrfTokenRequestAttributeHandler();

	private CsrfTokens() {
	}

	/** Whether Spring Security's CSRF filter saw the request (it is not in the chain where CSRF is disabled). */
	static boolean filtered(HttpServletRequest request) {
		return request.getAttribute(DeferredCsrfToken.class.getName()) instanceof DeferredCsrfToken;
	}

	/**
	 * Whether the request carries the CSRF token of its user's session (or cookie). Checked here, not
	 * left to the filter: an application that excludes the path from CSRF protection
	 * ({@code csrf.ignoringRequestMatchers}) still has the filter load the token, but nothing compares it.
	 */
	static boolean verified(HttpServletRequest request) {
		if (!(request.getAttribute(DeferredCsrfToken.class.getName()) instanceof DeferredCsrfToken deferred)) {
			return false;
		}
		CsrfToken expected = deferred.get();
		return same(expected.getToken(), PLAIN.resolveCsrfTokenValue(request, expected))
				|| same(expected.getToken(), MASKED.resolveCsrfTokenValue(request, expected));
	}

	private static boolean same(String expected, String actual) {
		return actual != null && MessageDigest.isEqual(expected.getBytes(StandardCharsets.UTF_8),
				actual.getBytes(StandardCharsets.UTF_8));
	}

	/** The header name and token, or an empty map when no CSRF filter handled the request. */
	static Map<String, String> of(HttpServletRequest request) {
		if (request.getAttribute(CsrfToken.class.getName()) instanceof CsrfToken token) {
			return Map.of("headerName", token.getHeaderName(), "token", token.getToken());
		}
		return Map.of();
	}

}
