package io.github.pgqueue.stream.binder.config;

import io.github.pgqueue.QueueAdmin;
import io.github.pgqueue.QueueTemplate;
import io.github.pgqueue.boot.autoconfigure.PgQueueProperties;
import io.github.pgqueue.listener.QueueListenerEndpointRegistry;
import io.github.pgqueue.stream.binder.PgQueueExtendedBindingProperties;
import io.github.pgqueue.stream.binder.PgQueueMessageChannelBinder;
import io.github.pgqueue.stream.binder.PgQueueProvisioningProvider;

import org.springframework.beans.factory.ObjectProvider;
import org.springframework.boot.autoconfigure.condition.ConditionalOnMissingBean;
import org.springframework.boot.context.properties.EnableConfigurationProperties;
import org.springframework.cloud.stream.binder.Binder;
import org.springframework.cloud.stream.config.ConsumerEndpointCustomizer;
import org.springframework.cloud.stream.config.ProducerMessageHandlerCustomizer;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Configuration;
import org.springframework.integration.core.MessageProducer;
import org.springframework.messaging.MessageHandler;

/**
 * The configuration of binder {@code pgqueue} ({@code META-INF/spring.binders}). It runs in the
 * binder's context, whose parent is the application's: the {@code QueueTemplate},
 * {@code QueueAdmin} and listener registry of pgqueue's auto-configuration come from there, so
 * that the binder and {@code @QueueListener}s share one schema, one LISTEN connection and one
 * connection budget.
 */
@Configuration(proxyBeanMethods = false)
@ConditionalOnMissingBean(Binder.class)
@EnableConfigurationProperties(PgQueueExtendedBindingProperties.class)
public class PgQueueBinderConfiguration {

	@Bean
	PgQueueProvisioningProvider pgQueueProvisioningProvider(QueueAdmin queueAdmin) {
		return new PgQueueProvisioningProvider(queueAdmin);
	}

	@Bean
	PgQueueMessageChannelBinder pgQueueMessageChannelBinder(QueueTemplate queueTemplate,
			QueueListenerEndpointRegistry registry, PgQueueProvisioningProvider provisioningProvider,
			PgQueueExtendedBindingProperties extendedBindingProperties, ObjectProvider<PgQueueProperties> properties,
			ObjectProvider<ProducerMessageHandlerCustomizer<MessageHandler>> producerCustomizer,
			ObjectProvider<ConsumerEndpointCustomizer<MessageProducer>> consumerCustomizer) {
		PgQueueMessageChannelBinder binder = new PgQueueMessageChannelBinder(queueTemplate, registry,
				provisioningProvider);
		binder.setExtendedBindingProperties(extendedBindingProperties);
		PgQueueProperties pgqueue = properties.getIfAvailable();
		if (pgqueue != null) {
			PgQueueProperties.Listener listener = pgqueue.getListener();
			binder.setListenerDefaults(listener.getBatchSize(), listener.getPollInterval(),
					listener.isObservationEnabled());
		}
		binder.setProducerMessageHandlerCustomizer(producerCustomizer.getIfUnique());
		binder.setConsumerEndpointCustomizer(consumerCustomizer.getIfUnique());
		return binder;
	}

}
