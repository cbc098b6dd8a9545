package io.github.pgqueue.sample;

import java.math.BigDecimal;
import java.util.List;
import java.util.concurrent.atomic.AtomicLong;

import io.micrometer.core.instrument.MeterRegistry;
import io.micrometer.core.instrument.search.Search;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import org.springframework.boot.context.event.ApplicationReadyEvent;
import org.springframework.boot.context.properties.EnableConfigurationProperties;
import org.springframework.boot.web.server.context.WebServerApplicationContext;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Configuration;
import org.springframework.context.event.EventListener;
import org.springframework.scheduling.TaskScheduler;
import org.springframework.scheduling.concurrent.ThreadPoolTaskScheduler;

/** The traffic generator, the progress line and the welcome message with the URLs to try. */
@Configuration(proxyBeanMethods = false)
@EnableConfigurationProperties(SampleProperties.class)
class SampleConfiguration {

	private static final Logger logger = LoggerFactory.getLogger(SampleConfiguration.class);

	private static final List<String> ITEMS = List.of("coffee beans", "teapot", "mug", "grinder", "kettle");

	private final AtomicLong generated = new AtomicLong();

	@Bean
	TaskScheduler sampleScheduler() {
		ThreadPoolTaskScheduler scheduler = new ThreadPoolTaskScheduler();
		scheduler.setThreadNamePrefix("sample-");
		scheduler.setPoolSize(2);
		return scheduler;
	}

	@EventListener
	void started(ApplicationReadyEvent event) {
		SampleProperties properties = event.getApplicationContext().getBean(SampleProperties.class);
		OrderService orders = event.getApplicationContext().getBean(OrderService.class);
		MeterRegistry meters = event.getApplicationContext().getBean(MeterRegistry.class);
		TaskScheduler scheduler = event.getApplicationContext().getBean("sampleScheduler", TaskScheduler.class);
		int port = (event.getApplicationContext() instanceof WebServerApplicationContext web)
				? web.getWebServer().getPort() : -1;
		String base = "http://localhost:" + port;
		logger.info("""

				pgqueue sample is up. Try:
				  curl -X POST {}/orders -H 'Content-Type: application/json' -d '{"item":"tea","quantity":2,"amount":9.50,"email":"you@example.com"}'
				  curl {}/queues/emails/stats          # ready, scheduled, in flight, dead-lettered
				  curl {}/queues/emails/dead-letters   # peek at the dead-letter queue
				  curl -X POST {}/queues/emails/redrive  # move dead letters back
				  curl {}/actuator/health
				  curl {}/actuator/metrics/pgqueue.messages.processed
				  open {}/pgqueue/ in a browser: the dashboard
				""", base, base, base, base, base, base, base);
		if (properties.isTrafficEnabled()) {
			scheduler.scheduleAtFixedRate(() -> generate(orders, properties), properties.getTrafficInterval());
		}
		scheduler.scheduleAtFixedRate(() -> progress(meters), properties.getProgressInterval());
	}

	private void generate(OrderService orders, SampleProperties properties) {
		long n = this.generated.incrementAndGet();
		boolean bounce = properties.getBounceEvery() > 0 && n % properties.getBounceEvery() == 0;
		String email = bounce ? "customer" + n + "@bounce.example" : "customer" + n + "@example.com";
		Order order = orders.place(new Order("gen-" + n, ITEMS.get((int) (n % ITEMS.size())), 1 + (int) (n % 3),
				BigDecimal.valueOf(5 + n % 20), email));
		logger.info("sent     order {} to exchange orders (routed to billing and emails)", order.id());
	}

	private void progress(MeterRegistry meters) {
		logger.info("progress: sent={} processed={} retried={} dead-lettered={}",
				(long) sum(meters, "pgqueue.messages.sent", null), (long) sum(meters, "pgqueue.messages.processed", "success"),
				(long) sum(meters, "pgqueue.messages.processed", "retry"),
				(long) sum(meters, "pgqueue.messages.processed", "dead"));
	}

	private static double sum(MeterRegistry meters, String name, String outcome) {
		Search search = meters.find(name);
		if (outcome != null) {
			search = search.tag("outcome", outcome);
		}
		return search.counters().stream().mapToDouble(io.micrometer.core.instrument.Counter::count).sum();
	}

}
