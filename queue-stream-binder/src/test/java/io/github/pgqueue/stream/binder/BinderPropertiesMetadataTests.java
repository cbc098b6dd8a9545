package io.github.pgqueue.stream.binder;

import java.io.IOException;
import java.io.InputStream;
import java.util.ArrayList;
import java.util.List;

import org.junit.jupiter.api.Test;
import tools.jackson.databind.JsonNode;
import tools.jackson.databind.json.JsonMapper;

import static org.assertj.core.api.Assertions.assertThat;

/** Every extended property has configuration metadata with a description, so IDEs complete it. */
class BinderPropertiesMetadataTests {

	@Test
	void everyExtendedPropertyIsDescribed() throws IOException {
		JsonNode metadata;
		try (InputStream in = getClass().getResourceAsStream("/META-INF/spring-configuration-metadata.json")) {
			metadata = JsonMapper.builder().build().readTree(in);
		}
		List<String> described = new ArrayList<>();
		for (JsonNode property : metadata.get("properties")) {
			if (property.hasNonNull("description") && !property.get("description").stringValue().isBlank()) {
				described.add(property.get("name").stringValue());
			}
		}
		String prefix = "spring.cloud.stream.pgqueue.default.";
		assertThat(described).contains(prefix + "consumer.mode", prefix + "consumer.filter",
				prefix + "consumer.batch-size", prefix + "consumer.poll-interval",
				prefix + "consumer.dead-letter-queue-name", prefix + "consumer.binding-routing-key",
				prefix + "consumer.transaction-timeout", prefix + "producer.priority", prefix + "producer.delay",
				prefix + "producer.routing-key", "spring.cloud.stream.pgqueue.bindings");
	}

}
