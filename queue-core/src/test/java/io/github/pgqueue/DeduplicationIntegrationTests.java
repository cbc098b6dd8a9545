package io.github.pgqueue;

import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;

import javax.sql.DataSource;

import io.github.pgqueue.internal.ConsumerSession;
import io.github.pgqueue.testing.EmbeddedPostgres;
import io.github.pgqueue.testing.PostgresExtension;
import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;

import org.springframework.dao.DuplicateKeyException;
import org.springframework.jdbc.core.JdbcTemplate;
import org.springframework.jdbc.support.JdbcTransactionManager;
import org.springframework.transaction.support.TransactionTemplate;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatExceptionOfType;
import static org.assertj.core.api.Assertions.assertThatIllegalArgumentException;

/** Deduplication keys: one message per key while it is in its queue, whoever sends it and how. */
@ExtendWith(PostgresExtension.class)
class DeduplicationIntegrationTests {

	private final DataSource dataSource = EmbeddedPostgres.get().dataSource();

	private final JdbcTemplate jdbc = new JdbcTemplate(this.dataSource);

	private final SimpleMeterRegistry meters = new SimpleMeterRegistry();

	private final QueueTemplate template = new QueueTemplate(QueueContext.builder(this.dataSource).meterRegistry(this.meters).build());

	private final QueueAdmin admin = new QueueAdmin(this.template.context());

	private static SendOptions key(String key) {
		return SendOptions.builder().deduplicationKey(key).build();
	}

	@Test
	void aKeyInTheQueueMakesASecondSendReturnTheFirstMessage() {
		long first = this.template.send("orders", "a", key("order-17"));
		long again = this.template.send("orders", "b", key("order-17"));
		long other = this.template.send("orders", "c", key("order-18"));
		long elsewhere = this.template.send("invoices", "d", key("order-17"));

		assertThat(again).isEqualTo(first);
		assertThat(other).isNotEqualTo(first);
		assertThat(elsewhere).as("keys are per queue").isNotEqualTo(first);
		assertThat(this.jdbc.queryForList("SELECT payload #>> '{}' FROM pgqueue.message WHERE queue = 'orders' "
				+ "ORDER BY id", String.class)).containsExactly("a", "c");
		assertThat(this.meters.get("pgqueue.messages.sent").tag("queue", "orders").counter().count())
			.as("only sends that inserted").isEqualTo(2);
	}

	@Test
	void theKeyIsFreeAgainOnceItsMessageIsAckedOrDeadLettered() {
		long first = this.template.send("jobs", "a", key("k"));
		try (ConsumerSession session = this.template.context().openSession()) {
			ConsumerSession.Claim claim = session.claim("jobs", 10);
			assertThat(this.template.send("jobs", "held", key("k"))).as("held is still in the queue").isEqualTo(first);
			session.ack(List.of(claim.messages().get(0).id()));
		}
		long second = this.template.send("jobs", "b", key("k"));
		assertThat(second).isNotEqualTo(first);
		try (ConsumerSession session = this.template.context().openSession()) {
			ConsumerSession.Claim claim = session.claim("jobs", 10);
			session.deadLetter(List.of(ConsumerSession.DeadLetter.of(claim.messages().get(0), "no")));
		}
		long third = this.template.send("jobs", "c", key("k"));
		try (ConsumerSession session = this.template.context().openSession()) {
			ConsumerSession.Claim claim = session.claim("jobs", 10);
			session.deadLetter(List.of(ConsumerSession.DeadLetter.of(claim.messages().get(0), "no")));
		}
		assertThat(third).isNotIn(first, second);
		assertThat(this.jdbc.queryForList("SELECT id FROM pgqueue.message WHERE queue = 'jobs.dlq' ORDER BY id",
				Long.class)).as("two dead letters of one key").containsExactly(second, third);
	}

	@Test
	void tenThreadsRacingOnOneKeyInsertOneMessageAndAllGetItsId() throws Exception {
		TransactionTemplate transactions = new TransactionTemplate(new JdbcTransactionManager(this.dataSource));
		for (int round = 0; round < 20; round++) {
			String key = "race-" + round;
			CountDownLatch start = new CountDownLatch(1);
			ExecutorService threads = Executors.newFixedThreadPool(10);
			List<Future<Long>> ids = new ArrayList<>();
			for (int i = 0; i < 10; i++) {
				int n = i;
				ids.add(threads.submit(() -> {
					start.await();
					// Some senders hold their transaction open after the insert, so that the others'
					// inserts wait on it and then cannot see it in their snapshot.
					return transactions.execute((status) -> {
						long id = this.template.send("race", n, key(key));
						if (n % 3 == 0) {
							sleep(20);
						}
						return id;
					});
				}));
			}
			start.countDown();
			Set<Long> distinct = ConcurrentHashMap.newKeySet();
			for (Future<Long> id : ids) {
				distinct.add(id.get(30, TimeUnit.SECONDS));
			}
			threads.shutdown();
			assertThat(distinct).as("round %d", round).hasSize(1);
			assertThat(this.jdbc.queryForObject("SELECT count(*) FROM pgqueue.message WHERE deduplication_key = ?",
					Long.class, key)).isEqualTo(1);
		}
	}

	@Test
	void aBatchWithAKeyIsOneMessage() {
		List<Long> ids = this.template.sendBatch("batch", List.of(1, 2, 3), key("b"));
		assertThat(ids).hasSize(3).containsOnly(ids.get(0));
		assertThat(this.template.sendBatch("batch", List.of(4), key("b"))).containsExactly(ids.get(0));
		assertThat(this.jdbc.queryForObject("SELECT count(*) FROM pgqueue.message WHERE queue = 'batch'", Long.class))
			.isEqualTo(1);
	}

	@Test
	void aPublishWithAKeyReachesOnlyTheBoundQueuesWithoutIt() {
		this.admin.declare(new ExchangeDefinition("events", ExchangeDefinition.Type.FANOUT,
				List.of(new ExchangeDefinition.Binding("audit", ""), new ExchangeDefinition.Binding("mail", ""))));
		this.template.send("audit", "earlier", key("e-1"));
		assertThat(this.template.publish("events", "", "e", key("e-1"))).as("only mail").isEqualTo(1);
		assertThat(this.template.publish("events", "", "e", key("e-1"))).isZero();
	}

	@Test
	void aPlainInsertCanSetTheKeyAndTheDatabaseRefusesADuplicate() {
		this.jdbc.update("INSERT INTO pgqueue.message (queue, payload, deduplication_key) VALUES ('sql', '1', 'x')");
		assertThat(this.template.send("sql", 2, key("x"))).isEqualTo(this.jdbc.queryForObject(
				"SELECT id FROM pgqueue.message WHERE queue = 'sql'", Long.class));
		assertThatExceptionOfType(DuplicateKeyException.class).isThrownBy(() -> this.jdbc
			.update("INSERT INTO pgqueue.message (queue, payload, deduplication_key) VALUES ('sql', '3', 'x')"));
		Optional<Lease<Integer>> lease = this.template.receive("sql", Integer.class);
		assertThat(lease).hasValueSatisfying((l) -> assertThat(l.message().payload()).isEqualTo(1));
		lease.get().ack();
	}

	@Test
	void anEmptyOrOverlongKeyIsRefusedSayingSo() {
		assertThatIllegalArgumentException().isThrownBy(() -> key(""))
			.withMessage("Deduplication key must have 1 to 512 characters, was 0 characters");
		assertThatIllegalArgumentException().isThrownBy(() -> key("k".repeat(513)))
			.withMessageContaining("was 513 characters");
	}

	private static void sleep(long millis) {
		try {
			Thread.sleep(millis);
		}
		catch (InterruptedException ex) {
			Thread.currentThread().interrupt();
		}
	}

}
