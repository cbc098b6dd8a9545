package io.github.pgqueue.reliability;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.atomic.AtomicReference;

import org.springframework.util.FileSystemUtils;

import static org.awaitility.Awaitility.await;

/**
 * The consumer JVMs of one scenario: starts them, replaces the dead, and stops them all at the
 * end, gracefully first.
 */
final class ConsumerFleet implements AutoCloseable {

	private static final Duration STARTUP = Duration.ofSeconds(90);

	private final ChaosDatabase database;

	private final String scenario;

	private final ConsumerSpec spec;

	private final List<ConsumerProcess> consumers = new ArrayList<>();

	private int started;

	ConsumerFleet(ChaosDatabase database, String scenario, ConsumerSpec spec) {
		this.database = database;
		this.scenario = scenario;
		this.spec = spec;
		FileSystemUtils.deleteRecursively(ChaosSettings.workDirectory().resolve(scenario).toFile());
	}

	/** Starts {@code count} consumers at once and waits until each polls. */
	List<ConsumerProcess> start(int count) {
		List<ConsumerProcess> batch = new ArrayList<>();
		for (int i = 0; i < count; i++) {
			batch.add(startOne());
		}
		batch.forEach(this::awaitReady);
		return batch;
	}

	/** Starts one more consumer without waiting for it. */
	synchronized ConsumerProcess startOne() {
		String name = this.scenario + "-c" + (++this.started);
		ConsumerProcess consumer = ConsumerProcess.start(name, this.spec.launcher(), this.spec.jvmOptions(),
				this.spec.arguments(name, this.database),
				ChaosSettings.workDirectory().resolve(this.scenario).resolve(name + ".log"));
		this.consumers.add(consumer);
		return consumer;
	}

	/** Waits until {@code consumer} has started its listeners. */
	void awaitReady(ConsumerProcess consumer) {
		await().atMost(STARTUP).pollInterval(Duration.ofMillis(100)).until(() -> {
			// Registered first: a consumer may die right after it started (a poison message halts it).
			if (isReady(consumer)) {
				return true;
			}
			if (!consumer.isAlive()) {
				throw new IllegalStateException("Consumer " + consumer + " exited while starting:\n"
						+ consumer.tail(40));
			}
			return false;
		});
	}

	/** Whether {@code consumer} has started its listeners. */
	boolean isReady(ConsumerProcess consumer) {
		return this.database.count("SELECT count(*) FROM chaos.consumer WHERE name = ?", consumer.name()) > 0;
	}

	/** The consumers alive and polling. */
	synchronized List<ConsumerProcess> ready() {
		return this.consumers.stream().filter(ConsumerProcess::isAlive).filter(this::isReady).toList();
	}

	/**
	 * A live consumer of this fleet, stopped (SIGSTOP) while it holds claimed messages: one that
	 * holds none when stopped is resumed and another is tried.
	 */
	ConsumerProcess freezeOneHoldingMessages() {
		return freezeOne(false);
	}

	/**
	 * A live consumer of this fleet, stopped (SIGSTOP) in the middle of a handler: one that holds
	 * claimed messages but runs no handler when stopped (between its claim and its first handler,
	 * say) is resumed and another is tried, so that a kill that follows ends a handler.
	 */
	ConsumerProcess freezeOneInAHandler() {
		return freezeOne(true);
	}

	private ConsumerProcess freezeOne(boolean inAHandler) {
		AtomicReference<ConsumerProcess> frozen = new AtomicReference<>();
		await().atMost(Duration.ofSeconds(60)).pollInterval(Duration.ofMillis(10)).until(() -> {
			ConsumerProcess candidate = anyReady();
			if (this.database.claimsOf(candidate.name()) == 0) {
				return false;
			}
			candidate.pause();
			this.database.awaitIdle(candidate.name());
			if (this.database.claimsOf(candidate.name()) == 0
					|| (inAHandler && this.database.handlersRunningIn(candidate.name()) == 0)) {
				candidate.resume();
				return false;
			}
			frozen.set(candidate);
			return true;
		});
		return frozen.get();
	}

	/** One consumer alive and polling, at random; waits for one if none is (all were just killed). */
	ConsumerProcess anyReady() {
		List<ConsumerProcess> ready = await().atMost(STARTUP).pollInterval(Duration.ofMillis(100))
			.until(this::ready, (list) -> !list.isEmpty());
		return ready.get(ThreadLocalRandom.current().nextInt(ready.size()));
	}

	/** Starts new consumers until {@code count} are alive (exited ones stay exited); does not wait. */
	synchronized void keepAlive(int count) {
		long alive = this.consumers.stream().filter(ConsumerProcess::isAlive).count();
		for (long i = alive; i < count; i++) {
			startOne();
		}
	}

	/** All consumers started so far, dead or alive. */
	synchronized List<ConsumerProcess> all() {
		return List.copyOf(this.consumers);
	}

	/** SIGTERM to every live consumer, then waits for each to exit. */
	void stop() {
		List<ConsumerProcess> alive = all().stream().filter(ConsumerProcess::isAlive).toList();
		alive.forEach(ConsumerProcess::terminate);
		alive.forEach((consumer) -> consumer.awaitExit(Duration.ofSeconds(60)));
	}

	@Override
	public void close() {
		all().forEach(ConsumerProcess::destroy);
	}

}
