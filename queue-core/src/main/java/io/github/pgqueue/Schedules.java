package io.github.pgqueue;

import java.sql.ResultSet;
import java.sql.SQLException;
import java.time.Instant;
import java.time.OffsetDateTime;
import java.time.ZoneId;
import java.util.List;
import java.util.Optional;

import io.github.pgqueue.internal.QueueSql;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import org.springframework.jdbc.core.JdbcTemplate;

/**
 * The schedules of {@link QueueAdmin}: their rows in the {@code schedule} table (V21). A new
 * schedule's first tick, and a changed one's when its cron expression or zone changed, is the first
 * after the database's now; the {@link ScheduleRunner}s of every JVM send the ticks.
 */
final class Schedules {

	private static final Logger logger = LoggerFactory.getLogger(Schedules.class);

	/** How often a declare tries again when the schedule is removed or created between its two statements. */
	private static final int DECLARE_ATTEMPTS = 3;

	private final JdbcTemplate jdbc;

	private final QueueSql sql;

	Schedules(QueueContext context) {
		this.jdbc = new JdbcTemplate(context.dataSource());
		this.sql = context.sql();
	}

	void create(ScheduleDefinition definition) {
		requireTarget(definition);
		if (this.jdbc.update(this.sql.createSchedule.with(row(definition))) == 0) {
			throw new IllegalStateException("Schedule '" + definition.name() + "' already exists; change it with "
					+ "alterSchedule");
		}
		logger.info("Created schedule '{}' ({} in {}, to {})", definition.name(), definition.cron(), definition.zone(),
				definition.target());
	}

	void alter(ScheduleDefinition definition) {
		requireTarget(definition);
		if (this.jdbc.update(this.sql.alterSchedule.with(row(definition))) == 0) {
			throw new IllegalStateException("Schedule '" + definition.name() + "' does not exist; create it first");
		}
	}

	void declare(ScheduleDefinition definition) {
		requireTarget(definition);
		for (int i = 0; i < DECLARE_ATTEMPTS; i++) {
			QueueSql.ScheduleDefinition row = row(definition);
			if (this.jdbc.update(this.sql.createSchedule.with(row)) > 0
					|| this.jdbc.update(this.sql.alterSchedule.with(row)) > 0) {
				return;
			}
		}
		throw new IllegalStateException("Schedule '" + definition.name() + "' was created and removed again by others "
				+ "while it was declared, " + DECLARE_ATTEMPTS + " times; declare it again");
	}

	void pause(String name) {
		if (this.jdbc.update(this.sql.pauseSchedule.with(new QueueSql.ScheduleName(ScheduleDefinition.requireName(name)))) == 0) {
			throw new IllegalStateException("Schedule '" + name + "' does not exist");
		}
	}

	void resume(String name) {
		ScheduleDefinition definition = find(ScheduleDefinition.requireName(name))
			.orElseThrow(() -> new IllegalStateException("Schedule '" + name + "' does not exist"))
			.definition();
		Instant next = definition.nextTickAfter(databaseNow());
		if (this.jdbc.update(this.sql.resumeSchedule.with(new QueueSql.ResumeSchedule(name, definition.cron(),
				definition.zone().getId(), next))) == 0) {
			throw new IllegalStateException("Schedule '" + name + "' was changed or removed while it was resumed; "
					+ "resume it again");
		}
	}

	boolean remove(String name) {
		return this.jdbc.update(this.sql.removeSchedule.with(new QueueSql.ScheduleName(ScheduleDefinition.requireName(name)))) > 0;
	}

	List<ScheduleInfo> list() {
		return this.jdbc.query(this.sql.schedules.with(new QueueSql.ScheduleName(null)), (rs, row) -> info(rs));
	}

	Optional<ScheduleInfo> find(String name) {
		return this.jdbc.query(this.sql.schedules.with(new QueueSql.ScheduleName(ScheduleDefinition.requireName(name))),
				(rs, row) -> info(rs)).stream().findFirst();
	}

	private QueueSql.ScheduleDefinition row(ScheduleDefinition definition) {
		return new QueueSql.ScheduleDefinition(definition.name(), definition.cron(), definition.zone().getId(),
				definition.queue(), definition.exchange(), definition.routingKey(), definition.payload(),
				MessageHeaders.write(definition.headers()), definition.missed().value(),
				definition.nextTickAfter(databaseNow()));
	}

	private void requireTarget(ScheduleDefinition definition) {
		boolean declared = this.jdbc.query(this.sql.targetDeclared.with(new QueueSql.ScheduleTarget(definition.queue(),
				definition.exchange())), (rs, row) -> rs.getBoolean("declared")).get(0);
		if (!declared) {
			throw new IllegalStateException((definition.queue() != null)
					? "Schedule '" + definition.name() + "' sends to queue '" + definition.queue() + "', which is not "
							+ "declared; declare it first (under pgqueue.queues, or with QueueAdmin.create)"
					: "Schedule '" + definition.name() + "' publishes to exchange '" + definition.exchange() + "', "
							+ "which is not declared; declare it first (under pgqueue.exchanges, or with QueueAdmin.declare)");
		}
	}

	private Instant databaseNow() {
		return this.jdbc.query(this.sql.databaseNow.with(new QueueSql.None()), (rs, row) -> instant(rs, "now")).get(0);
	}

	static ScheduleInfo info(ResultSet rs) throws SQLException {
		String queue = rs.getString("queue");
		ScheduleDefinition definition = new ScheduleDefinition(rs.getString("name"), rs.getString("cron"),
				ZoneId.of(rs.getString("zone")), queue, rs.getString("exchange"), rs.getString("routing_key"),
				rs.getString("payload"), MessageHeaders.read(rs.getString("headers")),
				ScheduleDefinition.Missed.of(rs.getString("missed")));
		return new ScheduleInfo(definition, rs.getBoolean("paused"), instant(rs, "next_fire_at"),
				instant(rs, "last_fired_at"), instant(rs, "last_sent_at"), rs.getLong("fired"));
	}

	static Instant instant(ResultSet rs, String column) throws SQLException {
		OffsetDateTime value = rs.getObject(column, OffsetDateTime.class);
		return (value != null) ? value.toInstant() : null;
	}

}
