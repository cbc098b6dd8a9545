package io.github.pgqueue;

import java.util.List;

import javax.sql.DataSource;

import io.github.pgqueue.internal.ClaimedMessage;
import io.github.pgqueue.internal.ConsumerSession;
import io.github.pgqueue.testing.EmbeddedPostgres;
import io.github.pgqueue.testing.PostgresExtension;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;

import org.springframework.jdbc.core.JdbcTemplate;

import static io.github.pgqueue.testing.Db.advisoryLocks;
import static io.github.pgqueue.testing.Db.queueOf;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatIllegalArgumentException;

/**
 * Dead-letter queues: redrive takes back only what came from the queue it is asked for, and no
 * configuration makes a message move from dead-letter queue to dead-letter queue forever.
 */
@ExtendWith(PostgresExtension.class)
class DeadLetterIntegrationTests {

	private final DataSource dataSource = EmbeddedPostgres.get().dataSource();

	private final JdbcTemplate jdbc = new JdbcTemplate(this.dataSource);

	private final QueueTemplate template = QueueTemplate.builder(this.dataSource).build();

	private final QueueAdmin admin = new QueueAdmin(this.template.context());

	@Test
	void redriveMovesBackOnlyTheDeadLettersThatCameFromThatQueue() {
		this.admin.declare(QueueDefinition.of("emails").withDeadLetterQueue("failed"));
		this.admin.declare(QueueDefinition.of("sms").withDeadLetterQueue("failed"));
		long email = rejected("emails", "an email");
		long sms = rejected("sms", "an sms");
		this.jdbc.update("INSERT INTO pgqueue.message (queue, payload) VALUES ('failed', '\"written by hand\"')");

		assertThat(this.admin.redrive("emails", 100)).isEqualTo(1);

		assertThat(queueOf(email)).isEqualTo("emails");
		assertThat(queueOf(sms)).isEqualTo("failed");
		assertThat(this.jdbc.queryForObject("SELECT count(*) FROM pgqueue.message WHERE queue = 'failed'", Long.class))
			.as("the sms and the message written to the dead-letter queue by hand stay").isEqualTo(2);
		assertThat(this.jdbc.queryForObject("SELECT headers->>'pgqueue-dead-lettered-from' IS NOT NULL FROM pgqueue.message "
				+ "WHERE id = ?", Boolean.class, email)).as("a redriven message is an ordinary message again").isFalse();
	}

	@Test
	void redriveLeavesADeadLetterThatAConsumerHolds() {
		long id = rejected("held", "x");
		try (ConsumerSession session = this.template.context().openSession()) {
			assertThat(session.claim("held.dlq", 1).messages()).hasSize(1);
			assertThat(this.admin.redrive("held", 10)).isZero();
			session.release(List.of(id), true);
		}
		assertThat(this.admin.redrive("held", 10)).isEqualTo(1);
		assertThat(advisoryLocks()).isZero();
	}

	@Test
	void longQueueNamesGetDistinctDefaultDeadLetterQueuesThatAreNeverThemselves() {
		String a = "a".repeat(59) + "-one";
		String b = "a".repeat(59) + "-two";
		String selfLooking = "b".repeat(59) + ".dlq";
		assertThat(QueueNames.defaultDeadLetterQueue(a)).isNotEqualTo(QueueNames.defaultDeadLetterQueue(b))
			.hasSizeLessThanOrEqualTo(63).endsWith(".dlq");
		assertThat(QueueNames.defaultDeadLetterQueue(selfLooking)).isNotEqualTo(selfLooking);
		assertThat(QueueNames.defaultDeadLetterQueue("emails")).isEqualTo("emails.dlq");
		this.admin.declare(QueueDefinition.of(a));
		assertThat(this.admin.declaredQueues()).contains(QueueNames.defaultDeadLetterQueue(a));
		assertThat(this.template.stats(a).deadLettered()).isZero();
		assertThat(this.admin.deadLetterQueueOf(a)).isEqualTo(QueueNames.defaultDeadLetterQueue(a));
	}

	@Test
	void aQueueThatIsItsOwnDeadLetterQueueOrACycleIsRejectedAtDeclaration() {
		assertThatIllegalArgumentException()
			.isThrownBy(() -> this.admin.declare(QueueDefinition.of("loop").withDeadLetterQueue("loop")))
			.withMessageContaining("'loop'").withMessageContaining("its own dead-letter queue");
		this.admin.declare(QueueDefinition.of("a").withDeadLetterQueue("b"));
		this.admin.declare(QueueDefinition.of("b").withDeadLetterQueue("c"));
		assertThatIllegalArgumentException()
			.isThrownBy(() -> this.admin.declare(QueueDefinition.of("c").withDeadLetterQueue("a")))
			.withMessageContaining("c -> a -> b -> c");
		assertThat(this.admin.declaredQueues()).doesNotContain("c.dlq");
	}

	@Test
	void aMessageThatFailsInADeadLetterQueueIsParkedThereNotMovedOn() {
		this.admin.declare(QueueDefinition.of("orders").withMaxAttempts(1));
		long id = rejected("orders", "order");
		try (Lease<String> dead = this.template.receive("orders.dlq", String.class).orElseThrow()) {
			dead.reject("the dead-letter consumer cannot handle it either");
		}
		assertThat(queueOf(id)).isEqualTo("orders.dlq");
		assertThat(this.template.receive("orders.dlq", String.class)).as("parked: no consumer gets it").isEmpty();
		assertThat(this.jdbc.queryForObject("SELECT last_error FROM pgqueue.message WHERE id = ?", String.class, id))
			.contains("the dead-letter consumer cannot handle it either");
		assertThat(this.template.stats("orders").deadLettered()).isEqualTo(1);

		assertThat(this.admin.redrive("orders", 10)).isEqualTo(1);
		try (Lease<String> back = this.template.receive("orders", String.class).orElseThrow()) {
			assertThat(back.message().id()).isEqualTo(id);
			back.ack();
		}
	}

	@Test
	void exhaustedMessagesOfADeadLetterQueueAreParkedAtClaim() {
		long id = rejected("parcels", "p");
		this.jdbc.update("UPDATE pgqueue.message SET attempts = 5 WHERE id = ?", id);
		try (ConsumerSession session = this.template.context().openSession()) {
			ConsumerSession.Claim claim = session.claim("parcels.dlq", 10);
			assertThat(claim.messages()).extracting(ClaimedMessage::id).isEmpty();
		}
		assertThat(queueOf(id)).isEqualTo("parcels.dlq");
		assertThat(this.jdbc.queryForObject("SELECT visible_at = 'infinity' FROM pgqueue.message WHERE id = ?",
				Boolean.class, id)).isTrue();
		assertThat(advisoryLocks()).isZero();
	}

	private long rejected(String queue, String payload) {
		long id = this.template.send(queue, payload);
		try (Lease<String> lease = this.template.receive(queue, String.class).orElseThrow()) {
			assertThat(lease.message().id()).isEqualTo(id);
			lease.reject("test");
		}
		return id;
	}

}
