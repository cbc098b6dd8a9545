package io.github.pgqueue.boot.autoconfigure.dashboard;

import org.springframework.http.MediaType;
import org.springframework.test.web.servlet.request.RequestPostProcessor;

/** A write as the dashboard's script sends it: a JSON body and the dashboard's request header. */
final class DashboardWrites {

	private DashboardWrites() {
	}

	/** The header and the JSON content type, with an empty object as the body unless one is set. */
	static RequestPostProcessor fromThePage() {
		return (request) -> {
			request.addHeader("X-PgQueue-Request", "dashboard");
			request.setContentType(MediaType.APPLICATION_JSON_VALUE);
			if (request.getContentLength() <= 0) {
				request.setContent("{}".getBytes());
			}
			return request;
		};
	}

}
