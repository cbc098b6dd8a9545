package io.github.pgqueue;

import java.time.Duration;
import java.util.List;
import java.util.Optional;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;

import io.github.pgqueue.testing.EmbeddedPostgres;
import io.github.pgqueue.testing.PostgresExtension;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;

import org.springframework.jdbc.core.JdbcTemplate;
import org.springframework.jdbc.support.JdbcTransactionManager;
import org.springframework.transaction.support.TransactionTemplate;

import static io.github.pgqueue.testing.Db.advisoryLocks;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatExceptionOfType;

/** Reading one message by its id: a lease if it is visible and free, nothing otherwise. */
@ExtendWith(PostgresExtension.class)
class ReceiveByIdIntegrationTests {

	private final EmbeddedPostgres postgres = EmbeddedPostgres.get();

	private final JdbcTemplate jdbc = new JdbcTemplate(this.postgres.dataSource());

	private final QueueTemplate template = QueueTemplate.builder(this.postgres.dataSource()).build();

	@Test
	void aVisibleFreeMessageIsLeasedByIdAndTheAckDeletesIt() {
		this.template.sendBatch("byid", List.of(1, 2, 3));
		long middle = this.jdbc.queryForObject("SELECT id FROM pgqueue.message WHERE queue = 'byid' AND payload = '2'",
				Long.class);
		try (Lease<Integer> lease = this.template.receive("byid", middle, Integer.class).orElseThrow()) {
			assertThat(lease.message().id()).isEqualTo(middle);
			assertThat(lease.message().payload()).isEqualTo(2);
			assertThat(lease.message().attempt()).isEqualTo(1);
			assertThat(this.template.receive("byid", middle, Integer.class)).as("held by the lease").isEmpty();
			lease.ack();
		}
		assertThat(this.jdbc.queryForList("SELECT payload::text FROM pgqueue.message WHERE queue = 'byid' ORDER BY id",
				String.class)).containsExactly("1", "3");
		assertThat(this.template.receive("byid", middle, Integer.class)).as("gone").isEmpty();
		assertThat(advisoryLocks()).isZero();
	}

	@Test
	void aDelayedMessageAnotherQueuesMessageAndAGroupMemberBehindItsHeadAreNotReceived() {
		long delayed = this.template.send("byid-delayed", 1, SendOptions.builder().delay(Duration.ofHours(1)).build());
		assertThat(this.template.receive("byid-delayed", delayed, Integer.class)).isEmpty();
		assertThat(this.template.receive("byid-other", delayed, Integer.class)).isEmpty();

		SendOptions group = SendOptions.builder().group("customer-1").build();
		long head = this.template.send("byid-group", 1, group);
		long second = this.template.send("byid-group", 2, group);
		assertThat(this.template.receive("byid-group", second, Integer.class)).as("behind its group's head").isEmpty();
		try (Lease<Integer> lease = this.template.receive("byid-group", head, Integer.class).orElseThrow()) {
			lease.ack();
		}
		try (Lease<Integer> lease = this.template.receive("byid-group", second, Integer.class).orElseThrow()) {
			lease.ack();
		}
		assertThat(advisoryLocks()).isZero();
	}

	@Test
	void aMessageATransactionalConsumerHoldsIsNotReceived() throws Exception {
		long id = this.template.send("byid-tx", 1);
		CountDownLatch holding = new CountDownLatch(1);
		CountDownLatch release = new CountDownLatch(1);
		TransactionTemplate transaction = new TransactionTemplate(new JdbcTransactionManager(this.postgres.dataSource()));
		ExecutorService executor = Executors.newSingleThreadExecutor();
		try {
			Future<?> holder = executor.submit(() -> transaction.executeWithoutResult((status) -> {
				// what a transactional claim takes: the advisory key for the transaction and the row lock
				this.jdbc.queryForObject("SELECT pg_try_advisory_xact_lock((SELECT lock_namespace FROM pgqueue.setting), "
						+ "?::bigint::bit(32)::int4)", Boolean.class, id);
				this.jdbc.queryForList("SELECT id FROM pgqueue.message WHERE id = ? FOR UPDATE", Long.class, id);
				holding.countDown();
				try {
					release.await(10, TimeUnit.SECONDS);
				}
				catch (InterruptedException ex) {
					Thread.currentThread().interrupt();
				}
			}));
			assertThat(holding.await(10, TimeUnit.SECONDS)).isTrue();
			assertThat(this.template.receive("byid-tx", id, Integer.class)).isEmpty();
			release.countDown();
			holder.get(10, TimeUnit.SECONDS);
		}
		finally {
			executor.shutdownNow();
		}
		Optional<Lease<Integer>> lease = this.template.receive("byid-tx", id, Integer.class);
		assertThat(lease).isPresent();
		lease.get().ack();
	}

	@Test
	void aPausedQueueGivesNoMessageByIdUntilResumed() {
		QueueAdmin admin = new QueueAdmin(this.template.context());
		admin.create(QueueDefinition.of("byid-paused"));
		long id = this.template.send("byid-paused", 1);
		admin.pause("byid-paused");
		assertThat(this.template.receive("byid-paused", Integer.class)).as("paused: nothing by the head").isEmpty();
		Optional<Lease<Integer>> byId = this.template.receive("byid-paused", id, Integer.class);
		byId.ifPresent(Lease::close); // gives it back, whatever the assertion says
		assertThat(byId).as("paused: nothing by id either").isEmpty();
		assertThat(this.jdbc.queryForObject("SELECT attempts FROM pgqueue.message WHERE id = ?", Integer.class, id))
			.as("no attempt taken").isZero();
		assertThat(advisoryLocks()).isZero();

		admin.resume("byid-paused");
		try (Lease<Integer> lease = this.template.receive("byid-paused", id, Integer.class).orElseThrow()) {
			assertThat(lease.message().attempt()).isEqualTo(1);
			lease.ack();
		}
		assertThat(this.jdbc.queryForObject("SELECT count(*) FROM pgqueue.message WHERE queue = 'byid-paused'",
				Integer.class)).isZero();
		assertThat(advisoryLocks()).isZero();
	}

	@Test
	void aPayloadOfAnotherTypeFailsAndTheMessageStaysAsItWas() {
		long id = this.template.send("byid-typed", "not a number");
		assertThatExceptionOfType(PayloadConversionException.class)
			.isThrownBy(() -> this.template.receive("byid-typed", id, Integer.class))
			.withMessageContaining("Message " + id + " of queue 'byid-typed' cannot be read as java.lang.Integer")
			.withMessageContaining("left in the queue");
		assertThat(this.jdbc.queryForObject("SELECT attempts FROM pgqueue.message WHERE id = ? AND queue = 'byid-typed'",
				Integer.class, id)).as("its attempt given back").isZero();
		assertThat(advisoryLocks()).isZero();
		try (Lease<String> lease = this.template.receive("byid-typed", id, String.class).orElseThrow()) {
			assertThat(lease.message().payload()).isEqualTo("not a number");
			lease.ack();
		}
	}

}
