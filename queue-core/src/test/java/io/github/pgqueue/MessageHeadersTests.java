package io.github.pgqueue;

import java.util.AbstractMap.SimpleEntry;
import java.util.Map;

import org.junit.jupiter.api.Test;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatExceptionOfType;

/** Reading the {@code headers} column: any JSON value becomes a string, anything but an object is refused. */
class MessageHeadersTests {

	@Test
	void readsEveryValueAsAStringInColumnOrder() {
		assertThat(MessageHeaders.read("{\"tenant\": \"acme\", \"retries\": 3, \"vip\": true, \"note\": null}"))
			.containsExactly(Map.entry("tenant", "acme"), Map.entry("retries", "3"),
					Map.entry("vip", "true"), new SimpleEntry<>("note", null));
	}

	@Test
	void noColumnValueIsNoHeaders() {
		assertThat(MessageHeaders.read(null)).isEmpty();
		assertThat(MessageHeaders.read("{}")).isEmpty();
	}

	@Test
	void anythingButAnObjectIsRefused() {
		assertThatExceptionOfType(PayloadConversionException.class).isThrownBy(() -> MessageHeaders.read("[1, 2]"))
			.withMessageStartingWith("Cannot read message headers as a JSON object");
	}

}
