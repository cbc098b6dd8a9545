package io.github.pgqueue.reliability;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.net.ServerSocket;
import java.time.Duration;
import java.util.List;
import java.util.Map;

import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * Consumers that cannot start: the database is down, or the pool is too small for the listeners'
 * concurrency. Startup fails within a bounded time with a message that says why, and the
 * messages waiting in the queue are not touched.
 */
class StartupFailureIntegrationTests {

	private final ChaosDatabase database = ChaosDatabase.get();

	@BeforeEach
	void reset() {
		this.database.reset();
	}

	@Test
	void databaseDownAtStartupFailsClearlyWithoutBusyLooping() {
		String queue = "chaos-db-down";
		int port = freePort();
		ConsumerSpec spec = ConsumerSpec.of(queue).property("spring.datasource.url",
				"jdbc:postgresql://localhost:" + port + "/postgres");
		try (Producer producer = new Producer(this.database, queue, (key) -> Job.of(key, 1));
				ConsumerFleet fleet = new ConsumerFleet(this.database, "dbdown", spec)) {
			producer.send(20);
			ConsumerProcess consumer = fleet.startOne();
			long started = System.nanoTime();
			Duration cpu = Duration.ZERO;
			while (consumer.isAlive() && System.nanoTime() - started < Duration.ofSeconds(90).toNanos()) {
				cpu = consumer.cpuTimeOr(cpu);
				ChaosDatabase.pause(Duration.ofMillis(100));
			}
			Duration took = Duration.ofNanos(System.nanoTime() - started);
			int exit = consumer.awaitExit(Duration.ofSeconds(10));
			String line = StartupFailures.firstLineContaining(consumer, "pgqueue could not create");
			UserErrors.show("a consumer started while its database is down (exit " + exit + " after "
					+ took.toMillis() + " ms, " + cpu.toMillis() + " ms CPU)", line);
			assertThat(exit).isNotZero();
			assertThat(line).contains("localhost:" + port).contains("refused");
			assertThat(took).as("time to fail").isLessThan(Duration.ofSeconds(60));
			Map<Long, Outcome> untouched = Drain.expect(producer.sent(), Outcome.UNTOUCHED);
			new Drain(this.database).drainAndCheck("database-down-at-startup", null, queue, untouched).assertPasses();
		}
	}

	@Test
	void aPoolTooSmallForTheConcurrencyFailsStartupWithTheNumbers() {
		String queue = "chaos-small-pool";
		ConsumerSpec shared = ConsumerSpec.of(queue).concurrency(4)
			.property("pgqueue.listener.dedicated-pool", "false")
			.property("spring.datasource.hikari.maximum-pool-size", "3");
		ConsumerSpec server = ConsumerSpec.of(queue).concurrency(400);
		try (Producer producer = new Producer(this.database, queue, (key) -> Job.of(key, 1));
				ConsumerFleet sharedFleet = new ConsumerFleet(this.database, "smallpool", shared);
				ConsumerFleet serverFleet = new ConsumerFleet(this.database, "toomany", server)) {
			producer.send(20);
			List<ConsumerProcess> consumers = List.of(sharedFleet.startOne(), serverFleet.startOne());
			for (ConsumerProcess consumer : consumers) {
				assertThat(consumer.awaitExit(Duration.ofSeconds(90))).as("exit code of %s", consumer).isNotZero();
			}
			String poolLine = StartupFailures.firstLineContaining(consumers.get(0), "pgqueue listeners need");
			String serverLine = StartupFailures.firstLineContaining(consumers.get(1), "pgqueue listeners need");
			UserErrors.show("concurrency 4 on a shared pool of 3", poolLine);
			UserErrors.show("concurrency 400 on a server with max_connections 300", serverLine);
			assertThat(poolLine).contains("need 5 connections (4 pollers + 1 LISTEN)")
				.contains("maximum-pool-size is 3");
			assertThat(serverLine).contains("need 401 connections (400 pollers + 1 LISTEN)")
				.contains("connections left under max_connections");
			Map<Long, Outcome> untouched = Drain.expect(producer.sent(), Outcome.UNTOUCHED);
			new Drain(this.database).drainAndCheck("pool-too-small", null, queue, untouched).assertPasses();
		}
	}

	private static int freePort() {
		try (ServerSocket socket = new ServerSocket(0)) {
			return socket.getLocalPort();
		}
		catch (IOException ex) {
			throw new UncheckedIOException(ex);
		}
	}

}
