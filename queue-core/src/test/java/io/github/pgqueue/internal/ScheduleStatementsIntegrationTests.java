package io.github.pgqueue.internal;

import java.sql.Connection;
import java.sql.SQLException;
import java.sql.Timestamp;
import java.time.Instant;
import java.time.temporal.ChronoUnit;
import java.util.List;
import java.util.Map;

import io.github.pgqueue.testing.Db;
import io.github.pgqueue.testing.PostgresExtension;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;

import org.springframework.jdbc.core.JdbcTemplate;

import static io.github.pgqueue.internal.StatementConnections.rows;
import static io.github.pgqueue.internal.StatementConnections.update;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.within;

/**
 * Each statement of {@code schedule.sql}, run by its name on PostgreSQL as the schedulers and
 * {@code QueueAdmin} run it, on a plain connection: the columns it returns, or the rows it changed,
 * and what it changed in the {@code schedule} table. A test method is named after its statement
 * (checked by {@link StatementResourcesTests}).
 */
@ExtendWith(PostgresExtension.class)
class ScheduleStatementsIntegrationTests {

	private final JdbcTemplate jdbc = Db.jdbc();

	private final QueueSql sql = QueueSql.of("pgqueue");

	private final StatementConnections connections = new StatementConnections();

	private final Instant hourAgo = Instant.now().truncatedTo(ChronoUnit.SECONDS).minus(1, ChronoUnit.HOURS);

	@AfterEach
	void closeConnections() throws SQLException {
		this.connections.close();
	}

	@Test
	void databaseNow() throws SQLException {
		List<Map<String, Object>> rows = rows(this.connections.open(), this.sql.databaseNow, new QueueSql.None());
		assertThat(((Timestamp) rows.get(0).get("now")).toInstant()).isCloseTo(Instant.now(), within(5, ChronoUnit.SECONDS));
	}

	@Test
	void dueSchedules() throws SQLException {
		insert("later", "0 0 * * * *", Instant.now().plus(1, ChronoUnit.HOURS), false);
		insert("paused", "* * * * * *", this.hourAgo, true);
		insert("second", "* * * * * *", this.hourAgo.plusSeconds(1), false);
		insert("first", "0 * * * * *", this.hourAgo, false);
		insert("soon", "* * * * * *", Instant.now().plusMillis(500), false);
		Connection connection = this.connections.open();

		assertThat(rows(connection, this.sql.dueSchedules, new QueueSql.DueSchedules(0, 10)))
			.extracting((row) -> row.get("name"))
			.containsExactly("first", "second");
		List<Map<String, Object>> withinASecond = rows(connection, this.sql.dueSchedules,
				new QueueSql.DueSchedules(1_000, 10));
		assertThat(withinASecond).extracting((row) -> row.get("name")).containsExactly("first", "second", "soon");
		assertThat(withinASecond.get(0)).containsKeys("cron", "zone", "missed", "next_fire_at", "now")
			.containsEntry("cron", "0 * * * * *")
			.containsEntry("missed", "fire-once");
		assertThat(rows(connection, this.sql.dueSchedules, new QueueSql.DueSchedules(1_000, 1))).hasSize(1);
	}

	@Test
	void fireSchedule() throws SQLException {
		insert("ticks", "0 * * * * *", this.hourAgo, false);
		Connection connection = this.connections.open();
		Instant next = this.hourAgo.plusSeconds(60);

		List<Map<String, Object>> fired = rows(connection, this.sql.fireSchedule, fire(this.hourAgo, next, true));
		assertThat(fired).hasSize(1);
		assertThat(fired.get(0)).containsEntry("queue", "ticks").containsEntry("exchange", null)
			.containsEntry("routing_key", null).containsEntry("payload", "{\"n\": 1}")
			.containsEntry("headers", "{\"h\": \"v\"}");
		assertThat(this.jdbc.queryForMap("SELECT next_fire_at, last_fired_at, fired FROM pgqueue.schedule"))
			.containsEntry("next_fire_at", Timestamp.from(next))
			.containsEntry("last_fired_at", Timestamp.from(this.hourAgo))
			.containsEntry("fired", 1L);

		assertThat(rows(connection, this.sql.fireSchedule, fire(this.hourAgo, next.plusSeconds(60), true)))
			.as("the tick has moved: a second fire of it changes nothing").isEmpty();
		assertThat(rows(connection, this.sql.fireSchedule, new QueueSql.FireSchedule("ticks", next,
				next.plusSeconds(60), true, next, "* * * * * *", "UTC", "fire-once")))
			.as("another cron than the row's").isEmpty();
		assertThat(rows(connection, this.sql.fireSchedule, new QueueSql.FireSchedule("ticks", next,
				next.plusSeconds(120), false, null, "0 * * * * *", "UTC", "fire-once")))
			.as("a skip moves the tick without counting a send").hasSize(1);
		assertThat(this.jdbc.queryForMap("SELECT next_fire_at, last_fired_at, fired FROM pgqueue.schedule"))
			.containsEntry("next_fire_at", Timestamp.from(next.plusSeconds(120)))
			.containsEntry("last_fired_at", Timestamp.from(this.hourAgo))
			.containsEntry("fired", 1L);

		Connection other = this.connections.open();
		other.setAutoCommit(false);
		update(other, this.sql.pauseSchedule, new QueueSql.ScheduleName("ticks"));
		assertThat(rows(connection, this.sql.fireSchedule, fire(next.plusSeconds(120), next.plusSeconds(180), true)))
			.as("a row another transaction has locked is skipped, not waited for").isEmpty();
		other.commit();
		assertThat(rows(connection, this.sql.fireSchedule, fire(next.plusSeconds(120), next.plusSeconds(180), true)))
			.as("a paused schedule does not fire").isEmpty();
	}

	@Test
	void createSchedule() throws SQLException {
		Connection connection = this.connections.open();
		assertThat(update(connection, this.sql.createSchedule, definition("reports", "0 0 2 * * *"))).isOne();
		assertThat(update(connection, this.sql.createSchedule, definition("reports", "0 0 3 * * *"))).isZero();
		assertThat(this.jdbc.queryForMap("SELECT cron, zone, exchange, routing_key, payload::text, headers::text, "
				+ "missed, paused, next_fire_at, fired FROM pgqueue.schedule"))
			.containsEntry("cron", "0 0 2 * * *").containsEntry("zone", "Europe/Paris")
			.containsEntry("exchange", "orders").containsEntry("routing_key", "order.tick")
			.containsEntry("payload", "{\"n\": 1}").containsEntry("headers", "{\"h\": \"v\"}")
			.containsEntry("missed", "skip").containsEntry("paused", false)
			.containsEntry("next_fire_at", Timestamp.from(this.hourAgo)).containsEntry("fired", 0L);
	}

	@Test
	void alterSchedule() throws SQLException {
		insert("ticks", "0 * * * * *", this.hourAgo, true);
		Connection connection = this.connections.open();
		QueueSql.ScheduleDefinition sameCron = new QueueSql.ScheduleDefinition("ticks", "0 * * * * *", "UTC", "other",
				null, null, "[2]", "{}", "skip", Instant.now());
		assertThat(update(connection, this.sql.alterSchedule, sameCron)).isOne();
		assertThat(this.jdbc.queryForMap("SELECT queue, payload::text, missed, paused, next_fire_at FROM pgqueue.schedule"))
			.containsEntry("queue", "other").containsEntry("payload", "[2]").containsEntry("missed", "skip")
			.containsEntry("paused", true)
			.as("the cron and the zone are the same: the tick due stays due")
			.containsEntry("next_fire_at", Timestamp.from(this.hourAgo));

		Instant next = Instant.now().truncatedTo(ChronoUnit.SECONDS).plusSeconds(30);
		assertThat(update(connection, this.sql.alterSchedule, new QueueSql.ScheduleDefinition("ticks", "0 * * * * *",
				"Europe/Paris", "other", null, null, "[2]", "{}", "skip", next))).isOne();
		assertThat(this.jdbc.queryForObject("SELECT next_fire_at FROM pgqueue.schedule", Timestamp.class))
			.isEqualTo(Timestamp.from(next));
		assertThat(update(connection, this.sql.alterSchedule, definition("absent", "* * * * * *"))).isZero();
	}

	@Test
	void pauseSchedule() throws SQLException {
		insert("ticks", "* * * * * *", this.hourAgo, false);
		Connection connection = this.connections.open();
		assertThat(update(connection, this.sql.pauseSchedule, new QueueSql.ScheduleName("ticks"))).isOne();
		assertThat(update(connection, this.sql.pauseSchedule, new QueueSql.ScheduleName("absent"))).isZero();
		assertThat(this.jdbc.queryForObject("SELECT paused FROM pgqueue.schedule", Boolean.class)).isTrue();
	}

	@Test
	void resumeSchedule() throws SQLException {
		insert("paused", "* * * * * *", this.hourAgo, true);
		insert("running", "* * * * * *", this.hourAgo, false);
		Connection connection = this.connections.open();
		Instant next = Instant.now().truncatedTo(ChronoUnit.SECONDS).plusSeconds(1);

		assertThat(update(connection, this.sql.resumeSchedule, new QueueSql.ResumeSchedule("paused", "* * * * * *",
				"UTC", next))).isOne();
		assertThat(update(connection, this.sql.resumeSchedule, new QueueSql.ResumeSchedule("running", "* * * * * *",
				"UTC", next))).isOne();
		assertThat(update(connection, this.sql.resumeSchedule, new QueueSql.ResumeSchedule("paused", "0 * * * * *",
				"UTC", next))).as("changed meanwhile").isZero();
		assertThat(this.jdbc.queryForList("SELECT name, paused, next_fire_at FROM pgqueue.schedule ORDER BY name"))
			.containsExactly(Map.of("name", "paused", "paused", false, "next_fire_at", Timestamp.from(next)),
					Map.of("name", "running", "paused", false, "next_fire_at", Timestamp.from(this.hourAgo)));
	}

	@Test
	void removeSchedule() throws SQLException {
		insert("ticks", "* * * * * *", this.hourAgo, false);
		Connection connection = this.connections.open();
		assertThat(update(connection, this.sql.removeSchedule, new QueueSql.ScheduleName("ticks"))).isOne();
		assertThat(update(connection, this.sql.removeSchedule, new QueueSql.ScheduleName("ticks"))).isZero();
		assertThat(Db.queryForLong("SELECT count(*) FROM pgqueue.schedule")).isZero();
	}

	@Test
	void schedules() throws SQLException {
		insert("b", "* * * * * *", this.hourAgo, true);
		insert("a", "0 * * * * *", this.hourAgo, false);
		Connection connection = this.connections.open();
		assertThat(rows(connection, this.sql.schedules, new QueueSql.ScheduleName(null)))
			.extracting((row) -> row.get("name")).containsExactly("a", "b");
		List<Map<String, Object>> one = rows(connection, this.sql.schedules, new QueueSql.ScheduleName("b"));
		assertThat(one).hasSize(1);
		assertThat(one.get(0)).containsEntry("cron", "* * * * * *").containsEntry("queue", "ticks")
			.containsEntry("payload", "{\"n\": 1}").containsEntry("headers", "{\"h\": \"v\"}")
			.containsEntry("paused", true).containsEntry("last_fired_at", null).containsEntry("last_sent_at", null)
			.containsEntry("fired", 0L)
			.containsKeys("zone", "exchange", "routing_key", "missed", "next_fire_at");
	}

	@Test
	void targetDeclared() throws SQLException {
		this.jdbc.update("INSERT INTO pgqueue.queue (name) VALUES ('ticks')");
		this.jdbc.update("INSERT INTO pgqueue.exchange (name, type) VALUES ('orders', 'topic')");
		Connection connection = this.connections.open();
		assertThat(rows(connection, this.sql.targetDeclared, new QueueSql.ScheduleTarget("ticks", null)))
			.containsExactly(Map.of("declared", true));
		assertThat(rows(connection, this.sql.targetDeclared, new QueueSql.ScheduleTarget(null, "orders")))
			.containsExactly(Map.of("declared", true));
		assertThat(rows(connection, this.sql.targetDeclared, new QueueSql.ScheduleTarget("orders", null)))
			.as("an exchange is not a queue").containsExactly(Map.of("declared", false));
		assertThat(rows(connection, this.sql.targetDeclared, new QueueSql.ScheduleTarget(null, "absent")))
			.containsExactly(Map.of("declared", false));
	}

	private QueueSql.FireSchedule fire(Instant due, Instant next, boolean send) {
		return new QueueSql.FireSchedule("ticks", due, next, send, send ? due : null, "0 * * * * *", "UTC", "fire-once");
	}

	private QueueSql.ScheduleDefinition definition(String name, String cron) {
		return new QueueSql.ScheduleDefinition(name, cron, "Europe/Paris", null, "orders", "order.tick", "{\"n\": 1}",
				"{\"h\": \"v\"}", "skip", this.hourAgo);
	}

	private void insert(String name, String cron, Instant next, boolean paused) {
		this.jdbc.update("INSERT INTO pgqueue.schedule (name, cron, queue, payload, headers, paused, next_fire_at) "
				+ "VALUES (?, ?, 'ticks', '{\"n\": 1}', '{\"h\": \"v\"}', ?, ?)", name, cron, paused, Timestamp.from(next));
	}

}
