package io.github.pgqueue.boot.autoconfigure.dashboard;

import java.io.IOException;

import jakarta.servlet.http.HttpServletRequest;
import jakarta.servlet.http.HttpServletResponse;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import org.springframework.http.HttpMethod;
import org.springframework.http.InvalidMediaTypeException;
import org.springframework.http.MediaType;
import org.springframework.web.servlet.HandlerInterceptor;

/**
 * Guards every request under the dashboard's path. With Spring Security present the user must be
 * authenticated and have the configured role. A write must carry what a page of another site
 * cannot make a browser send: the {@value #REQUEST_HEADER} header and a JSON body; with Spring
 * Security it must also carry the user's CSRF token, checked here even where the application
 * excluded the path from CSRF protection, and refused where the application turned CSRF protection
 * off. Without Spring Security anyone who reaches the path is let in. In read-only mode every write
 * is refused.
 */
final class DashboardAccessInterceptor implements HandlerInterceptor {

	/**
	 * The header the dashboard's script sends with every write. A cross-site form cannot send a
	 * header, and a script of another origin can only after a CORS preflight the application allows.
	 */
	static final String REQUEST_HEADER = "X-PgQueue-Request";

	private static final Logger logger = LoggerFactory.getLogger(DashboardAccessInterceptor.class);

	private final boolean readOnly;

	private final String role;

	private final boolean security;

	DashboardAccessInterceptor(boolean readOnly, String role, boolean security) {
		this.readOnly = readOnly;
		this.role = role;
		this.security = security;
	}

	@Override
	public boolean preHandle(HttpServletRequest request, HttpServletResponse response, Object handler)
			throws IOException {
		if (this.security) {
			if (request.getUserPrincipal() == null) {
				return refuse(response, HttpServletResponse.SC_UNAUTHORIZED, "Sign in to see the pgqueue dashboard");
			}
			if (!request.isUserInRole(this.role)) {
				logger.warn("pgqueue dashboard: {} lacks role {} for {} {}", request.getUserPrincipal().getName(),
						this.role, request.getMethod(), request.getRequestURI());
				return refuse(response, HttpServletResponse.SC_FORBIDDEN,
						"The pgqueue dashboard needs role " + this.role);
			}
		}
		if (isWrite(request)) {
			if (this.readOnly) {
				return refuse(response, HttpServletResponse.SC_FORBIDDEN,
						"The pgqueue dashboard is read-only (pgqueue.dashboard.read-only=false allows changes)");
			}
			String header = request.getHeader(REQUEST_HEADER);
			if (header == null || header.isBlank()) {
				logger.warn("pgqueue dashboard: refused {} {}: no {} header (not sent by the dashboard's page)",
						request.getMethod(), request.getRequestURI(), REQUEST_HEADER);
				return refuse(response, HttpServletResponse.SC_FORBIDDEN,
						"A pgqueue dashboard change needs the " + REQUEST_HEADER + " header, which its page sends");
			}
			// 415, not 403: the sender is the dashboard's kind of client, and the body is in a format the
			// API does not take (a cross-site form can only send form or text bodies).
			if (!isJson(request.getContentType())) {
				return refuse(response, HttpServletResponse.SC_UNSUPPORTED_MEDIA_TYPE,
						"A pgqueue dashboard change needs a JSON body (Content-Type: application/json)");
			}
			if (this.security && !CsrfTokens.filtered(request)) {
				logger.warn("pgqueue dashboard: refused {} {}: Spring Security's CSRF protection is off for this path",
						request.getMethod(), request.getRequestURI());
				return refuse(response, HttpServletResponse.SC_FORBIDDEN,
						"CSRF protection is off for the pgqueue dashboard; its changes need it on");
			}
			if (this.security && !CsrfTokens.verified(request)) {
				logger.warn("pgqueue dashboard: refused {} {}: no valid CSRF token", request.getMethod(),
						request.getRequestURI());
				return refuse(response, HttpServletResponse.SC_FORBIDDEN,
						"A pgqueue dashboard change needs the CSRF token its page reads from api/session");
			}
		}
		return true;
	}

	static boolean isWrite(HttpServletRequest request) {
		HttpMethod method = HttpMethod.valueOf(request.getMethod());
		return !(HttpMethod.GET.equals(method) || HttpMethod.HEAD.equals(method) || HttpMethod.OPTIONS.equals(method));
	}

	private static boolean isJson(String contentType) {
		if (contentType == null) {
			return false;
		}
		try {
			return MediaType.APPLICATION_JSON.equalsTypeAndSubtype(MediaType.parseMediaType(contentType));
		}
		catch (InvalidMediaTypeException ex) {
			// a Content-Type that does not parse is not application/json: refused as any other
			return false;
		}
	}

	private static boolean refuse(HttpServletResponse response, int status, String message) throws IOException {
		response.setStatus(status);
		response.setContentType("application/json");
		response.setCharacterEncoding("UTF-8");
		response.getWriter().write("{\"error\":\"" + message + "\"}");
		return false;
	}

}
