package io.github.pgqueue.benchmarks;

import java.util.LinkedHashMap;
import java.util.Locale;
import java.util.Map;
import java.util.function.Consumer;

import io.github.pgqueue.ConsumptionMode;
import io.github.pgqueue.annotation.QueueListener;

import org.springframework.boot.WebApplicationType;
import org.springframework.boot.autoconfigure.EnableAutoConfiguration;
import org.springframework.boot.builder.SpringApplicationBuilder;
import org.springframework.context.ConfigurableApplicationContext;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Configuration;

/**
 * The Spring Boot application of the binder scenario: one {@code Consumer<Tick>} function bound
 * with the pgqueue binder (destination {@value #DESTINATION}, group {@value #GROUP}) and one
 * {@code @QueueListener(Tick)} on that binding's queue, {@value #QUEUE}, with the same
 * consumption mode, concurrency and batch size. Neither starts with the application: the
 * scenario starts one at a time. Both hand each message's sequence number to the
 * {@link HandlerSlot}.
 */
@Configuration(proxyBeanMethods = false)
@EnableAutoConfiguration
class BinderApplication {

	static final String DESTINATION = "binderbench";

	static final String GROUP = "bench";

	/** The binding's group queue, {@code <destination>.<group>}, which the listener also consumes. */
	static final String QUEUE = DESTINATION + "." + GROUP;

	static final String BINDING = "benchTick-in-0";

	static final String LISTENER_ID = "bench-listener";

	/**
	 * Starts the application on the run's database, its function bound and its listener built for
	 * {@code mode}, {@code concurrency} pollers and {@code batchSize}, neither of them started.
	 */
	static ConfigurableApplicationContext start(BenchDatabase database, ConsumptionMode mode, int concurrency,
			int batchSize, HandlerSlot slot) {
		String modeName = mode.name().toLowerCase(Locale.ROOT);
		Map<String, Object> properties = new LinkedHashMap<>();
		properties.put("spring.datasource.url", database.jdbcUrl());
		properties.put("spring.datasource.username", database.username());
		properties.put("spring.main.banner-mode", "off");
		properties.put("pgqueue.listener.batch-size", batchSize);
		properties.put("bench.concurrency", concurrency);
		properties.put("bench.mode", modeName);
		properties.put("spring.cloud.function.definition", "benchTick");
		String binding = "spring.cloud.stream.bindings." + BINDING;
		properties.put(binding + ".destination", DESTINATION);
		properties.put(binding + ".group", GROUP);
		properties.put(binding + ".consumer.concurrency", concurrency);
		properties.put(binding + ".consumer.auto-startup", false);
		properties.put("spring.cloud.stream.pgqueue.bindings." + BINDING + ".consumer.mode", modeName);
		return new SpringApplicationBuilder(BinderApplication.class).web(WebApplicationType.NONE)
			.properties(properties)
			.initializers((context) -> context.getBeanFactory().registerSingleton("handlerSlot", slot))
			.logStartupInfo(false)
			.run();
	}

	@Bean
	Consumer<Tick> benchTick(HandlerSlot slot) {
		return (tick) -> slot.handle(tick.n());
	}

	@Bean
	BenchListener benchListener(HandlerSlot slot) {
		return new BenchListener(slot);
	}

	/** The {@code @QueueListener} side; {@code public} for the listener's method invocation. */
	public static final class BenchListener {

		private final HandlerSlot slot;

		BenchListener(HandlerSlot slot) {
			this.slot = slot;
		}

		/** Hands the message's sequence number on. */
		@QueueListener(queues = QUEUE, id = LISTENER_ID, concurrency = "${bench.concurrency}", mode = "${bench.mode}",
				autoStartup = "false")
		public void on(Tick tick) {
			this.slot.handle(tick.n());
		}

	}

	/** Where both sides' messages go: the handler of the run under way. */
	static final class HandlerSlot {

		private volatile MessageHandler handler = (n) -> {
		};

		void set(MessageHandler handler) {
			this.handler = handler;
		}

		void handle(long sequence) {
			this.handler.onMessage(sequence);
		}

	}

}
