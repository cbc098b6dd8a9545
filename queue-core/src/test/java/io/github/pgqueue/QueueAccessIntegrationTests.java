package io.github.pgqueue;

import java.util.List;

import javax.sql.DataSource;

import io.github.pgqueue.testing.EmbeddedPostgres;
import io.github.pgqueue.testing.PostgresExtension;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;

import org.springframework.jdbc.core.JdbcTemplate;
import org.springframework.jdbc.datasource.DriverManagerDataSource;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatExceptionOfType;
import static org.assertj.core.api.Assertions.assertThatIllegalArgumentException;

/**
 * Per-role access to queues, enforced by PostgreSQL: two real login roles, one granted access to
 * a queue and one not, through pgqueue and through plain SQL.
 */
@ExtendWith(PostgresExtension.class)
class QueueAccessIntegrationTests {

	private final EmbeddedPostgres postgres = EmbeddedPostgres.get();

	private final JdbcTemplate owner = new JdbcTemplate(this.postgres.dataSource());

	private final QueueAdmin admin = new QueueAdmin(QueueTemplate.builder(this.postgres.dataSource()).build());

	@BeforeEach
	void roles() {
		for (String role : List.of("alice", "bob")) {
			this.owner.execute("DO $$ BEGIN CREATE ROLE " + role + " LOGIN; EXCEPTION WHEN duplicate_object THEN NULL; END $$");
		}
		this.owner.update("DELETE FROM pgqueue.queue_access");
	}

	@Test
	void aRoleGrantedAQueueSendsAndConsumesItAndARoleWithoutTheGrantIsRefusedAndSeesNothing() {
		this.admin.grant("alice", "payroll", QueueAdmin.Access.SEND, QueueAdmin.Access.CONSUME);
		// A role granted nothing at all is held by its table privileges only (bob has none before
		// this); a grant on one queue restricts bob to the queues he is granted.
		assertThatExceptionOfType(RuntimeException.class)
			.isThrownBy(() -> QueueTemplate.builder(as("bob")).build().send("payroll", 1))
			.havingRootCause().withMessageContaining("permission denied");
		this.admin.grant("bob", "other", QueueAdmin.Access.SEND);
		QueueTemplate alice = QueueTemplate.builder(as("alice")).build();
		QueueTemplate bob = QueueTemplate.builder(as("bob")).build();

		long id = alice.send("payroll", 1200);
		assertThatExceptionOfType(RuntimeException.class).isThrownBy(() -> bob.send("payroll", 999))
			.havingRootCause().withMessageContaining("violates row-level security policy");
		assertThat(bob.receive("payroll", Integer.class)).as("bob gets nothing").isEmpty();
		assertThat(new JdbcTemplate(as("bob")).queryForObject(
				"SELECT count(*) FROM pgqueue.message WHERE queue = 'payroll'", Long.class))
			.as("nor does plain SQL as bob").isZero();
		assertThat(new JdbcTemplate(as("bob")).update("DELETE FROM pgqueue.message WHERE queue = 'payroll'")).isZero();

		try (Lease<Integer> lease = alice.receive("payroll", Integer.class).orElseThrow()) {
			assertThat(lease.message().id()).isEqualTo(id);
			lease.ack();
		}
		assertThat(this.owner.queryForObject("SELECT count(*) FROM pgqueue.message", Long.class)).isZero();
	}

	@Test
	void aSendOnlyRoleCannotTakeWhatItSentAndARevokedRoleLosesItsAccess() {
		this.admin.grant("alice", "audit", QueueAdmin.Access.SEND);
		QueueTemplate alice = QueueTemplate.builder(as("alice")).build();
		alice.send("audit", "entry");
		assertThat(alice.receive("audit", String.class)).as("send only: nothing to claim").isEmpty();
		assertThat(new JdbcTemplate(as("alice")).update("DELETE FROM pgqueue.message WHERE queue = 'audit'"))
			.as("nor to delete").isZero();

		this.admin.grant("alice", "audit", QueueAdmin.Access.CONSUME);
		this.admin.revoke("alice", "audit", QueueAdmin.Access.SEND);
		assertThatExceptionOfType(RuntimeException.class).isThrownBy(() -> alice.send("audit", "another"))
			.havingRootCause().withMessageContaining("violates row-level security policy");
		try (Lease<String> lease = alice.receive("audit", String.class).orElseThrow()) {
			lease.ack();
		}
		assertThatIllegalArgumentException().isThrownBy(() -> this.admin.grant("mallory", "audit", QueueAdmin.Access.SEND))
			.withMessageContaining("PostgreSQL role 'mallory' does not exist");
	}

	@Test
	void aConsumerRoleCanDeadLetterIntoTheDeadLetterQueueItWasGrantedWithTheQueue() {
		this.admin.grant("alice", "invoices", QueueAdmin.Access.CONSUME);
		this.owner.update("INSERT INTO pgqueue.message (queue, payload) VALUES ('invoices', '1')");
		QueueTemplate alice = QueueTemplate.builder(as("alice")).build();
		try (Lease<Integer> lease = alice.receive("invoices", Integer.class).orElseThrow()) {
			lease.reject("malformed invoice");
		}
		assertThat(this.owner.queryForObject("SELECT queue FROM pgqueue.message", String.class))
			.isEqualTo("invoices.dlq");
	}

	private DataSource as(String role) {
		return new DriverManagerDataSource(this.postgres.jdbcUrl(), role, "");
	}

}
