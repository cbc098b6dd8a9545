package io.github.pgqueue;

import java.sql.Timestamp;
import java.time.Duration;
import java.time.Instant;
import java.time.temporal.ChronoUnit;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;

import io.github.pgqueue.testing.Db;
import io.github.pgqueue.testing.EmbeddedPostgres;
import io.github.pgqueue.testing.PostgresExtension;
import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;

import org.springframework.jdbc.core.JdbcTemplate;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatIllegalStateException;
import static org.awaitility.Awaitility.await;

/**
 * Recurring messages on a real PostgreSQL: each tick sent once however many schedulers race for
 * it, missed ticks after {@code fire-once} and {@code skip}, late ticks, pause, resume, alter and
 * remove, a send that fails, and the metric.
 */
@ExtendWith(PostgresExtension.class)
class ScheduleIntegrationTests {

	private final JdbcTemplate jdbc = Db.jdbc();

	private final SimpleMeterRegistry meters = new SimpleMeterRegistry();

	private final QueueContext context = QueueContext.builder(EmbeddedPostgres.get().dataSource())
		.meterRegistry(this.meters)
		.build();

	private final QueueTemplate template = new QueueTemplate(this.context);

	private final QueueAdmin admin = new QueueAdmin(this.context);

	/**
	 * Many schedulers (each its own firing, as in its own JVM) fire one due tick at the same moment,
	 * for each of 20 schedules: every tick goes out exactly once.
	 */
	@Test
	void aTickThatManySchedulersRaceForIsSentOnce() throws Exception {
		this.admin.create(QueueDefinition.of("ticks"));
		int schedules = 20;
		int racers = 8;
		for (int i = 0; i < schedules; i++) {
			this.admin.createSchedule(everySecond("race-" + i).build());
		}
		Instant tick = Instant.now().truncatedTo(ChronoUnit.SECONDS).minusSeconds(2);
		this.jdbc.update("UPDATE pgqueue.schedule SET next_fire_at = ?", Timestamp.from(tick));
		List<ScheduleFiring> firings = new ArrayList<>();
		for (int i = 0; i < racers; i++) {
			firings.add(new ScheduleFiring(new QueueTemplate(this.context)));
		}
		ExecutorService threads = Executors.newFixedThreadPool(racers);
		try {
			for (int i = 0; i < schedules; i++) {
				ScheduleFiring.Due due = new ScheduleFiring.Due("race-" + i, "* * * * * *", "UTC", "fire-once", tick,
						Instant.now());
				CountDownLatch start = new CountDownLatch(1);
				List<Future<ScheduleFiring.Result>> results = new ArrayList<>();
				for (ScheduleFiring firing : firings) {
					results.add(threads.submit(() -> {
						start.await();
						return firing.fire(due).result();
					}));
				}
				start.countDown();
				List<ScheduleFiring.Result> ended = new ArrayList<>();
				for (Future<ScheduleFiring.Result> result : results) {
					ended.add(result.get(30, TimeUnit.SECONDS));
				}
				assertThat(ended).as("race-" + i).containsOnlyOnce(ScheduleFiring.Result.SENT)
					.containsOnly(ScheduleFiring.Result.SENT, ScheduleFiring.Result.LOST);
			}
		}
		finally {
			threads.shutdownNow();
		}
		assertThat(Db.count("ticks")).isEqualTo(schedules);
		assertThat(this.jdbc.queryForList("SELECT DISTINCT headers ->> 'pgqueue-scheduled-at' FROM pgqueue.message",
				String.class)).containsExactly(tick.toString());
		assertThat(this.jdbc.queryForObject("SELECT count(DISTINCT headers ->> 'pgqueue-schedule') FROM pgqueue.message",
				Long.class)).isEqualTo(schedules);
	}

	/** A scheduler that read a tick as due before another sent it finds it moved, and sends nothing. */
	@Test
	void aTickReadBeforeAnotherSchedulerSentItIsNotSentAgain() {
		this.admin.create(QueueDefinition.of("ticks"));
		this.admin.createSchedule(everySecond("stale").build());
		Instant tick = Instant.now().truncatedTo(ChronoUnit.SECONDS).minusSeconds(1);
		this.jdbc.update("UPDATE pgqueue.schedule SET next_fire_at = ?", Timestamp.from(tick));
		ScheduleFiring.Due due = new ScheduleFiring.Due("stale", "* * * * * *", "UTC", "fire-once", tick, Instant.now());

		assertThat(new ScheduleFiring(this.template).fire(due).result()).isEqualTo(ScheduleFiring.Result.SENT);
		assertThat(new ScheduleFiring(this.template).fire(due).result()).isEqualTo(ScheduleFiring.Result.LOST);
		assertThat(Db.count("ticks")).isOne();
	}

	/** Two running schedulers on an every-second schedule: consecutive ticks, each once. */
	@Test
	void twoRunningSchedulersSendEachTickOnce() {
		this.admin.create(QueueDefinition.of("ticks"));
		this.admin.createSchedule(everySecond("seconds").build());
		ScheduleRunner first = new ScheduleRunner(this.template);
		ScheduleRunner second = new ScheduleRunner(new QueueTemplate(this.context));
		first.start();
		second.start();
		try {
			await().atMost(Duration.ofSeconds(15)).until(() -> Db.count("ticks") >= 4);
		}
		finally {
			first.stop();
			second.stop();
		}
		List<Instant> ticks = this.jdbc.queryForList("SELECT headers ->> 'pgqueue-scheduled-at' FROM pgqueue.message "
				+ "ORDER BY 1", String.class).stream().map(Instant::parse).toList();
		assertThat(ticks).doesNotHaveDuplicates().hasSizeGreaterThanOrEqualTo(4);
		for (int i = 1; i < ticks.size(); i++) {
			assertThat(ticks.get(i)).as("no tick missing").isEqualTo(ticks.get(i - 1).plusSeconds(1));
		}
		assertThat(this.meters.get("pgqueue.schedule.sent").tag("schedule", "seconds").tag("target", "ticks")
			.counters().stream().mapToDouble((counter) -> counter.count()).sum()).isEqualTo(ticks.size());
		assertThat(this.admin.schedule("seconds").orElseThrow().fired()).isEqualTo(ticks.size());
	}

	@Test
	void ticksMissedWhileNoSchedulerRanFireOnceForTheLatest() {
		this.admin.create(QueueDefinition.of("ticks"));
		this.admin.createSchedule(everyMinute("once").header("kind", "report").build());
		Instant missedFrom = missTicks("once");

		new ScheduleRunner(this.template).runDue();

		Map<String, Object> message = this.jdbc.queryForMap("SELECT payload::text, headers ->> 'kind' AS kind, "
				+ "headers ->> 'pgqueue-schedule' AS schedule, headers ->> 'pgqueue-scheduled-at' AS at, "
				+ "headers ->> 'pgqueue-missed-from' AS missed_from FROM pgqueue.message");
		Instant latest = Instant.parse((String) message.get("at"));
		assertThat(latest).isAfter(Instant.now().minusSeconds(65)).isBefore(Instant.now().plusSeconds(1));
		assertThat(message).containsEntry("payload", "{\"n\": 1}").containsEntry("kind", "report")
			.containsEntry("schedule", "once").containsEntry("missed_from", missedFrom.toString());
		ScheduleInfo info = this.admin.schedule("once").orElseThrow();
		assertThat(info.nextFireAt()).isEqualTo(latest.plusSeconds(60));
		assertThat(info.lastFiredAt()).isEqualTo(latest);
		assertThat(info.fired()).isOne();
	}

	@Test
	void ticksMissedWhileNoSchedulerRanAreSkipped() {
		this.admin.create(QueueDefinition.of("ticks"));
		this.admin.createSchedule(everyMinute("skipping").missed(ScheduleDefinition.Missed.SKIP).build());
		missTicks("skipping");

		new ScheduleRunner(this.template).runDue();

		assertThat(Db.count("ticks")).isZero();
		ScheduleInfo info = this.admin.schedule("skipping").orElseThrow();
		assertThat(info.nextFireAt()).isAfter(Instant.now()).isBefore(Instant.now().plusSeconds(61));
		assertThat(info.fired()).isZero();
	}

	/**
	 * A tick whose next is not due yet is late, not missed, and is sent with either policy; so is a
	 * tick less than the grace old, however many follow it (a scheduler that fell behind catches up).
	 */
	@Test
	void aLateTickIsSentWithEitherPolicy() {
		this.admin.create(QueueDefinition.of("ticks"));
		this.admin.createSchedule(everyMinute("late").missed(ScheduleDefinition.Missed.SKIP).build());
		this.admin.createSchedule(everySecond("behind").missed(ScheduleDefinition.Missed.SKIP).build());
		Instant minute = Instant.now().truncatedTo(ChronoUnit.MINUTES);
		Instant second = Instant.now().truncatedTo(ChronoUnit.SECONDS).minusSeconds(3);
		this.jdbc.update("UPDATE pgqueue.schedule SET next_fire_at = ? WHERE name = 'late'", Timestamp.from(minute));
		this.jdbc.update("UPDATE pgqueue.schedule SET next_fire_at = ? WHERE name = 'behind'", Timestamp.from(second));

		ScheduleRunner runner = new ScheduleRunner(this.template);
		while (runner.runDue().isZero()) {
			// catching up
		}

		assertThat(this.jdbc.queryForList("SELECT headers ->> 'pgqueue-scheduled-at' FROM pgqueue.message "
				+ "WHERE headers ->> 'pgqueue-schedule' = 'late'", String.class)).containsExactly(minute.toString());
		List<Instant> behind = this.jdbc.queryForList("SELECT headers ->> 'pgqueue-scheduled-at' FROM pgqueue.message "
				+ "WHERE headers ->> 'pgqueue-schedule' = 'behind' ORDER BY id", String.class)
			.stream().map(Instant::parse).toList();
		assertThat(behind).hasSizeGreaterThanOrEqualTo(4).startsWith(second, second.plusSeconds(1),
				second.plusSeconds(2), second.plusSeconds(3));
	}

	@Test
	void aPausedScheduleSendsNothingAndResumesFromItsNextTick() {
		this.admin.create(QueueDefinition.of("ticks"));
		this.admin.createSchedule(everyMinute("paused").build());
		missTicks("paused");
		this.admin.pauseSchedule("paused");
		new ScheduleRunner(this.template).runDue();
		assertThat(Db.count("ticks")).isZero();
		assertThat(this.admin.schedule("paused").orElseThrow().paused()).isTrue();

		this.admin.resumeSchedule("paused");
		ScheduleInfo info = this.admin.schedule("paused").orElseThrow();
		assertThat(info.paused()).isFalse();
		assertThat(info.nextFireAt()).as("the ticks of the pause are not made up for").isAfter(Instant.now());
		new ScheduleRunner(this.template).runDue();
		assertThat(Db.count("ticks")).isZero();
		assertThatIllegalStateException().isThrownBy(() -> this.admin.pauseSchedule("absent"))
			.withMessage("Schedule 'absent' does not exist");
	}

	@Test
	void schedulesAreCreatedAlteredListedAndRemoved() {
		this.admin.create(QueueDefinition.of("ticks"));
		this.admin.create(QueueDefinition.of("reports"));
		this.admin.createSchedule(everyMinute("nightly").build());
		assertThatIllegalStateException().isThrownBy(() -> this.admin.createSchedule(everyMinute("nightly").build()))
			.withMessage("Schedule 'nightly' already exists; change it with alterSchedule");
		assertThatIllegalStateException().isThrownBy(() -> this.admin.alterSchedule(everyMinute("absent").build()))
			.withMessage("Schedule 'absent' does not exist; create it first");
		assertThatIllegalStateException()
			.isThrownBy(() -> this.admin.createSchedule(everyMinute("lost").queue("undeclared").build()))
			.withMessage("Schedule 'lost' sends to queue 'undeclared', which is not declared; declare it first "
					+ "(under pgqueue.queues, or with QueueAdmin.create)");
		Instant due = this.admin.schedule("nightly").orElseThrow().nextFireAt();

		this.admin.alterSchedule(everyMinute("nightly").queue("reports").payload("[1, 2]").build());
		ScheduleInfo changed = this.admin.schedule("nightly").orElseThrow();
		assertThat(changed.definition().queue()).isEqualTo("reports");
		assertThat(changed.definition().payload()).isEqualTo("[1, 2]");
		assertThat(changed.nextFireAt()).as("same cron and zone: the tick due stays").isEqualTo(due);

		this.admin.alterSchedule(everyMinute("nightly").cron("0 0 2 * * *").zone("Europe/Paris").build());
		ScheduleInfo moved = this.admin.schedule("nightly").orElseThrow();
		assertThat(moved.definition().zone().getId()).isEqualTo("Europe/Paris");
		assertThat(moved.nextFireAt().atZone(moved.definition().zone()).getHour()).isEqualTo(2);

		this.admin.declareSchedule(everySecond("declared").build());
		this.admin.declareSchedule(everySecond("declared").header("again", "yes").build());
		assertThat(this.admin.schedules()).extracting((info) -> info.definition().name())
			.containsExactly("declared", "nightly");
		assertThat(this.admin.schedule("declared").orElseThrow().definition().headers()).containsEntry("again", "yes");

		assertThat(this.admin.removeSchedule("nightly")).isTrue();
		assertThat(this.admin.removeSchedule("nightly")).isFalse();
		assertThat(this.admin.schedule("nightly")).isEmpty();
	}

	/** A send that fails rolls the move back: the tick stays due, and nothing is sent. */
	@Test
	void aTickWhoseSendFailsStaysDue() {
		this.jdbc.update("INSERT INTO pgqueue.exchange (name, type, unroutable) VALUES ('strict', 'direct', 'fail')");
		this.admin.createSchedule(ScheduleDefinition.builder("unroutable").cron("0 * * * * *")
			.exchange("strict", "nowhere").build());
		Instant tick = Instant.now().truncatedTo(ChronoUnit.MINUTES);
		this.jdbc.update("UPDATE pgqueue.schedule SET next_fire_at = ?", Timestamp.from(tick));

		Duration wait = new ScheduleRunner(this.template).runDue();

		assertThat(wait).isPositive();
		assertThat(Db.count()).isZero();
		ScheduleInfo info = this.admin.schedule("unroutable").orElseThrow();
		assertThat(info.nextFireAt()).isEqualTo(tick);
		assertThat(info.fired()).isZero();
	}

	/**
	 * A schedule sends as its JVM's database role: a role that may not send to the schedule's queue
	 * fails the tick, which stays due, while a schedule to a queue it may send to goes on.
	 */
	@Test
	void aRoleThatMayNotSendToTheQueueLeavesTheTickDue() {
		this.admin.create(QueueDefinition.of("ticks"));
		this.admin.create(QueueDefinition.of("allowed"));
		this.jdbc.execute("DO $$ BEGIN CREATE ROLE ticker LOGIN; EXCEPTION WHEN duplicate_object THEN NULL; END $$");
		try {
			this.admin.grant("ticker", "allowed", QueueAdmin.Access.SEND);
			this.jdbc.execute("GRANT SELECT, UPDATE ON pgqueue.schedule TO ticker");
			this.admin.createSchedule(everyMinute("forbidden").build());
			this.admin.createSchedule(everyMinute("permitted").queue("allowed").build());
			Instant tick = Instant.now().truncatedTo(ChronoUnit.MINUTES);
			this.jdbc.update("UPDATE pgqueue.schedule SET next_fire_at = ?", Timestamp.from(tick));
			QueueContext asTicker = QueueContext.of(new org.springframework.jdbc.datasource.DriverManagerDataSource(
					EmbeddedPostgres.get().jdbcUrl(), "ticker", ""));

			new ScheduleRunner(new QueueTemplate(asTicker)).runDue();

			assertThat(Db.count("ticks")).isZero();
			assertThat(this.admin.schedule("forbidden").orElseThrow().nextFireAt()).isEqualTo(tick);
			assertThat(Db.count("allowed")).isOne();
			assertThat(this.admin.schedule("permitted").orElseThrow().nextFireAt()).isEqualTo(tick.plusSeconds(60));
		}
		finally {
			this.jdbc.update("DELETE FROM pgqueue.queue_access");
			this.jdbc.execute("REVOKE ALL ON pgqueue.schedule FROM ticker");
		}
	}

	/** Moves the schedule's next tick ten minutes back: several ticks missed, the first of them returned. */
	private Instant missTicks(String name) {
		Instant missedFrom = Instant.now().truncatedTo(ChronoUnit.MINUTES).minus(10, ChronoUnit.MINUTES);
		this.jdbc.update("UPDATE pgqueue.schedule SET next_fire_at = ? WHERE name = ?", Timestamp.from(missedFrom), name);
		return missedFrom;
	}

	private static ScheduleDefinition.Builder everySecond(String name) {
		return ScheduleDefinition.builder(name).cron("* * * * * *").queue("ticks");
	}

	private static ScheduleDefinition.Builder everyMinute(String name) {
		return ScheduleDefinition.builder(name).cron("0 * * * * *").queue("ticks").payload("{\"n\": 1}");
	}

}
