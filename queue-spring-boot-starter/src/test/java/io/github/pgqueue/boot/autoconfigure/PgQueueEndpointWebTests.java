package io.github.pgqueue.boot.autoconfigure;

import java.io.IOException;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;

import io.github.pgqueue.QueueAdmin;
import io.github.pgqueue.testing.EmbeddedPostgres;
import io.github.pgqueue.testing.PostgresExtension;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;

import org.springframework.boot.SpringBootConfiguration;
import org.springframework.boot.autoconfigure.EnableAutoConfiguration;
import org.springframework.boot.builder.SpringApplicationBuilder;
import org.springframework.boot.web.server.context.WebServerApplicationContext;
import org.springframework.context.ConfigurableApplicationContext;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * The {@code pgqueue} actuator endpoint over HTTP, in a servlet application with Boot's default
 * error settings (which leave the reason of an error out of Boot's error body).
 */
@ExtendWith(PostgresExtension.class)
class PgQueueEndpointWebTests {

	private final EmbeddedPostgres postgres = EmbeddedPostgres.get();

	private final HttpClient http = HttpClient.newHttpClient();

	@Test
	void anUnknownActionOrQueueAnswers400SayingWhatIsWrong() throws Exception {
		try (ConfigurableApplicationContext application = new SpringApplicationBuilder(ActuatorApplication.class).run(
				"--server.port=0", "--spring.datasource.url=" + this.postgres.jdbcUrl(),
				"--spring.datasource.username=" + this.postgres.username(), "--spring.flyway.enabled=false",
				"--management.endpoints.web.exposure.include=pgqueue", "--pgqueue.queues.endpoint-web.max-attempts=3",
				"--pgqueue.queues.endpoint-web.retention=1h")) {
			String base = "http://localhost:" + ((WebServerApplicationContext) application).getWebServer().getPort()
					+ "/actuator/pgqueue/";

			HttpResponse<String> unknownAction = post(base + "endpoint-web", "{\"action\": \"explode\"}");
			assertThat(unknownAction.statusCode()).isEqualTo(400);
			assertThat(unknownAction.body()).contains("Unknown action 'explode'").contains("pause, resume, redrive or resend");

			HttpResponse<String> unknownQueue = post(base + "nowhere", "{\"action\": \"pause\"}");
			assertThat(unknownQueue.statusCode()).isEqualTo(400);
			assertThat(unknownQueue.body()).contains("Queue 'nowhere' does not exist");

			HttpResponse<String> noAction = post(base + "endpoint-web", "{}");
			assertThat(noAction.statusCode()).isEqualTo(400);
			assertThat(noAction.body()).contains("action").contains("pause, resume, redrive or resend");

			HttpResponse<String> pause = post(base + "endpoint-web", "{\"action\": \"pause\"}");
			assertThat(pause.statusCode()).isEqualTo(200);
			assertThat(pause.body()).contains("\"action\":\"pause\"");
			assertThat(application.getBean(QueueAdmin.class).isPaused("endpoint-web")).isTrue();

			long id = application.getBean(io.github.pgqueue.QueueTemplate.class).send("endpoint-web", "archived");
			application.getBean(QueueAdmin.class).purge("endpoint-web", QueueAdmin.Purge.ALL);
			HttpResponse<String> archive = this.http.send(HttpRequest.newBuilder(URI.create(base + "endpoint-web?limit=5"))
				.GET()
				.build(), HttpResponse.BodyHandlers.ofString());
			assertThat(archive.statusCode()).isEqualTo(200);
			assertThat(archive.body()).contains("\"id\":" + id).contains("\"outcome\":\"PURGED\"");
			HttpResponse<String> resend = post(base + "endpoint-web", "{\"action\": \"resend\", \"id\": " + id + "}");
			assertThat(resend.statusCode()).isEqualTo(200);
			assertThat(resend.body()).contains("\"sent\":");
		}
	}

	private HttpResponse<String> post(String uri, String json) throws IOException, InterruptedException {
		return this.http.send(HttpRequest.newBuilder(URI.create(uri))
			.header("Content-Type", "application/json")
			.POST(HttpRequest.BodyPublishers.ofString(json))
			.build(), HttpResponse.BodyHandlers.ofString());
	}

	/** An application as the README's reader has one: auto-configured, Actuator and Spring MVC on the class path. */
	@SpringBootConfiguration
	@EnableAutoConfiguration
	static class ActuatorApplication {

	}

}
