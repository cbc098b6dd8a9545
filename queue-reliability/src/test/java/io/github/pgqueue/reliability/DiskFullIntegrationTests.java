package io.github.pgqueue.reliability;

import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.sql.Connection;
import java.sql.SQLException;
import java.sql.Statement;
import java.sql.Timestamp;
import java.time.Duration;
import java.time.Instant;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;

import io.github.pgqueue.QueueException;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

import org.springframework.core.io.ClassPathResource;
import org.springframework.util.FileSystemUtils;

import static io.github.pgqueue.reliability.ChaosSettings.pick;
import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

/**
 * Disk full: PostgreSQL's data directory, WAL included, on a small filesystem of the test's own
 * that a ballast file fills while producers send and consumer JVMs drain. Two phases on one
 * server. First the data files cannot grow: sends fail with pgqueue's disk-full error while the
 * consumers work through a backlog, and once the ballast is deleted sending goes on by itself. Then the WAL needs a new segment
 * and cannot have one: PostgreSQL PANICs, and its crash recovery, which needs that segment too,
 * fails, so the server shuts down; once space is freed and the server started again (what a
 * service manager does), the consumers and the producer resume by themselves, without a restart of
 * the application. The suite's own tables live in a tablespace on another disk, so that the record
 * of deliveries never fails for lack of space. Run in both consumption modes; in
 * {@code transactional} mode the check is on the jobs' effects, each exactly once.
 */
class DiskFullIntegrationTests {

	/** The bound the guide states: from space (or the server) coming back to every listener delivering. */
	static final Duration RESUME_BOUND = Duration.ofSeconds(10);

	/** Big enough for a new cluster (about 40 MB with its first WAL segment) and the queue. */
	private static final int FILESYSTEM_MEGABYTES = 96;

	/** What the ballast leaves for the data files in the first phase: a few pages. */
	private static final long LEFT_FOR_DATA = 64 * 1024;

	/** What it leaves in the second: room for the data files, none for a 16 MB WAL segment. */
	private static final long LEFT_FOR_WAL = 4 * 1024 * 1024;

	private static final int RATE = pick(200, 300);

	/** Messages waiting when the disk fills: the consumers' work while it is full. */
	private static final int BACKLOG = pick(1_000, 3_000);

	private static final int WORK_MILLIS = 2;

	@ParameterizedTest(name = "{0}")
	@ValueSource(strings = { "session", "transactional" })
	void sendsFailClearlyWhileTheDiskIsFullAndEverythingResumesByItselfOnceSpaceReturns(String mode) throws Exception {
		String unavailable = SmallFilesystem.unavailableBecause();
		assumeTrue(unavailable == null, () -> "Disk full needs a small filesystem of its own: " + unavailable);
		String scenario = "session".equals(mode) ? "disk-full" : "tx-disk-full";
		String queue = "chaos-" + scenario;
		Path chaosSpace = Files.createTempDirectory("pgqueue-chaos-space");
		// The server's log goes to another disk too, as it does where logs are kept apart.
		Path logs = Files.createTempDirectory("pgqueue-disk-full-log");
		ConsumerSpec spec = ConsumerSpec.of(queue).batchSize(10).property("pgqueue.queues." + queue + ".mode", mode);
		try (SmallFilesystem disk = SmallFilesystem.mount(FILESYSTEM_MEGABYTES);
				ScenarioServer server = ScenarioServer.initialize(scenario, disk.path().resolve("data"),
						Map.of("logging_collector", "on", "log_directory", logs.toString(), "log_filename",
								"postgresql.log"), (data) -> {
								});
				ChaosDatabase database = onServer(server, chaosSpace);
				ConsumerFleet fleet = new ConsumerFleet(database, scenario.replace("-", ""), spec);
				Producer producer = new Producer(database, queue, (key) -> Job.of(key, WORK_MILLIS))) {
			Timeline timeline = new Timeline();
			database.reset();
			fleet.start(2);
			timeline.mark("consumers started");
			List<ConsumerProcess> consumers = fleet.ready();
			// A fresh WAL segment, made while there is room, holds the first phase's WAL.
			String segment = database.jdbc().queryForObject("SELECT pg_walfile_name(pg_switch_wal())", String.class);
			producer.startSending(RATE);
			await().atMost(Duration.ofSeconds(10)).pollInterval(Duration.ofMillis(50)).until(() -> !segment.equals(
					database.jdbc().queryForObject("SELECT pg_walfile_name(pg_current_wal_flush_lsn())", String.class)));

			timeline.mark("new WAL segment");
			// Phase 1: the data files cannot grow, with a backlog for the consumers to work on.
			consumers.forEach(ConsumerProcess::pause);
			producer.send(BACKLOG);
			disk.fill(LEFT_FOR_DATA);
			consumers.forEach(ConsumerProcess::resume);
			timeline.mark("filled");
			await().atMost(Duration.ofSeconds(30)).pollInterval(Duration.ofMillis(50))
				.until(() -> !producer.failures().isEmpty());
			Instant full = timeline.mark("first send failed");
			ChaosDatabase.pause(pick(Duration.ofSeconds(2), Duration.ofSeconds(15)));
			disk.freeBallast();
			Instant freed = now(database);
			timeline.mark("ballast deleted");
			Duration sendsBack = awaitSendAfter(producer, freed);
			Map<String, Duration> consumersBack = awaitEveryConsumerDelivers(database, consumers, freed);
			long deliveredWhileFull = database.count("SELECT count(*) FROM chaos.delivery WHERE recorded_at BETWEEN ? AND ?",
					Timestamp.from(full), Timestamp.from(freed));
			List<RuntimeException> dataFileFailures = producer.failures();
			System.out.println("  data files full: sends failed " + dataFileFailures.size() + " times (first: "
					+ dataFileFailures.get(0).getMessage() + "); deliveries while full: " + deliveredWhileFull
					+ "; from the ballast deleted to the next send: " + sendsBack
					+ "; to each listener's next delivery: " + consumersBack);
			ChaosDatabase.pause(Duration.ofSeconds(1));

			// Phase 2: the WAL cannot have a new segment.
			int failuresBefore = producer.failures().size();
			disk.fill(LEFT_FOR_WAL);
			timeline.mark("filled again");
			switchWalUntilTheServerFails(server);
			timeline.mark("WAL switched");
			await().atMost(Duration.ofSeconds(30)).pollInterval(Duration.ofMillis(50)).until(() -> !server.isRunning());
			timeline.mark("server down");
			// Frozen while the server comes back, so that the claims the crash ended can be written
			// down before anyone claims them again.
			consumers.forEach(ConsumerProcess::pause);
			List<String> serverLog = Files.readAllLines(logs.resolve("postgresql.log"), StandardCharsets.UTF_8);
			disk.freeBallast();
			server.restart();
			timeline.mark("server restarted");
			database.reconnect();
			database.faultEveryClaim("disk-full-wal-panic");
			Instant restarted = now(database);
			consumers.forEach(ConsumerProcess::resume);
			Duration sendsBackAfterRestart = awaitSendAfter(producer, restarted);
			Map<String, Duration> consumersBackAfterRestart = awaitEveryConsumerDelivers(database, consumers, restarted);
			List<RuntimeException> failures = producer.failures();
			List<RuntimeException> walFailures = failures.subList(failuresBefore, failures.size());
			System.out.println("  WAL full: the server " + serverLog.stream()
				.filter((line) -> line.contains("PANIC") || line.contains("shutting down due to")).toList()
					+ "; sends failed " + walFailures.size() + " times (first: "
					+ (walFailures.isEmpty() ? "none" : walFailures.get(0).getMessage()) + "); from the restart to the next send: "
					+ sendsBackAfterRestart + "; to each listener's next delivery: " + consumersBackAfterRestart);

			timeline.mark("everyone back");
			ChaosDatabase.pause(Duration.ofSeconds(1));
			producer.stopSending();
			check(scenario, mode, database, fleet, producer, queue);
			timeline.mark("drained and checked");
			System.out.println("  timeline: " + timeline);
			assertThat(dataFileFailures).as("sends that failed while the data files could not grow")
				.isNotEmpty()
				.allSatisfy((failure) -> assertThat(failure).isInstanceOf(QueueException.class)
					.hasMessageContaining("Cannot send to '" + queue + "'")
					.hasMessageContaining("out of disk space")
					.hasMessageContaining("No space left on device"));
			// Filling the disk for the WAL can first stop a data file from growing: such a send failed
			// with an error the server survived, and it rightly says nothing was sent. The sends the
			// crash cut off must not say so.
			assertThat(walFailures).as("sends that failed when the server crashed: their outcome is unknown")
				.filteredOn((failure) -> !String.valueOf(failure.getMessage()).contains("could not extend file"))
				.noneMatch((failure) -> String.valueOf(failure.getMessage()).contains("nothing was sent"));
			assertThat(serverLog).as("the server's log after the WAL filled")
				.anyMatch((line) -> line.contains("PANIC") && line.contains("No space left on device"));
			assertThat(List.of(sendsBack, sendsBackAfterRestart)).as("from space (or the server) back to the next send")
				.allMatch((delay) -> delay.compareTo(RESUME_BOUND) <= 0);
			assertThat(consumersBack.values()).as("from the ballast deleted to each listener's next delivery")
				.allMatch((delay) -> delay.compareTo(RESUME_BOUND) <= 0);
			assertThat(consumersBackAfterRestart.values()).as("from the restart to each listener's next delivery")
				.allMatch((delay) -> delay.compareTo(RESUME_BOUND) <= 0);
		}
		finally {
			FileSystemUtils.deleteRecursively(chaosSpace.toFile());
			FileSystemUtils.deleteRecursively(logs.toFile());
		}
	}

	/**
	 * The harness on {@code server}, with the suite's tables in a tablespace in {@code chaosSpace}
	 * (another disk) and pgqueue's on the small one.
	 */
	private static ChaosDatabase onServer(ScenarioServer server, Path chaosSpace) throws Exception {
		server.migrate();
		server.execute("CREATE TABLESPACE chaos_space LOCATION '" + chaosSpace + "'");
		try (Connection connection = server.connect(); Statement statement = connection.createStatement()) {
			statement.execute("SET default_tablespace = chaos_space");
			statement.execute(new ClassPathResource("chaos/schema.sql").getContentAsString(StandardCharsets.UTF_8));
		}
		return ChaosDatabase.on(server.jdbcUrl("localhost"), server.username());
	}

	/**
	 * Moves the WAL to the next segment until a write needs a segment there is no room for; with
	 * the producer and the consumers writing all along, the server PANICs at the first such write.
	 * Each switch is made on a connection of its own, so that a server that went away is found out
	 * at once rather than after a pool's wait for a connection.
	 */
	private static void switchWalUntilTheServerFails(ScenarioServer server) {
		for (int i = 0; i < 20 && server.isRunning(); i++) {
			try (Connection connection = server.connect(); Statement statement = connection.createStatement()) {
				statement.execute("SELECT pg_switch_wal()");
			}
			catch (SQLException ex) {
				// The server crashed under this session, or is in recovery: what was wanted.
				return;
			}
			ChaosDatabase.pause(Duration.ofMillis(250));
		}
	}

	private static Instant now(ChaosDatabase database) {
		return database.jdbc().queryForObject("SELECT clock_timestamp()", Timestamp.class).toInstant();
	}

	private static Duration awaitSendAfter(Producer producer, Instant after) {
		await().atMost(Duration.ofSeconds(60)).pollInterval(Duration.ofMillis(20))
			.until(() -> producer.lastSent() != null && producer.lastSent().isAfter(after));
		return Duration.between(after, producer.lastSent());
	}

	/** Waits until each consumer has delivered after {@code after}; returns how long after. */
	private static Map<String, Duration> awaitEveryConsumerDelivers(ChaosDatabase database,
			List<ConsumerProcess> consumers, Instant after) {
		Map<String, Duration> resumed = new LinkedHashMap<>();
		await().atMost(Duration.ofSeconds(60)).pollInterval(Duration.ofMillis(100)).ignoreExceptions().until(() -> {
			for (ConsumerProcess consumer : consumers) {
				Timestamp first = database.jdbc().queryForObject(
						"SELECT min(recorded_at) FROM chaos.delivery WHERE consumer = ? AND recorded_at > ?",
						Timestamp.class, consumer.name(), Timestamp.from(after));
				if (first != null) {
					resumed.put(consumer.name(), Duration.between(after, first.toInstant()));
				}
			}
			return resumed.size() == consumers.size();
		});
		return resumed;
	}

	/**
	 * The total-queue check: in session mode the suite's ({@code duplicates} only of deliveries a
	 * fault ended); in transactional mode on the jobs' effects, each of which must exist exactly once.
	 */
	private static void check(String scenario, String mode, ChaosDatabase database, ConsumerFleet fleet,
			Producer producer, String queue) {
		if ("session".equals(mode)) {
			new Drain(database).drainAndCheck(scenario, fleet, queue, Drain.expect(producer.sent(), Outcome.ACKED))
				.assertPasses();
			return;
		}
		database.queues().awaitDrained(queue, Duration.ofMinutes(2));
		long locksLeft = database.awaitNoAdvisoryLocks(Duration.ofSeconds(5));
		fleet.stop();
		Set<Long> sent = producer.sent();
		EffectCount count = EffectCount.of(scenario, database, queue, sent);
		System.out.println(count.line(locksLeft));
		count.assertPasses(locksLeft);
	}

	/** When each step of the scenario ended, for the report. */
	private static final class Timeline {

		private final Instant start = Instant.now();

		private final Map<String, Instant> marks = new LinkedHashMap<>();

		Instant mark(String step) {
			Instant now = Instant.now();
			this.marks.put(step, now);
			return now;
		}

		@Override
		public String toString() {
			StringBuilder text = new StringBuilder();
			this.marks.forEach((step, at) -> text.append(step).append(" +")
				.append(Duration.between(this.start, at).toMillis()).append(" ms; "));
			return text.toString();
		}

	}

}
