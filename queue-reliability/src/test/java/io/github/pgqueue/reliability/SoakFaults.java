package io.github.pgqueue.reliability;

import java.time.Duration;
import java.time.Instant;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.stream.Stream;

import static org.awaitility.Awaitility.await;

/**
 * The rotation's faults. Each lands while its victim holds claims: the victim is frozen
 * (SIGSTOP) first, its claims written down as faulted, then hit.
 */
final class SoakFaults {

	/** The faults in the order they take turns. */
	static final List<String> ROTATION = List.of("kill-9", "pg_terminate_backend", "postgres-restart", "partition");

	private final ChaosDatabase database;

	private final ScenarioServer server;

	private final NetworkNamespace namespace;

	private final SoakSamples samples;

	private final ConsumerFleet killed;

	private final ConsumerFleet terminated;

	private final ConsumerFleet partitioned;

	private final SoakPlan plan;

	private final Map<String, Integer> counts = new LinkedHashMap<>();

	/** {@code fleets}: the one whose JVM is killed, the one whose sessions are terminated, the partitioned one. */
	SoakFaults(ChaosDatabase database, ScenarioServer server, NetworkNamespace namespace, SoakSamples samples,
			List<ConsumerFleet> fleets, SoakPlan plan) {
		this.plan = plan;
		this.database = database;
		this.server = server;
		this.namespace = namespace;
		this.samples = samples;
		this.killed = fleets.get(0);
		this.terminated = fleets.get(1);
		this.partitioned = fleets.get(2);
	}

	/** Injects {@code fault}; false if it cannot be here (a partition without a namespace). */
	boolean inject(String fault) {
		String victim = switch (fault) {
			case "kill-9" -> killOne();
			case "pg_terminate_backend" -> terminateSessions();
			case "postgres-restart" -> restartPostgres();
			case "partition" -> partition();
			default -> throw new IllegalArgumentException("Unknown fault " + fault);
		};
		if (victim == null) {
			return false;
		}
		this.counts.merge(fault, 1, Integer::sum);
		System.out.printf("SOAK fault=%s victim=%s at=%s%n", fault, victim, Instant.now());
		return true;
	}

	int count(String fault) {
		return this.counts.getOrDefault(fault, 0);
	}

	String counts() {
		StringBuilder text = new StringBuilder();
		ROTATION.forEach((fault) -> text.append(text.isEmpty() ? "" : " ").append(fault).append('=')
			.append(count(fault)));
		return text.toString();
	}

	private String killOne() {
		ConsumerProcess victim = freezeWhileItHoldsClaims(this.killed);
		this.database.faultSessions(victim.name(), "kill-9", false);
		this.samples.fault("kill-9", victim.name());
		victim.kill();
		this.killed.startOne();
		return victim.name();
	}

	private String terminateSessions() {
		ConsumerProcess victim = freezeWhileItHoldsClaims(this.terminated);
		this.samples.fault("pg_terminate_backend", victim.name());
		this.database.faultSessions(victim.name(), "pg_terminate_backend", true);
		victim.resume();
		return victim.name();
	}

	private String restartPostgres() {
		List<ConsumerProcess> consumers = Stream.of(this.killed, this.terminated, this.partitioned)
			.flatMap((fleet) -> fleet.ready().stream()).toList();
		await().atMost(Duration.ofSeconds(30)).pollInterval(Duration.ofMillis(10))
			.until(() -> this.database.advisoryLocks() > 0);
		this.samples.fault("postgres-restart", "all");
		this.server.crashAndRestart(() -> {
			// Frozen while the server comes back, so that the claims the crash ended can be
			// written down before anyone claims them again.
			consumers.forEach(ConsumerProcess::pause);
			ChaosDatabase.pause(this.plan.downtime());
		});
		this.database.reconnect();
		await().atMost(Duration.ofSeconds(30)).pollInterval(Duration.ofMillis(200)).ignoreExceptions()
			.until(() -> this.database.count("SELECT 1") == 1);
		this.database.faultEveryClaim("postgres-restart");
		consumers.forEach(ConsumerProcess::resume);
		return "all";
	}

	private String partition() {
		if (this.namespace == null) {
			return null;
		}
		ConsumerProcess victim = freezeWhileItHoldsClaims(this.partitioned);
		this.database.faultSessions(victim.name(), "partition", false);
		this.samples.fault("partition", victim.name());
		this.namespace.cut();
		victim.resume();
		ChaosDatabase.pause(this.plan.partition());
		this.namespace.heal();
		return victim.name();
	}

	/** Freezes the fleet's consumer (SIGSTOP) at a moment its sessions hold claims and are idle. */
	private ConsumerProcess freezeWhileItHoldsClaims(ConsumerFleet fleet) {
		ConsumerProcess[] frozen = new ConsumerProcess[1];
		await().atMost(Duration.ofSeconds(90)).pollInterval(Duration.ofMillis(20)).until(() -> {
			List<ConsumerProcess> ready = fleet.ready();
			if (ready.isEmpty()) {
				return false;
			}
			ConsumerProcess consumer = ready.get(ready.size() - 1);
			if (this.database.claimsOf(consumer.name()) == 0) {
				return false;
			}
			consumer.pause();
			this.database.awaitIdle(consumer.name());
			if (this.database.claimsOf(consumer.name()) > 0) {
				frozen[0] = consumer;
				return true;
			}
			consumer.resume();
			return false;
		});
		return frozen[0];
	}

}
