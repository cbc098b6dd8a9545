package io.github.pgqueue.stream.binder;

import io.github.pgqueue.QueueAdmin;
import io.github.pgqueue.QueueTemplate;
import io.github.pgqueue.listener.QueueListenerEndpointRegistry;
import io.github.pgqueue.testing.EmbeddedPostgres;
import io.github.pgqueue.testing.PostgresExtension;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Disabled;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestInfo;
import org.junit.jupiter.api.extension.ExtendWith;

import org.springframework.cloud.stream.binder.Binding;
import org.springframework.cloud.stream.binder.ExtendedConsumerProperties;
import org.springframework.cloud.stream.binder.ExtendedProducerProperties;
import org.springframework.cloud.stream.binder.PartitionCapableBinderTests;
import org.springframework.cloud.stream.binder.Spy;
import org.springframework.cloud.stream.provisioning.ProvisioningException;
import org.springframework.integration.channel.QueueChannel;
import org.springframework.messaging.MessageChannel;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatExceptionOfType;

/**
 * Spring Cloud Stream's own binder tests ({@code AbstractBinderTests},
 * {@code PartitionCapableBinderTests}) on the pgqueue binder and a real PostgreSQL.
 */
@ExtendWith(PostgresExtension.class)
class PgQueueBinderTests extends
		PartitionCapableBinderTests<PgQueueTestBinder, ExtendedConsumerProperties<PgQueueConsumerProperties>, ExtendedProducerProperties<PgQueueProducerProperties>> {

	private static QueueTemplate template;

	private static QueueListenerEndpointRegistry registry;

	@BeforeAll
	static void startRegistry() {
		template = QueueTemplate.builder(EmbeddedPostgres.get().dataSource()).build();
		registry = new QueueListenerEndpointRegistry(template.context());
		registry.start();
	}

	@AfterAll
	static void stopRegistry() {
		registry.stop();
	}

	@Override
	protected PgQueueTestBinder getBinder() {
		if (this.testBinder == null) {
			this.testBinder = new PgQueueTestBinder(template, registry, this.applicationContext);
		}
		return this.testBinder;
	}

	@Override
	protected ExtendedConsumerProperties<PgQueueConsumerProperties> createConsumerProperties() {
		return new ExtendedConsumerProperties<>(new PgQueueConsumerProperties());
	}

	@Override
	protected ExtendedProducerProperties<PgQueueProducerProperties> createProducerProperties(TestInfo testInfo) {
		return new ExtendedProducerProperties<>(new PgQueueProducerProperties());
	}

	@Override
	protected boolean usesExplicitRouting() {
		return false;
	}

	@Override
	protected String getClassUnderTestName() {
		return PgQueueMessageChannelBinder.class.getSimpleName();
	}

	@Override
	public Spy spyOn(String name) {
		throw new UnsupportedOperationException("Not used by these tests");
	}

	@Test
	void aDestinationPgQueueCannotHoldIsRefusedNamingIt() {
		assertThatExceptionOfType(ProvisioningException.class)
			.isThrownBy(() -> getBinder().bindConsumer("orders/eu", "billing", new QueueChannel(),
					createConsumerProperties()))
			.withMessageContaining("'orders/eu'")
			.withMessageContaining("letters, digits");
		assertThatExceptionOfType(ProvisioningException.class)
			.isThrownBy(() -> getBinder().bindConsumer("orders", "g".repeat(60), new QueueChannel(),
					createConsumerProperties()))
			.withMessageContaining("group '" + "g".repeat(60) + "'");
	}

	@Test
	void anAnonymousConsumersQueueIsRemovedWhenItUnbindsAndAGroupsStays() {
		QueueAdmin admin = new QueueAdmin(template.context());
		Binding<MessageChannel> anonymous = getBinder().bindConsumer("events", null, new QueueChannel(),
				createConsumerProperties());
		Binding<MessageChannel> group = getBinder().bindConsumer("events", "audit", new QueueChannel(),
				createConsumerProperties());
		assertThat(admin.declaredQueues()).anyMatch((queue) -> queue.startsWith("events.anonymous-"))
			.contains("events.audit");

		anonymous.unbind();
		group.unbind();
		assertThat(admin.declaredQueues()).noneMatch((queue) -> queue.startsWith("events.anonymous-"))
			.contains("events.audit");
	}

	/**
	 * pgqueue does not split a group's queue into partitions: the three instances of the group
	 * compete for its messages (a partition key keeps per-key order instead), so which instance
	 * gets which message, or whether each gets one, is not fixed. PartitionKeyIntegrationTests
	 * covers what a partition key does here.
	 */
	@Test
	@Override
	@Disabled("pgqueue does not split a queue by instanceIndex: the instances of a group compete for its messages")
	public void testPartitionedModuleSpEL(TestInfo testInfo) {
	}

}
