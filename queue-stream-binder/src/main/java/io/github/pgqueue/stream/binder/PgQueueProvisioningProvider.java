package io.github.pgqueue.stream.binder;

import java.time.Duration;
import java.util.HexFormat;
import java.util.concurrent.ThreadLocalRandom;

import io.github.pgqueue.ExchangeDefinition;
import io.github.pgqueue.QueueAdmin;
import io.github.pgqueue.QueueDefinition;
import io.github.pgqueue.QueueNames;
import org.apache.commons.logging.Log;
import org.apache.commons.logging.LogFactory;

import org.springframework.cloud.stream.binder.ConsumerProperties;
import org.springframework.cloud.stream.binder.ExtendedConsumerProperties;
import org.springframework.cloud.stream.binder.ExtendedProducerProperties;
import org.springframework.cloud.stream.provisioning.ConsumerDestination;
import org.springframework.cloud.stream.provisioning.ProducerDestination;
import org.springframework.cloud.stream.provisioning.ProvisioningException;
import org.springframework.cloud.stream.provisioning.ProvisioningProvider;
import org.springframework.util.StringUtils;

/**
 * Provisions destinations through {@link QueueAdmin}: a destination is an exchange (a topic
 * exchange, declared on first use), a consumer group is a durable queue
 * {@code <destination>.<group>} bound to it with the consumer's retry policy, and a consumer
 * without a group gets a queue of its own, {@code <destination>.anonymous-<random>}, removed when
 * it unbinds. A producer's {@code requiredGroups} get their queues when the producer binds, so that
 * nothing it sends before they start is lost.
 */
public final class PgQueueProvisioningProvider implements
		ProvisioningProvider<ExtendedConsumerProperties<PgQueueConsumerProperties>, ExtendedProducerProperties<PgQueueProducerProperties>> {

	private static final Log logger = LogFactory.getLog(PgQueueProvisioningProvider.class);

	private static final String ANONYMOUS = ".anonymous-";

	private final QueueAdmin admin;

	public PgQueueProvisioningProvider(QueueAdmin admin) {
		this.admin = admin;
	}

	@Override
	public ProducerDestination provisionProducerDestination(String name,
			ExtendedProducerProperties<PgQueueProducerProperties> properties) {
		String exchange = requireName(name, "Destination '" + name + "'");
		if (properties.getPartitionCount() > 1) {
			logger.info("Producer of destination '" + exchange + "': partitionCount " + properties.getPartitionCount()
					+ " does not split a pgqueue queue; the partition key is each message's FIFO group, which keeps "
					+ "per-key order in one queue");
		}
		admin(() -> this.admin.declareIfAbsent(exchange), exchange);
		String[] requiredGroups = properties.getRequiredGroups();
		if (requiredGroups != null) {
			for (String group : requiredGroups) {
				String queue = groupQueue(exchange, group);
				// the group's consumer declares its own policy when it binds; until then, the defaults of a consumer
				if (!this.admin.declaredQueues().contains(queue)) {
					ConsumerProperties defaults = new ConsumerProperties();
					provisionGroup(exchange, new QueueDefinition(queue, defaults.getMaxAttempts(),
							Duration.ofMillis(defaults.getBackOffInitialInterval()), defaults.getBackOffMultiplier(),
							Duration.ofMillis(defaults.getBackOffMaxInterval()), null), "#");
				}
			}
		}
		return new Destination(exchange, null, false);
	}

	@Override
	public ConsumerDestination provisionConsumerDestination(String name, String group,
			ExtendedConsumerProperties<PgQueueConsumerProperties> properties) {
		String exchange = requireName(name, "Destination '" + name + "'");
		if (properties.isPartitioned()) {
			logger.info("Consumer of destination '" + exchange + "': instanceIndex " + properties.getInstanceIndex()
					+ " of " + properties.getInstanceCount() + " does not take a share of a pgqueue queue; every "
					+ "instance of the group competes for its messages, one FIFO group at a time");
		}
		boolean anonymous = !StringUtils.hasText(group);
		String queue = anonymous ? anonymousQueue(exchange) : groupQueue(exchange, group);
		PgQueueConsumerProperties extension = properties.getExtension();
		QueueDefinition policy = policy(queue, properties);
		provisionGroup(exchange, policy, extension.getBindingRoutingKey());
		return new Destination(exchange, queue, anonymous);
	}

	/** Removes an anonymous consumer's queue: its binding, then the queue and what it holds. */
	void removeAnonymous(Destination destination) {
		try {
			this.admin.unbind(destination.exchange(), new ExchangeDefinition.Binding(destination.queue(), "#"));
			this.admin.drop(destination.queue(), true);
		}
		catch (RuntimeException ex) {
			logger.warn("Could not remove the queue '" + destination.queue() + "' of an anonymous consumer of '"
					+ destination.exchange() + "'; remove it with QueueAdmin.drop", ex);
		}
	}

	/** The queue of {@code group} on {@code destination}. */
	static String groupQueue(String destination, String group) {
		return requireName(destination + "." + group, "Destination '" + destination + "' with group '" + group + "'");
	}

	private void provisionGroup(String exchange, QueueDefinition policy, String routingKey) {
		String queue = policy.name();
		admin(() -> {
			this.admin.declare(policy);
			this.admin.bind(exchange, new ExchangeDefinition.Binding(queue, routingKey));
		}, exchange + "' and queue '" + queue);
	}

	private static QueueDefinition policy(String queue, ExtendedConsumerProperties<PgQueueConsumerProperties> properties) {
		try {
			return new QueueDefinition(queue, properties.getMaxAttempts(),
					Duration.ofMillis(properties.getBackOffInitialInterval()), properties.getBackOffMultiplier(),
					Duration.ofMillis(properties.getBackOffMaxInterval()),
					properties.getExtension().getDeadLetterQueueName());
		}
		catch (IllegalArgumentException ex) {
			throw new ProvisioningException("Consumer of queue '" + queue + "': " + ex.getMessage(), ex);
		}
	}

	private static String anonymousQueue(String exchange) {
		String suffix = ANONYMOUS + HexFormat.of().toHexDigits(ThreadLocalRandom.current().nextInt());
		return requireName(exchange + suffix, "Destination '" + exchange + "' for a consumer without a group");
	}

	private static String requireName(String name, String what) {
		try {
			return QueueNames.requireQueue(name);
		}
		catch (IllegalArgumentException ex) {
			throw new ProvisioningException(what + " cannot be held by pgqueue: " + ex.getMessage()
					+ " (a destination is an exchange, a group's queue is <destination>.<group>)", ex);
		}
	}

	private static void admin(Runnable action, String what) {
		try {
			action.run();
		}
		catch (RuntimeException ex) {
			throw new ProvisioningException("Could not provision exchange '" + what + "': " + ex.getMessage(), ex);
		}
	}

	/** A provisioned destination: its exchange, and for a consumer its queue. */
	record Destination(String exchange, String queue, boolean anonymous) implements ProducerDestination, ConsumerDestination {

		/** The destination's name, which names the binding's error channel as with every binder. */
		@Override
		public String getName() {
			return this.exchange;
		}

		@Override
		public String getNameForPartition(int partition) {
			return this.exchange;
		}

	}

}
