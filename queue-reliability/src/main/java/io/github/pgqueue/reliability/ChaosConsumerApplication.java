package io.github.pgqueue.reliability;

import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.time.Duration;

import io.github.pgqueue.listener.QueueListenerEndpointRegistry;

import org.springframework.beans.factory.ObjectProvider;
import org.springframework.beans.factory.annotation.Value;
import org.springframework.boot.Banner;
import org.springframework.boot.SpringApplication;
import org.springframework.boot.SpringBootConfiguration;
import org.springframework.boot.WebApplicationType;
import org.springframework.boot.autoconfigure.EnableAutoConfiguration;
import org.springframework.boot.autoconfigure.condition.ConditionalOnProperty;
import org.springframework.boot.context.event.ApplicationReadyEvent;
import org.springframework.boot.context.properties.EnableConfigurationProperties;
import org.springframework.context.ApplicationListener;
import org.springframework.context.annotation.Bean;
import org.springframework.jdbc.core.JdbcTemplate;

/**
 * The consumer the reliability suite runs as separate JVMs: a plain Spring Boot application on
 * the pgqueue starter, configured on its command line ({@code spring.datasource.*},
 * {@code pgqueue.*}, {@code chaos.*}). It halts when its parent's end of stdin closes, so that no
 * consumer outlives the harness that started it.
 */
@SpringBootConfiguration
@EnableAutoConfiguration
@EnableConfigurationProperties(ChaosProperties.class)
public class ChaosConsumerApplication {

	public static void main(String[] args) {
		haltWhenParentGoes(System.in);
		SpringApplication application = new SpringApplication(ChaosConsumerApplication.class);
		application.setWebApplicationType(WebApplicationType.NONE);
		application.setBannerMode(Banner.Mode.OFF);
		application.run(args);
	}

	@Bean
	DeliveryRecorder deliveryRecorder(ChaosProperties properties) {
		return new DeliveryRecorder(properties);
	}

	@Bean
	@ConditionalOnProperty(name = "chaos.listener", havingValue = "job", matchIfMissing = true)
	JobListener jobListener(DeliveryRecorder recorder, ObjectProvider<QueueListenerEndpointRegistry> registry,
			JdbcTemplate jdbc, ChaosProperties properties) {
		return new JobListener(recorder, registry, jdbc, properties.consumer());
	}

	@Bean
	@ConditionalOnProperty(name = "chaos.listener", havingValue = "untyped")
	UntypedListener untypedListener(DeliveryRecorder recorder,
			ObjectProvider<QueueListenerEndpointRegistry> registry) {
		return new UntypedListener(recorder, registry);
	}

	@Bean
	@ConditionalOnProperty(name = "chaos.second-queue")
	SecondQueueListener secondQueueListener(JobListener jobs) {
		return new SecondQueueListener(jobs);
	}

	@Bean
	@ConditionalOnProperty(name = "chaos.heap-sample-interval")
	HeapSampler heapSampler(DeliveryRecorder recorder, ChaosProperties properties,
			@Value("${chaos.heap-sample-interval}") Duration interval) {
		return new HeapSampler(recorder.jdbc(), properties.consumer(), interval);
	}

	@Bean
	ApplicationListener<ApplicationReadyEvent> registerWhenReady(DeliveryRecorder recorder) {
		return (event) -> recorder.registerConsumer();
	}

	private static void haltWhenParentGoes(InputStream parent) {
		Thread watcher = new Thread(() -> {
			String why = "closed";
			try {
				// The harness never writes: this returns when the stream ends, i.e. the harness is gone.
				parent.transferTo(OutputStream.nullOutputStream());
			}
			catch (IOException ex) {
				why = "broken (" + ex.getMessage() + ")";
			}
			System.err.println("The stdin of the harness that started this consumer is " + why + "; halting");
			Runtime.getRuntime().halt(3);
		}, "chaos-parent-watcher");
		watcher.setDaemon(true);
		watcher.start();
	}

}
