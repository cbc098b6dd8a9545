package io.github.pgqueue.stream.binder;

import org.springframework.boot.context.properties.NestedConfigurationProperty;
import org.springframework.cloud.stream.binder.BinderSpecificPropertiesProvider;

/** The pgqueue settings of one binding: its consumer and its producer side. */
public class PgQueueBindingProperties implements BinderSpecificPropertiesProvider {

	/** Consumer settings. */
	@NestedConfigurationProperty
	private PgQueueConsumerProperties consumer = new PgQueueConsumerProperties();

	/** Producer settings. */
	@NestedConfigurationProperty
	private PgQueueProducerProperties producer = new PgQueueProducerProperties();

	@Override
	public PgQueueConsumerProperties getConsumer() {
		return this.consumer;
	}

	public void setConsumer(PgQueueConsumerProperties consumer) {
		this.consumer = consumer;
	}

	@Override
	public PgQueueProducerProperties getProducer() {
		return this.producer;
	}

	public void setProducer(PgQueueProducerProperties producer) {
		this.producer = producer;
	}

}
