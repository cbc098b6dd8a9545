package io.github.pgqueue;

import java.time.Duration;
import java.util.List;
import java.util.Optional;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.stream.IntStream;

import io.github.pgqueue.testing.ListenerFixture;
import io.github.pgqueue.testing.PostgresExtension;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;
import org.junit.jupiter.api.extension.RegisterExtension;

import static io.github.pgqueue.testing.Db.count;
import static io.github.pgqueue.testing.ListenerFixture.endpoint;
import static io.github.pgqueue.testing.ListenerFixture.properties;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatIllegalStateException;
import static org.awaitility.Awaitility.await;

/** Queue administration at runtime on a real PostgreSQL, with listeners running. */
@ExtendWith(PostgresExtension.class)
class QueueAdminIntegrationTests {

	@RegisterExtension
	final ListenerFixture listeners = ListenerFixture.consumers("admin-consumers", 8);

	private final QueueTemplate template = this.listeners.template();

	private final QueueAdmin admin = this.listeners.admin();

	@Test
	void queuesAreCreatedAlteredAndListedWithTheirStats() {
		this.admin.create(QueueDefinition.of("invoices").withMaxAttempts(7));
		assertThatIllegalStateException().isThrownBy(() -> this.admin.create(QueueDefinition.of("invoices")))
			.withMessage("Queue 'invoices' already exists; change it with alter");
		assertThatIllegalStateException().isThrownBy(() -> this.admin.alter(QueueDefinition.of("receipts")))
			.withMessage("Queue 'receipts' does not exist; create it first");
		this.admin.alter(QueueDefinition.of("invoices").withMaxAttempts(9).withDeadLetterQueue("invoices.parked"));
		this.template.sendBatch("invoices", List.of(1, 2, 3));
		QueueAdmin.QueueInfo invoices = this.admin.list().stream()
			.filter((info) -> info.definition().name().equals("invoices")).findFirst().orElseThrow();
		assertThat(invoices.definition().maxAttempts()).isEqualTo(9);
		assertThat(invoices.definition().deadLetterQueue()).isEqualTo("invoices.parked");
		assertThat(invoices.paused()).isFalse();
		assertThat(invoices.stats().ready()).isEqualTo(3);
	}

	@Test
	void aConcurrencyKeyAndItsLimitAreDeclaredListedAndAlteredAway() {
		this.admin.declare(QueueDefinition.of("tenants").withConcurrencyKey("tenant", 2));
		assertThat(definition("tenants").concurrencyKey())
			.isEqualTo(new QueueDefinition.ConcurrencyKey("tenant", 2));
		long sent = this.template.send("tenants", 1, SendOptions.builder().header("tenant", "acme").build());
		assertThat(io.github.pgqueue.testing.Db.jdbc().queryForObject(
				"SELECT concurrency_key FROM pgqueue.message WHERE id = ?", String.class, sent))
			.as("a send copies the header the definition names").isEqualTo("acme");
		this.admin.declare(QueueDefinition.of("tenants").withConcurrencyKey("region"));
		assertThat(definition("tenants").concurrencyKey()).as("declared again: a key without a limit")
			.isEqualTo(new QueueDefinition.ConcurrencyKey("region", null));
		this.admin.alter(QueueDefinition.of("tenants").withConcurrencyKey("tenant", 5));
		assertThat(definition("tenants").concurrencyKey()).isEqualTo(new QueueDefinition.ConcurrencyKey("tenant", 5));

		this.admin.alter(definition("tenants").withoutConcurrencyKey().withMaxAttempts(3));
		assertThat(definition("tenants")).isEqualTo(QueueDefinition.of("tenants").withMaxAttempts(3));

		this.admin.create(QueueDefinition.of("regions").withConcurrencyKey("region", 1));
		assertThat(definition("regions").concurrencyKey()).isEqualTo(new QueueDefinition.ConcurrencyKey("region", 1));
	}

	@Test
	void keyLimitsCountTheMessagesOfEachKeyBeyondItsLimitInFlightOnesIncluded() {
		this.admin.declare(QueueDefinition.of("per-tenant").withConcurrencyKey("tenant", 2));
		this.admin.declare(QueueDefinition.of("quiet").withConcurrencyKey("tenant", 1));
		this.admin.declare(QueueDefinition.of("unlimited").withConcurrencyKey("tenant"));
		SendOptions acme = SendOptions.builder().header("tenant", "acme").build();
		this.template.sendBatch("per-tenant", List.of(1, 2, 3, 4, 5), acme);
		this.template.send("per-tenant", 6, SendOptions.builder().header("tenant", "globex").build());
		this.template.send("per-tenant", 7, SendOptions.builder().header("tenant", "acme").delay(Duration.ofHours(1))
			.build());
		this.template.sendBatch("per-tenant", List.of(8, 9));
		this.template.sendBatch("unlimited", List.of(1, 2, 3), acme);
		// acme: 5 visible, 2 of them may be in flight; globex's one and those without a key never wait.
		assertThat(this.admin.keyLimits()).containsExactly(
				new QueueAdmin.KeyLimitState("per-tenant", "tenant", 2, null, 3),
				new QueueAdmin.KeyLimitState("quiet", "tenant", 1, null, 0));

		Lease<Integer> first = this.template.receive("per-tenant", Integer.class).orElseThrow();
		Lease<Integer> second = this.template.receive("per-tenant", Integer.class).orElseThrow();
		assertThat(List.of(first.payload(), second.payload())).containsExactly(1, 2);
		assertThat(waiting("per-tenant")).as("in flight, the two still count against the limit").isEqualTo(3);
		first.ack();
		second.ack();
		assertThat(waiting("per-tenant")).as("acked: 3 of acme left, 1 beyond the limit").isEqualTo(1);
	}

	private long waiting(String queue) {
		return this.admin.keyLimits().stream().filter((state) -> state.queue().equals(queue)).findFirst().orElseThrow()
			.waiting();
	}

	@Test
	void aPausedQueueIsConsumedByNoListenerAndNoReceiveUntilResumed() throws Exception {
		this.admin.create(QueueDefinition.of("mail"));
		AtomicInteger handled = new AtomicInteger();
		// a minute between polls: only the notification of the resume brings the listener back on time
		this.listeners.start(endpoint("mail", Integer.class, (message, ack) -> handled.incrementAndGet(),
				properties("mail").concurrency(2).pollInterval(Duration.ofSeconds(60))));
		this.template.sendBatch("mail", List.of(1, 2));
		await().atMost(Duration.ofSeconds(10)).until(() -> handled.get() == 2);

		this.admin.pause("mail");
		assertThat(this.admin.isPaused("mail")).isTrue();
		this.template.sendBatch("mail", IntStream.range(0, 20).boxed().toList()); // notifies the listener
		Thread.sleep(1_000);
		assertThat(handled.get()).as("a paused queue is not consumed").isEqualTo(2);
		assertThat(this.template.receive("mail", Integer.class)).isEmpty();
		assertThat(this.template.stats("mail").ready()).isEqualTo(20);

		this.admin.resume("mail");
		await().atMost(Duration.ofSeconds(10)).until(() -> handled.get() == 22);
		assertThat(this.admin.isPaused("mail")).isFalse();
		assertThatIllegalStateException().isThrownBy(() -> this.admin.pause("undeclared"))
			.withMessage("Queue 'undeclared' does not exist; declare it before pausing it");
	}

	@Test
	void aTransactionalListenerStopsClaimingFromAPausedQueueToo() throws Exception {
		this.admin.create(QueueDefinition.of("ledger"));
		this.admin.pause("ledger");
		AtomicInteger handled = new AtomicInteger();
		this.listeners.start(endpoint("ledger", Integer.class, (message, ack) -> handled.incrementAndGet(),
				properties("ledger").pollInterval(Duration.ofMillis(100)).mode(ConsumptionMode.TRANSACTIONAL)));
		this.template.sendBatch("ledger", List.of(1, 2, 3));
		Thread.sleep(700);
		assertThat(handled.get()).isZero();
		this.admin.resume("ledger");
		await().atMost(Duration.ofSeconds(10)).until(() -> handled.get() == 3);
	}

	@Test
	void aPurgeDeletesWhatItIsAskedInChunksAndNeverAHeldMessage() {
		this.admin.create(QueueDefinition.of("bulk"));
		this.template.sendBatch("bulk", IntStream.range(0, 2500).boxed().toList());
		this.template.send("bulk", -1, SendOptions.builder().delay(Duration.ofHours(1)).build());
		Optional<Lease<Integer>> held = this.template.receive("bulk", Integer.class);
		assertThat(held).isPresent();

		assertThat(this.admin.purge("bulk", QueueAdmin.Purge.READY)).isEqualTo(2499);
		assertThat(this.template.stats("bulk").scheduled()).as("delayed messages stay").isEqualTo(1);
		assertThat(this.admin.purge("bulk", QueueAdmin.Purge.ALL)).isEqualTo(1);
		assertThat(count("bulk")).as("the held message stays").isEqualTo(1);
		held.get().ack();
		assertThat(count("bulk")).isZero();
	}

	@Test
	void aPurgeWhileListenersConsumeNeitherLosesTrackNorDeliversAMessageTwice() {
		this.admin.create(QueueDefinition.of("busy"));
		java.util.Map<Long, AtomicInteger> handled = new java.util.concurrent.ConcurrentHashMap<>();
		this.listeners.start(endpoint("busy", Integer.class, (message, ack) -> {
			handled.computeIfAbsent(message.id(), (id) -> new AtomicInteger()).incrementAndGet();
			Thread.sleep(1);
		}, properties("busy").concurrency(3).pollInterval(Duration.ofMillis(100))));
		List<Long> ids = this.template.sendBatch("busy", IntStream.range(0, 3000).boxed().toList());
		await().atMost(Duration.ofSeconds(10)).until(() -> handled.size() > 100);
		long purged = this.admin.purge("busy", QueueAdmin.Purge.ALL);
		await().atMost(Duration.ofSeconds(20)).until(() -> count("busy") == 0);
		assertThat(handled.values()).as("no message handled twice").allMatch((n) -> n.get() == 1);
		assertThat(ids).containsAll(handled.keySet());
		assertThat(handled.size() + purged).as("every message either handled or purged, none both")
			.isEqualTo(ids.size());
	}

	@Test
	void dropRefusesAQueueWithMessagesUnlessForcedAndOneThatIsBoundOrHeld() {
		this.admin.create(QueueDefinition.of("old"));
		this.template.sendBatch("old", List.of(1, 2));
		assertThatIllegalStateException().isThrownBy(() -> this.admin.drop("old", false))
			.withMessage("Queue 'old' holds 2 message(s); purge it first, or drop it with force to delete them");

		Lease<Integer> lease = this.template.receive("old", Integer.class).orElseThrow();
		assertThatIllegalStateException().isThrownBy(() -> this.admin.drop("old", true))
			.withMessageContaining("still holds 1 message(s) that consumers are handling right now");
		lease.ack();
		this.admin.drop("old", true);
		assertThat(this.admin.list()).noneMatch((info) -> info.definition().name().equals("old"));
		assertThatIllegalStateException().isThrownBy(() -> this.admin.drop("old", true))
			.withMessage("Queue 'old' does not exist");

		this.admin.create(QueueDefinition.of("bound"));
		this.admin.declare(new ExchangeDefinition("events", ExchangeDefinition.Type.FANOUT,
				List.of(new ExchangeDefinition.Binding("bound", ""))));
		assertThatIllegalStateException().isThrownBy(() -> this.admin.drop("bound", true))
			.withMessageContaining("bound to exchange(s) [events]");
	}

	private QueueDefinition definition(String queue) {
		return this.admin.list().stream().map(QueueAdmin.QueueInfo::definition)
			.filter((definition) -> definition.name().equals(queue)).findFirst().orElseThrow();
	}

}
