package io.github.pgqueue;

import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.Statement;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Optional;

import javax.sql.DataSource;

import io.github.pgqueue.testing.EmbeddedPostgres;
import io.github.pgqueue.testing.PostgresExtension;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;
import org.postgresql.PGConnection;
import org.postgresql.PGNotification;

import org.springframework.jdbc.core.JdbcTemplate;
import org.springframework.jdbc.datasource.DataSourceTransactionManager;
import org.springframework.transaction.support.TransactionTemplate;

import static io.github.pgqueue.testing.Db.advisoryLocks;
import static io.github.pgqueue.testing.Db.count;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatIllegalArgumentException;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

@ExtendWith(PostgresExtension.class)
class QueueTemplateIntegrationTests {

	private final DataSource dataSource = EmbeddedPostgres.get().dataSource();

	private final JdbcTemplate jdbc = new JdbcTemplate(this.dataSource);

	private final QueueTemplate template = QueueTemplate.builder(this.dataSource).build();

	private final QueueAdmin admin = new QueueAdmin(this.template.context());

	record Email(String to, String subject) {
	}

	@Test
	void publishCountsEachRoutedCopyAsSentToItsQueue() {
		io.micrometer.core.instrument.simple.SimpleMeterRegistry meters = new io.micrometer.core.instrument.simple.SimpleMeterRegistry();
		QueueTemplate metered = new QueueTemplate(QueueContext.builder(this.dataSource).meterRegistry(meters).build());
		new QueueAdmin(metered.context()).declare(new ExchangeDefinition("counted", ExchangeDefinition.Type.FANOUT,
				List.of(new ExchangeDefinition.Binding("billing", ""), new ExchangeDefinition.Binding("shipping", ""))));
		assertThat(metered.publish("counted", "any", "o-1")).isEqualTo(2);
		assertThat(metered.publish("counted", "any", "o-2")).isEqualTo(2);
		assertThat(meters.get("pgqueue.messages.sent").tag("queue", "billing").counter().count()).isEqualTo(2);
		assertThat(meters.get("pgqueue.messages.sent").tag("queue", "shipping").counter().count()).isEqualTo(2);
	}

	@Test
	void sentMessageIsReceivedWithPayloadHeadersAndFirstAttempt() {
		long id = this.template.send("emails", new Email("a@example.com", "hi"),
				SendOptions.builder().header("tenant", "acme").build());
		try (Lease<Email> lease = this.template.receive("emails", Email.class).orElseThrow()) {
			assertThat(lease.message().id()).isEqualTo(id);
			assertThat(lease.payload()).isEqualTo(new Email("a@example.com", "hi"));
			assertThat(lease.message().header("tenant")).isEqualTo("acme");
			assertThat(lease.message().attempt()).isEqualTo(1);
			lease.ack();
		}
		assertThat(this.template.receive("emails", Email.class)).isEmpty();
		assertThat(count()).isZero();
		assertThat(advisoryLocks()).isZero();
	}

	@Test
	void receiveDeliversLowerPriorityFirstThenInSendOrder() {
		long low = this.template.send("jobs", "p5", SendOptions.builder().priority(5).build());
		long first = this.template.send("jobs", "p0-a");
		long urgent = this.template.send("jobs", "p-1", SendOptions.builder().priority(-1).build());
		long second = this.template.send("jobs", "p0-b");
		List<Long> order = new ArrayList<>();
		for (int i = 0; i < 4; i++) {
			try (Lease<String> lease = this.template.receive("jobs", String.class).orElseThrow()) {
				order.add(lease.message().id());
				lease.ack();
			}
		}
		assertThat(order).containsExactly(urgent, first, second, low);
	}

	@Test
	void delayedMessageIsNotReceivedBeforeItsTime() {
		this.template.send("later", "x", SendOptions.builder().delay(Duration.ofSeconds(3)).build());
		this.template.send("later", "y", SendOptions.builder().notBefore(Instant.now().plusSeconds(3600)).build());
		assertThat(this.template.receive("later", String.class)).isEmpty();
		assertThat(this.template.stats("later").scheduled()).isEqualTo(2);
		org.awaitility.Awaitility.await().atMost(Duration.ofSeconds(15)).pollInterval(Duration.ofMillis(50)).until(() -> {
			Optional<Lease<String>> lease = this.template.receive("later", String.class);
			lease.ifPresent(Lease::ack);
			return lease.isPresent();
		});
		assertThat(this.template.stats("later").scheduled()).isEqualTo(1);
	}

	@Test
	void cancelRemovesAFreeMessageButNotOneAConsumerHolds() {
		long free = this.template.send("orders", "free");
		long held = this.template.send("orders", "held", SendOptions.builder().priority(-1).build());
		try (Lease<String> lease = this.template.receive("orders", String.class).orElseThrow()) {
			assertThat(lease.message().id()).isEqualTo(held);
			assertThat(this.template.cancel("orders", held)).isEqualTo(CancelResult.HELD);
			assertThat(this.template.cancel("orders", free)).isEqualTo(CancelResult.REMOVED);
			assertThat(this.template.cancel("orders", free)).isEqualTo(CancelResult.NOT_FOUND);
			assertThat(this.template.cancel("other", held)).isEqualTo(CancelResult.NOT_FOUND);
			lease.ack();
		}
		assertThat(count()).isZero();
		assertThat(advisoryLocks()).isZero();
	}

	@Test
	void sendInRolledBackTransactionIsNeverDelivered() {
		TransactionTemplate tx = new TransactionTemplate(new DataSourceTransactionManager(this.dataSource));
		tx.executeWithoutResult((status) -> {
			this.template.send("emails", new Email("x@example.com", "rolled back"));
			this.template.sendBatch("emails", List.of("a", "b"));
			assertThat(this.jdbc.queryForObject("SELECT count(*) FROM pgqueue.message", Long.class))
				.as("written in the caller's transaction").isEqualTo(3);
			status.setRollbackOnly();
		});
		assertThat(this.template.receive("emails", Email.class)).isEmpty();
		assertThat(count()).isZero();
	}

	/**
	 * What PostgreSQL raises when a data file cannot grow is raised here by a trigger, for one
	 * queue; queue-reliability's {@code DiskFullIntegrationTests} fills a real disk.
	 */
	@Test
	void sendOnAServerOutOfDiskSpaceFailsNamingTheQueueAndTheCause() {
		this.jdbc.execute("""
				CREATE FUNCTION pgqueue.test_disk_full() RETURNS trigger LANGUAGE plpgsql AS $$
				BEGIN
				    IF NEW.queue = 'disk-full' THEN
				        RAISE EXCEPTION 'could not extend file "base/5/16385": No space left on device'
				            USING ERRCODE = 'disk_full', HINT = 'Check free disk space.';
				    END IF;
				    RETURN NEW;
				END $$""");
		this.jdbc.execute("CREATE TRIGGER test_disk_full BEFORE INSERT ON pgqueue.message "
				+ "FOR EACH ROW EXECUTE FUNCTION pgqueue.test_disk_full()");
		try {
			assertThatThrownBy(() -> this.template.send("disk-full", new Email("a@example.com", "hi")))
				.isInstanceOf(QueueException.class)
				.hasMessage("Cannot send to 'disk-full': the database server is out of disk space (ERROR: could not "
						+ "extend file \"base/5/16385\": No space left on device); nothing was sent, send again once "
						+ "space is freed on the server");
			assertThatThrownBy(() -> this.template.sendBatch("disk-full", List.of("a", "b")))
				.isInstanceOf(QueueException.class)
				.hasMessageStartingWith("Cannot send to 'disk-full': the database server is out of disk space");
			assertThat(this.template.send("emails", "another queue")).isPositive();
		}
		finally {
			this.jdbc.execute("DROP TRIGGER test_disk_full ON pgqueue.message");
			this.jdbc.execute("DROP FUNCTION pgqueue.test_disk_full()");
		}
		assertThat(count()).isEqualTo(1);
	}

	@Test
	void sendInCommittedTransactionIsDeliveredAfterCommit() {
		TransactionTemplate tx = new TransactionTemplate(new DataSourceTransactionManager(this.dataSource));
		tx.executeWithoutResult((status) -> {
			this.template.send("emails", new Email("x@example.com", "committed"));
			assertThat(this.template.receive("emails", Email.class)).as("not visible before commit").isEmpty();
		});
		try (Lease<Email> lease = this.template.receive("emails", Email.class).orElseThrow()) {
			lease.ack();
		}
	}

	@Test
	void plainSqlInsertIsReceivedAndWakesListeners() throws Exception {
		// A connection of its own: a pooled one may still listen on another test's channel.
		EmbeddedPostgres postgres = EmbeddedPostgres.get();
		try (Connection listener = DriverManager.getConnection(postgres.jdbcUrl(), postgres.username(), "");
				Statement statement = listener.createStatement()) {
			statement.execute("LISTEN pgqueue");
			this.jdbc.update("INSERT INTO pgqueue.message (queue, payload) VALUES ('psql', '{\"to\":\"b@example.com\",\"subject\":\"s\"}'), "
					+ "('psql', '{\"to\":\"c@example.com\",\"subject\":\"s\"}')");
			PGNotification[] notifications = listener.unwrap(PGConnection.class).getNotifications(5000);
			assertThat(notifications).extracting(PGNotification::getParameter).containsExactly("psql");
		}
		try (Lease<Email> lease = this.template.receive("psql", Email.class).orElseThrow()) {
			assertThat(lease.payload().to()).isEqualTo("b@example.com");
			lease.ack();
		}
	}

	@Test
	void sendBatchInsertsAllInOrder() {
		List<Long> ids = this.template.sendBatch("batch", List.of("a", "b", "c"));
		assertThat(ids).hasSize(3).isSorted();
		List<String> payloads = new ArrayList<>();
		for (int i = 0; i < 3; i++) {
			try (Lease<String> lease = this.template.receive("batch", String.class).orElseThrow()) {
				payloads.add(lease.payload());
				lease.ack();
			}
		}
		assertThat(payloads).containsExactly("a", "b", "c");
	}

	@Test
	void nackRedeliversAfterTheDelayWithTheAttemptCounted() {
		long id = this.template.send("retry", "x");
		try (Lease<String> lease = this.template.receive("retry", String.class).orElseThrow()) {
			lease.nack(Duration.ofSeconds(3));
		}
		assertThat(this.template.receive("retry", String.class)).isEmpty();
		Lease<String> again = org.awaitility.Awaitility.await()
			.atMost(Duration.ofSeconds(15))
			.pollInterval(Duration.ofMillis(50))
			.until(() -> this.template.receive("retry", String.class), Optional::isPresent)
			.orElseThrow();
		try (again) {
			assertThat(again.message().id()).isEqualTo(id);
			assertThat(again.message().attempt()).isEqualTo(2);
			again.ack();
		}
	}

	@Test
	void closeWithoutAckReleasesTheMessageAtOnce() {
		long id = this.template.send("release", "x");
		try (Lease<String> lease = this.template.receive("release", String.class).orElseThrow()) {
			assertThat(this.template.receive("release", String.class)).as("held by the open lease").isEmpty();
		}
		try (Lease<String> lease = this.template.receive("release", String.class).orElseThrow()) {
			assertThat(lease.message().id()).isEqualTo(id);
			assertThat(lease.message().attempt()).isEqualTo(2);
			lease.ack();
		}
		assertThat(advisoryLocks()).isZero();
	}

	@Test
	void rejectMovesTheMessageToTheDeadLetterQueueWithTheReason() {
		this.admin.declare(QueueDefinition.of("payments").withDeadLetterQueue("payments-failed"));
		long id = this.template.send("payments", "x");
		try (Lease<String> lease = this.template.receive("payments", String.class).orElseThrow()) {
			lease.reject("card declined");
		}
		assertThat(this.template.stats("payments").deadLettered()).isEqualTo(1);
		try (Lease<String> dead = this.template.receive("payments-failed", String.class).orElseThrow()) {
			assertThat(dead.message().id()).isEqualTo(id);
			assertThat(dead.message().header("pgqueue-dead-lettered-from")).isEqualTo("payments");
			assertThat(this.jdbc.queryForObject("SELECT last_error FROM pgqueue.message WHERE id = ?", String.class, id))
				.isEqualTo("Rejected: card declined");
			dead.close();
		}
		assertThat(this.admin.redrive("payments", 10)).isEqualTo(1);
		try (Lease<String> back = this.template.receive("payments", String.class).orElseThrow()) {
			assertThat(back.message().attempt()).isEqualTo(1);
			back.ack();
		}
	}

	@Test
	void unreadablePayloadIsDeadLetteredAtReceiveAndTheNextMessageDelivered() {
		this.jdbc.update("INSERT INTO pgqueue.message (queue, payload) VALUES ('typed', '{\"to\": [1, 2]}')");
		long good = this.template.send("typed", new Email("ok@example.com", "fine"));
		try (Lease<Email> lease = this.template.receive("typed", Email.class).orElseThrow()) {
			assertThat(lease.message().id()).isEqualTo(good);
			lease.ack();
		}
		assertThat(this.jdbc.queryForObject("SELECT last_error FROM pgqueue.message WHERE queue = 'typed.dlq'",
				String.class)).contains("Cannot read payload as").contains("Email");
	}

	@Test
	void jsonNullPayloadWrittenWithSqlIsDeadLetteredNotHandedOver() {
		this.jdbc.update("INSERT INTO pgqueue.message (queue, payload) VALUES ('nulls', 'null')");
		assertThat(this.template.receive("nulls", Email.class)).isEmpty();
		assertThat(this.jdbc.queryForObject("SELECT last_error FROM pgqueue.message WHERE queue = 'nulls.dlq'",
				String.class)).contains("it is JSON null");
	}

	@Test
	void statsCountReadyScheduledInFlightAndDead() {
		this.template.sendBatch("s", List.of("a", "b", "c"));
		this.template.send("s", "d", SendOptions.builder().delay(Duration.ofHours(1)).build());
		this.template.send("s.dlq", "dead");
		try (Lease<String> lease = this.template.receive("s", String.class).orElseThrow()) {
			QueueStats stats = this.template.stats("s");
			assertThat(stats.ready()).isEqualTo(2);
			assertThat(stats.scheduled()).isEqualTo(1);
			assertThat(stats.inFlight()).isEqualTo(1);
			assertThat(stats.deadLettered()).isEqualTo(1);
			assertThat(stats.oldestReadyAge().isNegative()).isFalse();
		}
	}

	@Test
	void invalidQueueNamesAreRejectedNamingTheValueAndNothingIsWritten() {
		for (String name : List.of("", "x".repeat(64), "it's", "a;b", "q'; DROP TABLE pgqueue.message; --",
				"with space", "ünïcode")) {
			assertThatIllegalArgumentException().isThrownBy(() -> this.template.send(name, "x"))
				.withMessageContaining("Invalid queue name '" + name.substring(0, Math.min(name.length(), 80)));
			assertThatIllegalArgumentException().isThrownBy(() -> this.template.sendBatch(name, List.of("x")));
			assertThatIllegalArgumentException().isThrownBy(() -> this.template.receive(name, String.class));
			assertThatIllegalArgumentException().isThrownBy(() -> this.template.cancel(name, 1));
		}
		assertThatIllegalArgumentException().isThrownBy(() -> this.template.send(null, "x"))
			.withMessage("Queue name must not be null");
		assertThat(this.template.send("x".repeat(63), "longest")).isPositive();
		assertThat(count()).isEqualTo(1);
	}

	@Test
	void plainSqlWithAnInvalidQueueNameIsRejectedByTheSchema() {
		assertThatThrownBy(() -> this.jdbc.update("INSERT INTO pgqueue.message (queue, payload) VALUES ('a;b', '1')"))
			.hasMessageContaining("queue_name");
	}

	@Test
	void nullPayloadIsRejectedAndNothingIsWritten() {
		assertThatIllegalArgumentException().isThrownBy(() -> this.template.send("emails", null))
			.withMessageContaining("Payload for queue 'emails' must not be null");
		assertThatIllegalArgumentException()
			.isThrownBy(() -> this.template.sendBatch("emails", java.util.Arrays.asList("a", null)));
		assertThat(count()).isZero();
	}

	static class Unwritable {

		public String getValue() {
			throw new IllegalStateException("boom");
		}

	}

	@Test
	void payloadJacksonCannotWriteFailsClearlyAndInsertsNothing() {
		assertThatThrownBy(() -> this.template.send("emails", new Unwritable()))
			.isInstanceOf(PayloadConversionException.class)
			.hasMessageContaining("Cannot write payload of type " + Unwritable.class.getName());
		assertThatThrownBy(() -> this.template.sendBatch("emails", List.of("fine", new Unwritable())))
			.isInstanceOf(PayloadConversionException.class);
		assertThat(count()).isZero();
	}

	@Test
	void payloadAboveTheLimitIsRejectedAtSendAndNothingIsWritten() {
		QueueTemplate small = new QueueTemplate(QueueContext.builder(this.dataSource).maxPayloadBytes(100).build());
		assertThatIllegalArgumentException().isThrownBy(() -> small.send("big", "x".repeat(200)))
			.withMessageContaining("Payload for queue 'big' is 202 bytes of JSON, above the limit of 100 bytes");
		assertThatIllegalArgumentException().isThrownBy(() -> small.sendBatch("big", List.of("ok", "é".repeat(60))));
		assertThat(count()).isZero();
		assertThat(small.send("big", "x".repeat(98))).isPositive();
	}

	@Test
	void payloadAboveTheLimitIsDeadLetteredAtConsumeWithoutBeingRead() {
		this.template.send("big", "x".repeat(500));
		long small = this.template.send("big", "ok");
		QueueTemplate strict = new QueueTemplate(QueueContext.builder(this.dataSource).maxPayloadBytes(100).build());
		try (Lease<String> lease = strict.receive("big", String.class).orElseThrow()) {
			assertThat(lease.message().id()).isEqualTo(small);
			lease.ack();
		}
		assertThat(this.jdbc.queryForObject("SELECT last_error FROM pgqueue.message WHERE queue = 'big.dlq'",
				String.class)).isEqualTo("Payload is 502 bytes, above the consumer's limit of 100 bytes "
						+ "(pgqueue.max-payload-size); it was not read");
	}

	@Test
	void payloadNamingAClassIsReadAsThePlainDeclaredType() {
		this.jdbc.update("INSERT INTO pgqueue.message (queue, payload) VALUES ('typed', "
				+ "'[\"java.lang.ProcessBuilder\", {\"command\": [\"false\"]}]')");
		try (Lease<Object> lease = this.template.<Object>receive("typed", (java.lang.reflect.Type) Object.class)
			.orElseThrow()) {
			assertThat(lease.payload()).isInstanceOf(List.class);
			lease.ack();
		}
	}

	@Test
	void invalidSendOptionsAreRejected() {
		assertThatIllegalArgumentException().isThrownBy(() -> SendOptions.builder().maxAttempts(0))
			.withMessageContaining("was 0");
		assertThatIllegalArgumentException().isThrownBy(() -> SendOptions.builder().delay(Duration.ofSeconds(-1)));
		assertThatIllegalArgumentException().isThrownBy(() -> SendOptions.builder().header("", "v"));
	}

	@Test
	void queueDefinitionsRejectInvalidValuesNamingTheQueue() {
		assertThatIllegalArgumentException().isThrownBy(() -> QueueDefinition.of("q").withMaxAttempts(0))
			.withMessageContaining("Queue 'q'");
		assertThatIllegalArgumentException()
			.isThrownBy(() -> QueueDefinition.of("q").withBackoff(Duration.ofSeconds(1), 0.5, Duration.ofSeconds(1)));
		assertThatIllegalArgumentException().isThrownBy(() -> QueueDefinition.of("q").withDeadLetterQueue("q"));
	}

	@Test
	void headersWrittenByPlainSqlAreReadAsText() {
		this.jdbc.update("INSERT INTO pgqueue.message (queue, payload, headers) VALUES ('h', '1', '{\"n\": 5, \"s\": \"v\"}')");
		try (Lease<Integer> lease = this.template.receive("h", Integer.class).orElseThrow()) {
			assertThat(lease.message().headers()).isEqualTo(Map.of("n", "5", "s", "v"));
			lease.ack();
		}
	}

}
