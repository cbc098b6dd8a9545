package io.github.pgqueue.stream.binder;

import io.github.pgqueue.stream.binder.orders.OrdersApplication;
import io.github.pgqueue.testing.EmbeddedPostgres;
import org.junit.jupiter.api.Test;

import org.springframework.boot.builder.SpringApplicationBuilder;

import static org.assertj.core.api.Assertions.assertThatException;

/** Settings pgqueue cannot honour fail startup with a message naming them. */
class BinderConfigurationFailureTests {

	@Test
	void anUnknownExtendedPropertyFailsStartupNamingIt() {
		EmbeddedPostgres postgres = EmbeddedPostgres.get();
		SpringApplicationBuilder application = new SpringApplicationBuilder(OrdersApplication.class).properties(
				"spring.datasource.url=" + postgres.jdbcUrl(), "spring.datasource.username=" + postgres.username(),
				"spring.main.banner-mode=off",
				"spring.cloud.stream.default-binder=pgqueue", "spring.cloud.function.definition=record",
				"spring.cloud.stream.bindings.record-in-0.destination=invoices",
				"spring.cloud.stream.pgqueue.bindings.record-in-0.consumer.batch-sise=5");
		assertThatException().isThrownBy(() -> application.run().close())
			.satisfies((ex) -> org.assertj.core.api.Assertions.assertThat(messages(ex))
				.contains("spring.cloud.stream.pgqueue.bindings.record-in-0.consumer.batch-sise"));
	}

	private static String messages(Throwable error) {
		StringBuilder all = new StringBuilder();
		for (Throwable cause = error; cause != null; cause = cause.getCause()) {
			all.append(cause.getMessage()).append('\n');
		}
		return all.toString();
	}

}
