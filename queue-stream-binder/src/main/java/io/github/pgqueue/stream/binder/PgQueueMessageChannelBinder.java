package io.github.pgqueue.stream.binder;

import java.time.Duration;

import io.github.pgqueue.QueueContext;
import io.github.pgqueue.QueueOperations;
import io.github.pgqueue.QueueTemplate;
import io.github.pgqueue.listener.ContainerProperties;
import io.github.pgqueue.listener.QueueListenerEndpointRegistry;

import org.springframework.cloud.stream.binder.AbstractMessageChannelBinder;
import org.springframework.cloud.stream.binder.BinderSpecificPropertiesProvider;
import org.springframework.cloud.stream.binder.ExtendedConsumerProperties;
import org.springframework.cloud.stream.binder.ExtendedProducerProperties;
import org.springframework.cloud.stream.binder.ExtendedPropertiesBinder;
import org.springframework.cloud.stream.binder.PartitionKeyExtractorStrategy;
import org.springframework.cloud.stream.provisioning.ConsumerDestination;
import org.springframework.cloud.stream.provisioning.ProducerDestination;
import org.springframework.integration.core.MessageProducer;
import org.springframework.integration.StaticMessageHeaderAccessor;
import org.springframework.integration.acks.AcknowledgmentCallback;
import org.springframework.messaging.Message;
import org.springframework.messaging.MessageChannel;
import org.springframework.messaging.MessageHandler;
import org.springframework.messaging.MessagingException;
import org.springframework.messaging.support.ErrorMessage;

/**
 * The pgqueue binder: producers publish to the destination's exchange through
 * {@link QueueOperations} (joining the caller's transaction), consumers are pgqueue listeners on
 * their group's queue in the application's {@link QueueListenerEndpointRegistry}. Retries are the
 * queue's own: a failed message goes back to the queue with back-off and survives a restart,
 * rather than being retried in memory.
 */
public class PgQueueMessageChannelBinder extends
		AbstractMessageChannelBinder<ExtendedConsumerProperties<PgQueueConsumerProperties>, ExtendedProducerProperties<PgQueueProducerProperties>, PgQueueProvisioningProvider>
		implements ExtendedPropertiesBinder<MessageChannel, PgQueueConsumerProperties, PgQueueProducerProperties> {

	private final QueueOperations queues;

	private final QueueListenerEndpointRegistry registry;

	private final MessageMapping mapping = new MessageMapping();

	private PgQueueExtendedBindingProperties extendedBindingProperties = new PgQueueExtendedBindingProperties();

	private int defaultBatchSize = ContainerProperties.DEFAULT_BATCH_SIZE;

	private Duration defaultPollInterval = ContainerProperties.DEFAULT_POLL_INTERVAL;

	private boolean observationEnabled;

	/**
	 * @param queues where producers publish: the application's {@code QueueTemplate}
	 * @param registry where consumers register their listeners
	 * @param provisioningProvider what creates exchanges and queues
	 */
	public PgQueueMessageChannelBinder(QueueOperations queues, QueueListenerEndpointRegistry registry,
			PgQueueProvisioningProvider provisioningProvider) {
		super(new String[0], provisioningProvider);
		this.queues = queues;
		this.registry = registry;
	}

	/** The {@code spring.cloud.stream.pgqueue} settings. */
	public void setExtendedBindingProperties(PgQueueExtendedBindingProperties extendedBindingProperties) {
		this.extendedBindingProperties = extendedBindingProperties;
	}

	/**
	 * The listener settings a consumer binding takes unless its extended properties say otherwise
	 * ({@code pgqueue.listener.*} in a Spring Boot application).
	 */
	public void setListenerDefaults(int batchSize, Duration pollInterval, boolean observationEnabled) {
		this.defaultBatchSize = batchSize;
		this.defaultPollInterval = pollInterval;
		this.observationEnabled = observationEnabled;
	}

	@Override
	protected MessageHandler createProducerMessageHandler(ProducerDestination destination,
			ExtendedProducerProperties<PgQueueProducerProperties> producerProperties, MessageChannel errorChannel) {
		PgQueueMessageHandler.PartitionKeys keys;
		String extractor = producerProperties.getPartitionKeyExtractorName();
		if (extractor != null) {
			PartitionKeyExtractorStrategy strategy = getBeanFactory().getBean(extractor, PartitionKeyExtractorStrategy.class);
			keys = strategy::extractKey;
		}
		else {
			keys = PgQueueMessageHandler.keys(producerProperties.getPartitionKeyExpression(), getEvaluationContext());
		}
		PgQueueMessageHandler handler = new PgQueueMessageHandler(this.queues,
				((PgQueueProvisioningProvider.Destination) destination).exchange(), producerProperties.getExtension(),
				keys, this.mapping, producerProperties.isErrorChannelEnabled() ? errorChannel : null);
		handler.setBeanFactory(getBeanFactory());
		return handler;
	}

	@Override
	protected MessageProducer createConsumerEndpoint(ConsumerDestination destination, String group,
			ExtendedConsumerProperties<PgQueueConsumerProperties> properties) {
		PgQueueProvisioningProvider.Destination provisioned = (PgQueueProvisioningProvider.Destination) destination;
		ErrorInfrastructure errors = registerErrorInfrastructure(destination, group, properties);
		PgQueueConsumerProperties extension = properties.getExtension();
		ContainerProperties.Builder container = ContainerProperties.builder(provisioned.queue())
			.concurrency(properties.getConcurrency())
			.batchSize((extension.getBatchSize() != null) ? extension.getBatchSize() : this.defaultBatchSize)
			.pollInterval((extension.getPollInterval() != null) ? extension.getPollInterval() : this.defaultPollInterval)
			.mode(extension.getMode())
			.filter(extension.getFilter())
			.observationEnabled(this.observationEnabled)
			.errorHandler(new BindingErrorHandler(errors.getErrorChannel(), this.mapping));
		if (extension.getTransactionTimeout() != null) {
			container.transactionTimeout(extension.getTransactionTimeout());
		}
		PgQueueInboundAdapter adapter = new PgQueueInboundAdapter(this.registry, container, properties.isBatchMode(),
				this.mapping);
		adapter.setBeanFactory(getBeanFactory());
		return adapter;
	}

	/**
	 * A polled consumer ({@code PollableMessageSource}) of the group's queue: each poll claims one
	 * message, as {@link io.github.pgqueue.QueueTemplate#receive} does.
	 * @throws UnsupportedOperationException if the binder's {@link QueueOperations} is not a
	 * {@link QueueTemplate}, whose context a polled consumer reads through
	 */
	@Override
	protected PolledConsumerResources createPolledConsumerResources(String name, String group,
			ConsumerDestination destination, ExtendedConsumerProperties<PgQueueConsumerProperties> properties) {
		if (!(this.queues instanceof QueueTemplate template)) {
			throw new UnsupportedOperationException("Polled consumer '" + name + "' needs the binder to send through a "
					+ "QueueTemplate, but it has a " + this.queues.getClass().getName());
		}
		PgQueueProvisioningProvider.Destination provisioned = (PgQueueProvisioningProvider.Destination) destination;
		QueueContext context = template.context();
		QueueTemplate storedText = new QueueTemplate(QueueContext.builder(context.dataSource())
			.schema(context.schema())
			.payloadConverter(MessageMapping.STORED_TEXT)
			.maxPayloadBytes(context.maxPayloadBytes())
			.meterRegistry(context.meterRegistry())
			.observationRegistry(context.observationRegistry())
			.build());
		return new PolledConsumerResources(new PgQueueMessageSource(storedText, provisioned.queue(),
				properties.getExtension().getFilter(), this.mapping),
				registerErrorInfrastructure(destination, group, properties, true));
	}

	/**
	 * What a polled consumer's failure that is not requeued ends in, once Spring Cloud Stream's
	 * retries (the consumer's {@code maxAttempts}) are spent and the error message is published:
	 * the message goes to the group queue's dead-letter queue, as a listener's exhausted message
	 * does.
	 */
	@Override
	protected MessageHandler getPolledConsumerErrorMessageHandler(ConsumerDestination destination, String group,
			ExtendedConsumerProperties<PgQueueConsumerProperties> properties) {
		return (error) -> {
			Message<?> failed = (error instanceof ErrorMessage errorMessage) ? errorMessage.getOriginalMessage() : null;
			if (failed == null && error.getPayload() instanceof MessagingException ex) {
				failed = ex.getFailedMessage();
			}
			AcknowledgmentCallback callback = (failed != null)
					? StaticMessageHeaderAccessor.getAcknowledgmentCallback(failed) : null;
			if (callback != null && !callback.isAcknowledged()) {
				callback.acknowledge(AcknowledgmentCallback.Status.REJECT);
			}
		};
	}

	@Override
	protected void afterUnbindConsumer(ConsumerDestination destination, String group,
			ExtendedConsumerProperties<PgQueueConsumerProperties> consumerProperties) {
		PgQueueProvisioningProvider.Destination provisioned = (PgQueueProvisioningProvider.Destination) destination;
		if (provisioned.anonymous()) {
			this.provisioningProvider.removeAnonymous(provisioned);
		}
	}

	@Override
	public PgQueueConsumerProperties getExtendedConsumerProperties(String channelName) {
		return this.extendedBindingProperties.getExtendedConsumerProperties(channelName);
	}

	@Override
	public PgQueueProducerProperties getExtendedProducerProperties(String channelName) {
		return this.extendedBindingProperties.getExtendedProducerProperties(channelName);
	}

	@Override
	public String getDefaultsPrefix() {
		return this.extendedBindingProperties.getDefaultsPrefix();
	}

	@Override
	public Class<? extends BinderSpecificPropertiesProvider> getExtendedPropertiesEntryClass() {
		return this.extendedBindingProperties.getExtendedPropertiesEntryClass();
	}

}
