package io.github.pgqueue.sample;

import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.time.Duration;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;

import org.springframework.boot.test.system.CapturedOutput;
import org.springframework.boot.test.system.OutputCaptureExtension;
import org.springframework.boot.web.server.context.WebServerApplicationContext;
import org.springframework.context.ConfigurableApplicationContext;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

/** Starts the sample exactly as its run command does, on an embedded PostgreSQL, and follows the demo flow. */
@ExtendWith(OutputCaptureExtension.class)
class SampleApplicationTests {

	private final HttpClient http = HttpClient.newHttpClient();

	@Test
	void ordersAreBilledEmailedRetriedAndDeadLetteredAndTheEndpointsShowIt() throws Exception {
		try (ConfigurableApplicationContext context = SampleApplication.run("--server.port=0",
				"--sample.traffic-interval=100ms", "--sample.bounce-every=5", "--sample.email-failure-rate=0.3",
				"--pgqueue.queues.emails.backoff.initial=50ms", "--pgqueue.queues.emails.backoff.max=200ms",
				"--sample.progress-interval=1s")) {
			String base = "http://localhost:" + ((WebServerApplicationContext) context).getWebServer().getPort();

			String placed = post(base + "/orders",
					"{\"id\":\"t-1\",\"item\":\"tea\",\"quantity\":2,\"amount\":9.50,\"email\":\"t@bounce.example\"}");
			assertThat(placed).contains("\"id\":\"t-1\"");

			await().atMost(Duration.ofSeconds(60)).pollInterval(Duration.ofMillis(250))
				.until(() -> get(base + "/queues/emails/dead-letters").contains("t@bounce.example"));
			String deadLetters = get(base + "/queues/emails/dead-letters");
			assertThat(deadLetters).contains("Failed 3 of 3 attempts").contains("mailbox t@bounce.example does not exist");

			String stats = get(base + "/queues/emails/stats");
			assertThat(stats).contains("\"queue\":\"emails\"").containsPattern("\"deadLettered\":[1-9]");
			String processed = get(base + "/actuator/metrics/pgqueue.messages.processed?tag=outcome:success");
			assertThat(processed).contains("\"statistic\":\"COUNT\"").doesNotContain("\"value\":0.0");
			assertThat(get(base + "/actuator/metrics/pgqueue.messages.processed?tag=outcome:retry"))
				.doesNotContain("\"value\":0.0");
			assertThat(get(base + "/actuator/health")).contains("\"pgqueue\"").contains("\"status\":\"UP\"");

			String moved = post(base + "/queues/emails/redrive", "");
			assertThat(moved).containsPattern("\"moved\":[1-9]");
		}
	}

	/**
	 * A request that carries a W3C trace context: the controller's log line, the publish, and the
	 * email listener's log line in another thread, after a trip through the database, all show
	 * its trace id.
	 */
	@Test
	void anOrderKeepsTheTraceOfItsRequestFromTheControllerToTheEmailListener(CapturedOutput output) throws Exception {
		try (ConfigurableApplicationContext context = SampleApplication.run("--server.port=0",
				"--sample.traffic-interval=1h", "--sample.email-failure-rate=0")) {
			String base = "http://localhost:" + ((WebServerApplicationContext) context).getWebServer().getPort();
			String traceId = "0af7651916cd43dd8448eb211c80319c";
			HttpResponse<String> response = this.http.send(HttpRequest.newBuilder(URI.create(base + "/orders"))
				.header("Content-Type", "application/json")
				.header("traceparent", "00-" + traceId + "-b7ad6b7169203331-01")
				.POST(HttpRequest.BodyPublishers.ofString(
						"{\"id\":\"tr-1\",\"item\":\"tea\",\"quantity\":1,\"amount\":2.50,\"email\":\"t@example.com\"}"))
				.build(), HttpResponse.BodyHandlers.ofString());
			assertThat(response.statusCode()).isEqualTo(200);

			await().atMost(Duration.ofSeconds(30)).until(() -> output.getOut().contains("emailed  order tr-1"));
			assertThat(output.getOut().lines().filter((line) -> line.contains("accepted order tr-1")))
				.singleElement().asString().contains(traceId);
			assertThat(output.getOut().lines().filter((line) -> line.contains("emailed  order tr-1")))
				.singleElement().asString().contains(traceId);
		}
	}

	private String get(String url) throws Exception {
		HttpResponse<String> response = this.http.send(HttpRequest.newBuilder(URI.create(url)).GET().build(),
				HttpResponse.BodyHandlers.ofString());
		assertThat(response.statusCode()).as(url + " -> " + response.body()).isEqualTo(200);
		return response.body();
	}

	private String post(String url, String json) throws Exception {
		HttpResponse<String> response = this.http.send(HttpRequest.newBuilder(URI.create(url))
			.header("Content-Type", "application/json")
			.POST(HttpRequest.BodyPublishers.ofString(json))
			.build(), HttpResponse.BodyHandlers.ofString());
		assertThat(response.statusCode()).as(url + " -> " + response.body()).isEqualTo(200);
		return response.body();
	}

}
