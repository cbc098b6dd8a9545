package io.github.pgqueue.sample;

import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;

import io.github.pgqueue.QueueTemplate;
import org.junit.jupiter.api.Test;

import org.springframework.boot.web.server.context.WebServerApplicationContext;
import org.springframework.context.ConfigurableApplicationContext;

import static org.assertj.core.api.Assertions.assertThat;

/** The dashboard by default only shows: every write answers 403 and changes nothing. */
class DashboardReadOnlyTests {

	private final HttpClient http = HttpClient.newHttpClient();

	@Test
	void readOnlyDashboardShowsQueuesAndRefusesEveryWrite() throws Exception {
		try (ConfigurableApplicationContext context = SampleApplication.run("--server.port=0",
				"--sample.traffic-enabled=false", "--pgqueue.dashboard.read-only=true",
				"--pgqueue.queues.dashboard-idle.max-attempts=3")) {
			String base = "http://localhost:" + ((WebServerApplicationContext) context).getWebServer().getPort()
					+ "/pgqueue";
			QueueTemplate queues = context.getBean(QueueTemplate.class);
			long id = queues.send("dashboard-idle", "<b>waiting</b>");

			HttpResponse<String> session = send(get(base + "/api/session"));
			assertThat(session.statusCode()).isEqualTo(200);
			assertThat(session.body()).contains("\"readOnly\":true").contains("\"user\":\"anonymous\"");
			HttpResponse<String> page = send(get(base + "/"));
			assertThat(page.statusCode()).isEqualTo(200);
			assertThat(page.headers().firstValue("Content-Security-Policy")).hasValueSatisfying(
					(csp) -> assertThat(csp).contains("default-src 'self'"));
			assertThat(send(get(base + "/static/dashboard.js")).body()).contains("textContent");
			assertThat(send(get(base + "/api/queue?name=dashboard-idle")).body()).contains("\"id\":" + id);

			for (String write : new String[] { "/api/queue/cancel?name=dashboard-idle&id=" + id,
					"/api/dead-letters/delete?queue=dashboard-idle&id=" + id, "/api/listeners/stop?id=emails" }) {
				HttpResponse<String> refused = send(post(base + write, ""));
				assertThat(refused.statusCode()).as(write).isEqualTo(403);
				assertThat(refused.body()).contains("read-only");
			}
			assertThat(send(post(base + "/api/dead-letters/redrive", "{\"origin\":\"emails\"}")).statusCode())
				.isEqualTo(403);
			assertThat(queues.stats("dashboard-idle").ready()).isEqualTo(1);
			assertThat(context.getBean(io.github.pgqueue.listener.QueueListenerEndpointRegistry.class)
				.getListenerContainer("emails")
				.isRunning()).isTrue();
		}
	}

	private static HttpRequest get(String url) {
		return HttpRequest.newBuilder(URI.create(url)).GET().build();
	}

	private static HttpRequest post(String url, String json) {
		return HttpRequest.newBuilder(URI.create(url))
			.header("Content-Type", "application/json")
			.POST(HttpRequest.BodyPublishers.ofString(json))
			.build();
	}

	private HttpResponse<String> send(HttpRequest request) throws Exception {
		return this.http.send(request, HttpResponse.BodyHandlers.ofString());
	}

}
