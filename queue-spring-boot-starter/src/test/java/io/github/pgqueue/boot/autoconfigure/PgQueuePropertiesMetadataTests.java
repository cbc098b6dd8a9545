package io.github.pgqueue.boot.autoconfigure;

import java.io.InputStream;
import java.util.HashMap;
import java.util.Map;

import org.junit.jupiter.api.Test;
import tools.jackson.databind.JsonNode;
import tools.jackson.databind.json.JsonMapper;

import org.springframework.boot.convert.DurationStyle;
import org.springframework.util.unit.DataSize;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * The defaults IDEs show for {@code pgqueue.*} are those the properties start with. The
 * configuration processor cannot read a default that refers to a constant of the core, so
 * {@code additional-spring-configuration-metadata.json} states them; this keeps the two equal.
 */
class PgQueuePropertiesMetadataTests {

	@Test
	void metadataDefaultsAreThoseOfTheCore() throws Exception {
		Map<String, JsonNode> defaults = new HashMap<>();
		try (InputStream json = getClass().getResourceAsStream("/META-INF/spring-configuration-metadata.json")) {
			JsonMapper.builder().build().readTree(json).get("properties").forEach((property) -> {
				if (property.has("defaultValue")) {
					defaults.put(property.get("name").asString(), property.get("defaultValue"));
				}
			});
		}
		PgQueueProperties properties = new PgQueueProperties();
		PgQueueProperties.Listener listener = properties.getListener();
		assertThat(defaults.get("pgqueue.schema").asString()).isEqualTo(properties.getSchema());
		assertThat(DataSize.parse(defaults.get("pgqueue.max-payload-size").asString()))
			.isEqualTo(properties.getMaxPayloadSize());
		assertThat(DurationStyle.detectAndParse(defaults.get("pgqueue.listener.poll-interval").asString()))
			.isEqualTo(listener.getPollInterval());
		assertThat(defaults.get("pgqueue.listener.batch-size").asInt()).isEqualTo(listener.getBatchSize());
		assertThat(defaults.get("pgqueue.listener.concurrency").asInt()).isEqualTo(listener.getConcurrency());
		assertThat(DurationStyle.detectAndParse(defaults.get("pgqueue.listener.shutdown-timeout").asString()))
			.isEqualTo(listener.getShutdownTimeout());
	}

}
