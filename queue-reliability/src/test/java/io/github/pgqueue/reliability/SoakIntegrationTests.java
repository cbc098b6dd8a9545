package io.github.pgqueue.reliability;

import java.nio.file.Path;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;

import io.github.pgqueue.QueueNames;
import org.junit.jupiter.api.Test;

import static org.assertj.core.api.Assertions.assertThat;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

/**
 * The soak: three consumer JVMs, each working on a {@code session} queue and a
 * {@code transactional} one, while producers send 250 jobs a second to each (500 in all) and a
 * fault hits at a fixed interval, in turn: kill -9 of one JVM (then started again),
 * {@code pg_terminate_backend} of another's sessions, a PostgreSQL crash and restart, and a network
 * partition of the third, which runs in a network namespace of the test's own (where none can be
 * made, that JVM runs on the host and the partition is left out of the rotation). Heap after a full
 * collection, table and index sizes and the backlog are sampled at a fixed interval. It passes when
 * every metric stays flat after the warm-up (see {@link SoakSamples#flatness}) and the total-queue
 * check passes: nothing lost; in the session queue no duplicate without a fault that hit that
 * delivery, in the transactional one no job that took effect twice. The short soak is part of the full
 * run ({@code -Dchaos.full=true}), the long one is {@code -Dsoak.minutes=N} (see {@link SoakPlan});
 * both write {@code samples.csv}, {@code faults.csv} and {@code soak.png} into {@code target/soak/}.
 * {@code ./mvnw verify} alone skips it.
 */
class SoakIntegrationTests {

	static final String SESSION_QUEUE = "soak-session";

	static final String TRANSACTIONAL_QUEUE = "soak-tx";

	/** Jobs a second to each queue. */
	private static final int RATE = 250;

	private static final int WORK_MILLIS = 5;

	/** Keys of the transactional queue's jobs start here, apart from the session queue's. */
	private static final long TRANSACTIONAL_KEYS = 1_000_000_000L;


	/** Absolute slack of the flatness check, MB: heap, then table and index sizes. */
	private static final double HEAP_SLACK_MB = 8;

	private static final double SIZE_SLACK_MB = 8;

	private final SoakPlan plan = SoakPlan.fromSystemProperties();

	@Test
	void threeConsumerJvmsInBothModesUnderARotatingFaultStayFlatAndLoseNothing() {
		assumeTrue(ChaosSettings.full() || !this.plan.isShort(), "The soak runs a minute or more: full run only "
				+ "(-Dchaos.full=true), or -Dsoak.minutes=N for N minutes");
		String unavailable = NetworkNamespace.unavailableBecause();
		if (unavailable != null) {
			System.out.println("SOAK partition left out of the rotation: " + unavailable);
		}
		NetworkNamespace namespace = (unavailable == null) ? NetworkNamespace.create() : null;
		try (namespace; ScenarioServer server = ScenarioServer.initialize("soak", serverSettings(namespace))) {
			if (namespace != null) {
				server.allow("host all all " + namespace.cidr() + " trust");
			}
			server.migrate();
			try (ChaosDatabase database = ChaosDatabase.on(server.jdbcUrl("localhost"), server.username());
					ConsumerFleet killed = new ConsumerFleet(database, "soakkill", spec());
					ConsumerFleet terminated = new ConsumerFleet(database, "soakterm", spec());
					ConsumerFleet partitioned = new ConsumerFleet(database, "soakpart",
							(namespace != null) ? spec().inside(namespace) : spec());
					Producer sessionJobs = new Producer(database, SESSION_QUEUE, (key) -> Job.of(key, WORK_MILLIS));
					Producer transactionalJobs = new Producer(database, TRANSACTIONAL_QUEUE,
							(key) -> Job.of(key, WORK_MILLIS)).keysFrom(TRANSACTIONAL_KEYS)) {
				List<ConsumerFleet> fleets = List.of(killed, terminated, partitioned);
				fleets.forEach(ConsumerFleet::startOne);
				fleets.forEach((fleet) -> fleet.all().forEach(fleet::awaitReady));
				Map<String, ConsumerFleet> slots = new LinkedHashMap<>();
				slots.put("killed", killed);
				slots.put("terminated", terminated);
				slots.put("partitioned", partitioned);
				sessionJobs.startSending(RATE);
				transactionalJobs.startSending(RATE);
				Instant start = Instant.now();
				SoakSamples samples = new SoakSamples(database, List.of(SESSION_QUEUE, TRANSACTIONAL_QUEUE), slots, start);
				Path output = Path.of(System.getProperty("soak.output-directory", "target/soak"));
				ScheduledExecutorService sampler = Executors.newSingleThreadScheduledExecutor();
				// The CSV files are written after each sample, so that a run cut short keeps what it measured.
				sampler.scheduleAtFixedRate(() -> sampleAndWrite(samples, output), 0, this.plan.sampleEvery().toMillis(),
						TimeUnit.MILLISECONDS);
				SoakFaults faults = new SoakFaults(database, server, namespace, samples, fleets, this.plan);
				int injected = 0;
				for (int k = 1; this.plan.faultEvery().multipliedBy(k).compareTo(this.plan.load()) < 0; k++) {
					sleepUntil(start.plus(this.plan.faultEvery().multipliedBy(k)));
					String fault = SoakFaults.ROTATION.get((k - 1) % SoakFaults.ROTATION.size());
					injected += faults.inject(fault) ? 1 : 0;
				}
				// One more sample at the end of the load, then no more.
				sleepUntil(start.plus(this.plan.load()).plusSeconds(1));
				sampler.shutdown();
				awaitTermination(sampler);
				sessionJobs.stopSending();
				transactionalJobs.stopSending();
				Duration loaded = Duration.between(start, Instant.now());

				Drained drained = drain(database, fleets);
				ChaosReport session = new ChaosChecker(database, SESSION_QUEUE)
					.check("soak-session", Drain.expect(sessionJobs.sent(), Outcome.ACKED),
							QueueNames.defaultDeadLetterQueue(SESSION_QUEUE), drained.locksLeft())
					.print();
				EffectCount transactional = EffectCount.of("soak-transactional", database, TRANSACTIONAL_QUEUE, transactionalJobs.sent());
				System.out.println(transactional.line(drained.locksLeft()));

				samples.writeCsv(output);
				SoakChart.write(samples, "pgqueue soak: 3 consumer JVMs, " + (2 * RATE) + " msg/s, a fault every "
						+ this.plan.faultEvery().toSeconds() + " s", output.resolve("soak.png"));
				List<SoakSamples.Flatness> flatness = new ArrayList<>();
				flatness.add(samples.flatness("message_table", SoakSamples.Sample::messageTable, this.plan.warmUp(),
						SIZE_SLACK_MB));
				flatness.add(samples.flatness("message_indexes", SoakSamples.Sample::messageIndexes, this.plan.warmUp(),
						SIZE_SLACK_MB));
				flatness.add(samples.flatness("schema_total", SoakSamples.Sample::schemaTotal, this.plan.warmUp(),
						SIZE_SLACK_MB));
				// The JVMs that lived the whole run; the killed one starts afresh at each kill.
				for (String slot : List.of("terminated", "partitioned")) {
					flatness.add(samples.flatness("heap_" + slot, (sample) -> sample.heap().get(slot), this.plan.warmUp(),
							HEAP_SLACK_MB));
				}
				System.out.printf("SOAK load=%ds sent=%d faults=%d %s heap_killed_max=%.1fMB samples=%d output=%s%n",
						loaded.toSeconds(), session.sent() + transactional.sent(), injected, faults.counts(),
						samples.samples().stream().mapToDouble((sample) -> sample.heap().get("killed"))
							.filter((mb) -> !Double.isNaN(mb)).max().orElse(Double.NaN),
						samples.samples().size(), output.toAbsolutePath());
				flatness.forEach((metric) -> System.out.println(metric.line()));

				session.assertPasses();
				transactional.assertPasses(drained.locksLeft());
				assertThat(drained.heldIdsLeft()).as("ids left in pgqueue.holding").isZero();
				assertThat(faults.count("kill-9")).as("kills").isPositive();
				assertThat(faults.count("pg_terminate_backend")).as("terminations").isPositive();
				assertThat(faults.count("postgres-restart")).as("restarts").isPositive();
				assertThat(session.faulted() + transactional.rolledBack()).as("deliveries the faults hit").isPositive();
				assertThat(terminated.all()).as("JVMs of the terminated slot (never killed)").hasSize(1);
				assertThat(partitioned.all()).as("JVMs of the partitioned slot (never killed)").hasSize(1);
				assertThat(flatness).as("metrics that grew after the warm-up")
					.allSatisfy((metric) -> assertThat(metric.flat()).as(metric.line()).isTrue());
			}
		}
	}

	/** Waits until both queues are empty, measures what is left, and stops the consumers gracefully. */
	private Drained drain(ChaosDatabase database, List<ConsumerFleet> fleets) {
		Duration timeout = this.plan.isShort() ? Duration.ofMinutes(1) : Duration.ofMinutes(5);
		for (String queue : List.of(SESSION_QUEUE, TRANSACTIONAL_QUEUE)) {
			try {
				database.queues().awaitDrained(queue, timeout);
			}
			catch (AssertionError ex) {
				// Not drained: the counts show what is missing, key by key.
				System.out.println(ex.getMessage());
			}
		}
		long locksLeft = database.awaitNoAdvisoryLocks(Duration.ofSeconds(5));
		long heldIdsLeft = database.heldIdsLeft();
		fleets.forEach(ConsumerFleet::stop);
		return new Drained(locksLeft, heldIdsLeft);
	}

	private ConsumerSpec spec() {
		return ConsumerSpec.of(SESSION_QUEUE).batchSize(10).concurrency(2)
			.property("chaos.second-queue", TRANSACTIONAL_QUEUE)
			.property("pgqueue.queues." + TRANSACTIONAL_QUEUE + ".mode", "transactional")
			.property("pgqueue.queues." + TRANSACTIONAL_QUEUE + ".max-attempts", "20")
			.property("pgqueue.queues." + TRANSACTIONAL_QUEUE + ".backoff.initial", "100ms")
			.property("spring.datasource.hikari.maximum-pool-size", "8")
			.property("spring.datasource.hikari.data-source-properties.options",
					PartitionIntegrationTests.KEEPALIVE_OPTIONS)
			.property("chaos.heap-sample-interval", this.plan.sampleEvery().toMillis() + "ms");
	}

	private static Map<String, String> serverSettings(NetworkNamespace namespace) {
		return (namespace != null)
				? Map.of("listen_addresses", "localhost," + namespace.queueHost() + "," + namespace.recordHost())
				: Map.of();
	}

	private static void sampleAndWrite(SoakSamples samples, Path output) {
		try {
			samples.sample();
			samples.writeCsv(output);
		}
		catch (RuntimeException ex) {
			// Thrown out of a scheduled task, it would end the sampling without a word.
			System.out.println("SOAK sample failed: " + ex);
			ex.printStackTrace(System.out);
		}
	}

	private static void sleepUntil(Instant moment) {
		Duration wait = Duration.between(Instant.now(), moment);
		if (!wait.isNegative()) {
			ChaosDatabase.pause(wait);
		}
	}

	private static void awaitTermination(ScheduledExecutorService sampler) {
		try {
			if (!sampler.awaitTermination(1, TimeUnit.MINUTES)) {
				throw new IllegalStateException("The soak's sampler did not finish its last sample within a minute");
			}
		}
		catch (InterruptedException ex) {
			Thread.currentThread().interrupt();
			throw new IllegalStateException("Interrupted waiting for the soak's sampler", ex);
		}
	}

	private record Drained(long locksLeft, long heldIdsLeft) {
	}

}
