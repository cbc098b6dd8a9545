package io.github.pgqueue.boot.autoconfigure.dashboard;

import java.io.IOException;

import jakarta.servlet.http.HttpServletRequest;
import jakarta.servlet.http.HttpServletResponse;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import org.springframework.http.HttpMethod;
import org.springframework.web.servlet.HandlerInterceptor;

/**
 * Guards every request under the dashboard's path. With Spring Security present the user must be
 * authenticated and have the configured role, and a write must have passed Spring Security's CSRF
 * check (a write arriving where the application turned CSRF protection off is refused, not
 * trusted). Without Spring Security anyone who reaches the path is let in. In read-only mode
 * every write is refused.
 */
final class DashboardAccessInterceptor implements HandlerInterceptor {

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
			if (this.security && !CsrfTokens.checked(request)) {
				logger.warn("pgqueue dashboard: refused {} {}: Spring Security's CSRF protection is off for this path",
						request.getMethod(), request.getRequestURI());
				return refuse(response, HttpServletResponse.SC_FORBIDDEN,
						"CSRF protection is off for the pgqueue dashboard; its changes need it on");
			}
		}
		return true;
	}

	static boolean isWrite(HttpServletRequest request) {
		HttpMethod method = HttpMethod.valueOf(request.getMethod());
		return !(HttpMethod.GET.equals(method) || HttpMethod.HEAD.equals(method) || HttpMethod.OPTIONS.equals(method));
	}

	private static boolean refuse(HttpServletResponse response, int status, String message) throws IOException {
		response.setStatus(status);
		response.setContentType("application/json");
		response.setCharacterEncoding("UTF-8");
		response.getWriter().write("{\"error\":\"" + message + "\"}");
		return false;
	}

}
