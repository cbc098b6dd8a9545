package io.github.pgqueue.stream.binder;

import io.github.pgqueue.QueueAdmin;
import io.github.pgqueue.QueueTemplate;
import io.github.pgqueue.listener.QueueListenerEndpointRegistry;

import org.springframework.cloud.stream.binder.AbstractTestBinder;
import org.springframework.cloud.stream.binder.ExtendedConsumerProperties;
import org.springframework.cloud.stream.binder.ExtendedProducerProperties;
import org.springframework.context.ApplicationContext;

/** The binder as Spring Cloud Stream's binder tests use it: on the shared embedded PostgreSQL. */
class PgQueueTestBinder extends
		AbstractTestBinder<PgQueueMessageChannelBinder, ExtendedConsumerProperties<PgQueueConsumerProperties>, ExtendedProducerProperties<PgQueueProducerProperties>> {

	PgQueueTestBinder(QueueTemplate template, QueueListenerEndpointRegistry registry, ApplicationContext context) {
		PgQueueMessageChannelBinder binder = new PgQueueMessageChannelBinder(template, registry,
				new PgQueueProvisioningProvider(new QueueAdmin(template.context())));
		binder.setApplicationContext(context);
		setBinder(binder);
	}

	@Override
	public void cleanup() {
		// each test starts on emptied tables (PostgresExtension)
	}

}
