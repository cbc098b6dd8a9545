package io.github.pgqueue;

import java.time.Duration;
import java.time.Instant;
import java.time.ZoneId;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;

import io.github.pgqueue.internal.QueueSql;
import io.micrometer.core.instrument.Counter;
import io.micrometer.core.instrument.MeterRegistry;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import org.springframework.jdbc.core.JdbcTemplate;
import org.springframework.jdbc.support.JdbcTransactionManager;
import org.springframework.scheduling.support.CronExpression;
import org.springframework.transaction.TransactionDefinition;
import org.springframework.transaction.support.TransactionTemplate;

/**
 * Sends one due tick of one schedule: in one transaction, the compare-and-set that moves the
 * schedule from that tick to its next ({@code fire_schedule}) and, only if it moved it, the send,
 * through {@link QueueTemplate}'s own statements (the same trigger, notification, observation and
 * {@code pgqueue.messages.sent}). Of several JVMs that fire one tick at once, one moves the
 * schedule and sends; the others update no row and send nothing. A send that fails rolls the move
 * back, and the tick is still due.
 * <p>
 * A tick is late, and sent, when the tick after it is not due yet, or when it is less than
 * {@link #GRACE} old (a scheduler that fell behind catches up tick by tick). Otherwise it was
 * missed while no JVM ran the schedule, with every tick after it up to now: {@code fire-once}
 * sends one message for the latest of them, {@code skip} none, and the schedule goes on from its
 * first tick after now.
 */
final class ScheduleFiring {

	private static final Logger logger = LoggerFactory.getLogger(ScheduleFiring.class);

	/** How old a tick may be and still count as late rather than missed (when the next one is due too). */
	static final Duration GRACE = Duration.ofSeconds(10);

	private final QueueTemplate template;

	private final JdbcTemplate jdbc;

	private final QueueSql sql;

	private final TransactionTemplate transactions;

	private final MeterRegistry meterRegistry;

	private final Map<String, CronExpression> crons = new ConcurrentHashMap<>();

	private final Map<String, Counter> sent = new ConcurrentHashMap<>();

	ScheduleFiring(QueueTemplate template) {
		QueueContext context = template.context();
		this.template = template;
		this.jdbc = new JdbcTemplate(context.dataSource());
		this.sql = context.sql();
		this.transactions = new TransactionTemplate(new JdbcTransactionManager(context.dataSource()));
		// the compare-and-set re-reads the newest row version under its lock: READ COMMITTED's rule
		this.transactions.setIsolationLevel(TransactionDefinition.ISOLATION_READ_COMMITTED);
		this.meterRegistry = context.meterRegistry();
	}

	/** A schedule whose next tick is due at {@code nextFireAt}, read when the database's clock said {@code now}. */
	record Due(String name, String cron, String zone, String missed, Instant nextFireAt, Instant now) {
	}

	/** The active schedules due within {@code horizon}, earliest first, at most {@code limit}. */
	List<Due> due(Duration horizon, int limit) {
		return this.jdbc.query(this.sql.dueSchedules.with(new QueueSql.DueSchedules(horizon.toMillis(), limit)),
				(rs, row) -> new Due(rs.getString("name"), rs.getString("cron"), rs.getString("zone"),
						rs.getString("missed"), Schedules.instant(rs, "next_fire_at"), Schedules.instant(rs, "now")));
	}

	/**
	 * What to do with the due tick {@code due}: send {@code tick} (none when null) and move the
	 * schedule to {@code next}; {@code missedFrom} is the first missed tick when ticks were missed.
	 */
	record Plan(Instant tick, Instant next, Instant missedFrom) {
	}

	/** How a fire ended. */
	enum Result {

		/** This JVM moved the schedule and sent the tick's message. */
		SENT,

		/** This JVM moved the schedule past missed ticks and sent nothing ({@code skip}). */
		SKIPPED,

		/** Another JVM has the tick (or the schedule changed): nothing done here. */
		LOST

	}

	/** How a fire ended, and the schedule's next tick as this JVM computed it. */
	record Outcome(Result result, Plan plan) {
	}

	static Plan plan(CronExpression cron, ZoneId zone, ScheduleDefinition.Missed missed, Instant due, Instant now) {
		Instant following = next(cron, zone, due);
		if (following.isAfter(now) || !due.isBefore(now.minus(GRACE))) {
			return new Plan(due, following, null);
		}
		Instant latest = latestTick(cron, zone, due, now);
		Instant next = next(cron, zone, latest);
		return new Plan((missed == ScheduleDefinition.Missed.FIRE_ONCE) ? latest : null, next, due);
	}

	/**
	 * The latest tick at or before {@code now}, {@code due} being one: found from a window before
	 * now that doubles until a tick falls in it, so that the ticks walked are about those of the last
	 * stretch, not of the whole outage.
	 */
	static Instant latestTick(CronExpression cron, ZoneId zone, Instant due, Instant now) {
		Instant start = due;
		for (long seconds = 1;; seconds *= 2) {
			Instant from = now.minusSeconds(seconds);
			if (!from.isAfter(due)) {
				break;
			}
			Instant tick = ScheduleDefinition.nextTick(cron, zone, from);
			if (tick != null && !tick.isAfter(now)) {
				start = tick;
				break;
			}
		}
		Instant latest = start;
		for (Instant tick = ScheduleDefinition.nextTick(cron, zone, latest); tick != null
				&& !tick.isAfter(now); tick = ScheduleDefinition.nextTick(cron, zone, tick)) {
			latest = tick;
		}
		return latest;
	}

	private static Instant next(CronExpression cron, ZoneId zone, Instant after) {
		Instant next = ScheduleDefinition.nextTick(cron, zone, after);
		if (next == null) {
			throw new IllegalStateException("Cron expression '" + cron + "' has no tick after " + after);
		}
		return next;
	}

	/**
	 * Fires the due tick of {@code due}.
	 * @throws RuntimeException if the send failed (the tick is then still due) or the row is not a
	 * valid schedule
	 */
	Outcome fire(Due due) {
		CronExpression cron = this.crons.computeIfAbsent(due.cron(), CronExpression::parse);
		ZoneId zone = ZoneId.of(due.zone());
		ScheduleDefinition.Missed missed = ScheduleDefinition.Missed.of(due.missed());
		Plan plan = plan(cron, zone, missed, due.nextFireAt(), due.now());
		String[] target = new String[1];
		Result result = this.transactions.execute((status) -> {
			List<Map<String, String>> rows = this.jdbc.query(this.sql.fireSchedule.with(new QueueSql.FireSchedule(
					due.name(), due.nextFireAt(), plan.next(), plan.tick() != null, plan.tick(), due.cron(), due.zone(),
					due.missed())), (rs, row) -> {
						Map<String, String> columns = new LinkedHashMap<>();
						for (String column : List.of("queue", "exchange", "routing_key", "payload", "headers")) {
							columns.put(column, rs.getString(column));
						}
						return columns;
					});
			if (rows.isEmpty()) {
				return Result.LOST;
			}
			if (plan.tick() == null) {
				return Result.SKIPPED;
			}
			Map<String, String> row = rows.get(0);
			send(due.name(), row, plan, target);
			return Result.SENT;
		});
		if (result == Result.SENT) {
			this.sent.computeIfAbsent(due.name() + "\0" + target[0], (key) -> Counter.builder("pgqueue.schedule.sent")
				.description("Messages sent by a schedule from this JVM")
				.tag("schedule", due.name())
				.tag("target", target[0])
				.register(this.meterRegistry)).increment();
		}
		if (plan.missedFrom() != null && result != Result.LOST) {
			logger.info("Schedule '{}' missed its ticks from {} to {} while no JVM ran it; {} (missed: {}), next tick {}",
					due.name(), plan.missedFrom(), (plan.tick() != null) ? plan.tick() : "now",
					(result == Result.SENT) ? "sent one message for the latest" : "sent none", missed.value(),
					plan.next());
		}
		return new Outcome(result, plan);
	}

	private void send(String name, Map<String, String> row, Plan plan, String[] target) {
		Map<String, String> headers = new LinkedHashMap<>(MessageHeaders.read(row.get("headers")));
		headers.put(ScheduleDefinition.SCHEDULE_HEADER, name);
		headers.put(ScheduleDefinition.SCHEDULED_AT_HEADER, plan.tick().toString());
		if (plan.missedFrom() != null) {
			headers.put(ScheduleDefinition.MISSED_FROM_HEADER, plan.missedFrom().toString());
		}
		if (row.get("queue") != null) {
			target[0] = row.get("queue");
			this.template.sendJson(row.get("queue"), row.get("payload"), headers);
		}
		else {
			target[0] = row.get("exchange");
			this.template.publishJson(row.get("exchange"), row.get("routing_key"), row.get("payload"), headers);
		}
	}

}
