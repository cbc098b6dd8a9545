package io.github.pgqueue.benchmarks;

import java.time.Duration;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.concurrent.atomic.LongAdder;
import java.util.function.Function;
import java.util.function.LongConsumer;

import javax.sql.DataSource;

import io.github.pgqueue.ConsumptionMode;
import io.github.pgqueue.QueueContext;
import io.github.pgqueue.listener.QueueListenerEndpointRegistry;

/**
 * Times consumers working through a backlog that is already in the table; warms them up first and
 * sizes the backlog of the timed drains by the rate the warm-up reached.
 */
final class Drain {

	/** A timed drain handles at least this many messages, however slow the system. */
	static final int MIN_MESSAGES = 2_000;

	/** A timed drain handles at most this many messages, however fast the system. */
	static final int MAX_MESSAGES = 3_000_000;

	/** How much more backlog a timed drain starts from than it would take at the warm-up's rate. */
	static final double BACKLOG_MARGIN = 1.2;

	/** The rate assumed of a system before its first warm-up, to size that warm-up's backlog. */
	static final double FIRST_GUESS = 5_000;

	private Drain() {
	}

	/**
	 * A registry, not started, of one listener {@code id} on {@code queue} and {@code pool}:
	 * {@code concurrency} pollers at {@code batch} in {@code mode}, receiving only messages whose
	 * headers match {@code filter} if it is not null, each message counted in {@code handled}.
	 */
	static QueueListenerEndpointRegistry countingListener(QueueContext context, DataSource pool, String id,
			String queue, int concurrency, int batch, ConsumptionMode mode, String filter, LongAdder handled) {
		QueueListenerEndpointRegistry registry = new QueueListenerEndpointRegistry(context, pool, Duration.ofSeconds(10));
		registry.registerListenerEndpoint(PgQueueSystem.endpoint(id, queue, concurrency, batch, PgQueueSystem.POLL_INTERVAL,
				mode, filter, (n) -> handled.increment()));
		return registry;
	}

	/**
	 * Starts {@code registry}'s listeners and stops them once they handled {@code messages}, or
	 * {@code cap} after the start: how many messages they had handled by then, and in how long.
	 */
	static Outcome listenUntilHandled(QueueListenerEndpointRegistry registry, LongAdder handled, long messages,
			Duration cap) {
		long started = System.nanoTime();
		long deadline = started + cap.toNanos();
		long finished;
		long handledBy;
		registry.start();
		try {
			do {
				BenchContext.pause(2);
				handledBy = handled.sum();
				finished = System.nanoTime();
			}
			while (handledBy < messages && finished < deadline);
		}
		finally {
			registry.stop();
		}
		return new Outcome(handledBy, (finished - started) / 1e9);
	}

	/**
	 * Drains of one kind, by listeners of pgqueue, each timed over the run's drain time
	 * ({@code drain-seconds}) from a backlog the scenario loads afresh. A drain that takes the whole
	 * backlog before the drain time is over is run again from a larger one (a fifth more than the
	 * rate it reached would take in the drain time, with {@link #BACKLOG_MARGIN}, and at least half
	 * as large again), up to twice. The backlog grows only then, so that the drains of one kind
	 * compared with each other start from the same backlog unless one ran out.
	 */
	static final class Timed {

		private final BenchContext context;

		/** The backlog the next drain starts from. */
		private long backlog;

		/** The backlog the last drain started from. */
		private long last;

		/** Drains whose first backlog is what consumers take at {@code guess} messages a second. */
		Timed(BenchContext context, double guess) {
			this.context = context;
			this.backlog = clamp(guess * seconds(context) * BACKLOG_MARGIN);
		}

		/**
		 * Loads the backlog with {@code load} (given its size), starts the listeners that
		 * {@code listeners} registers, counting each message they handle in the adder it is given,
		 * and stops them after the drain time or once they handled the whole backlog; with the
		 * {@code probe} option, reports the drain under {@code label}. Fails if they handled none:
		 * a drain whose consumers fail has no rate to report.
		 */
		Outcome drain(String label, LongConsumer load, Function<LongAdder, QueueListenerEndpointRegistry> listeners) {
			for (int attempt = 0;; attempt++) {
				load.accept(this.backlog);
				this.last = this.backlog;
				LongAdder handled = new LongAdder();
				QueueListenerEndpointRegistry registry = listeners.apply(handled);
				this.context.startProbe();
				Outcome outcome = listenUntilHandled(registry, handled, this.backlog, this.context.options().drainTime());
				this.context.endProbe(label);
				if (outcome.messages() == 0) {
					throw new IllegalStateException("The consumers of " + label + " handled none of " + this.backlog
							+ " messages in " + this.context.options().drainTime().toSeconds()
							+ " s; see the errors logged above");
				}
				if (outcome.messages() < this.backlog || attempt == 2) {
					return outcome;
				}
				this.backlog = clamp(Math.max(this.backlog * 1.5,
						outcome.rate() * seconds(this.context) * BACKLOG_MARGIN * 1.2));
			}
		}

		/** The backlog the last drain started from. */
		long backlog() {
			return this.last;
		}

		private static double seconds(BenchContext context) {
			return context.options().drainTime().toMillis() / 1000.0;
		}

	}

	/**
	 * Makes the system's backlog at least {@code size} ready messages, then vacuums and analyzes its
	 * table; returns the backlog it left.
	 */
	static long prepare(BenchContext context, QueueSystem system, long size) {
		long pending = system.pending();
		if (pending < size) {
			system.preload((int) (size - pending), Duration.ZERO);
		}
		context.database().vacuumAnalyze(system);
		return Math.max(pending, size);
	}

	/**
	 * Warms the consumers up on a backlog of their own (what they leave is part of the next
	 * drain's): runs them until their rate is steady (see {@link WarmUp}) and returns that rate. The
	 * backlog is {@code guess} messages a second for the longest warm-up; when the consumers take
	 * most of it before the shortest warm-up has passed, they warm up again on one sized by the
	 * rate they reached, up to twice.
	 */
	static WarmUp.Result warmUp(BenchContext context, QueueSystem system, int concurrency, int batchSize,
			double guess) {
		double maxSeconds = context.options().warmUpMax().toMillis() / 1000.0;
		double minSeconds = context.options().warmUpMin().toMillis() / 1000.0;
		double rate = guess;
		WarmUp.Result result = null;
		for (int attempt = 0; attempt < 3 && (result == null || result.seconds() < minSeconds); attempt++) {
			if (result != null) {
				rate = Math.max(rate * 4, result.rate() * 2);
			}
			long backlog = prepare(context, system, clamp(rate * maxSeconds));
			LongAdder handled = new LongAdder();
			long[] seen = { 0 };
			try (Consumers consumers = system.startConsumers(concurrency, batchSize, (n) -> handled.increment())) {
				result = WarmUp.untilSteady(context.options(), () -> {
					BenchContext.pause(WarmUp.SLICE_MILLIS);
					long now = handled.sum();
					long slice = now - seen[0];
					seen[0] = now;
					return slice;
				}, () -> handled.sum() >= 0.8 * backlog);
			}
			if (handled.sum() == 0) {
				throw new IllegalStateException("The consumers of " + system.name() + " (" + concurrency + " x batch "
						+ batchSize + ") handled no message while warming up; see the errors logged above");
			}
		}
		return result;
	}

	/**
	 * The timed drains of one system and configuration, after {@link #warmUp}: {@code runs} drains
	 * of {@code drain-seconds} each, timed over that window, each from a backlog sized to outlast it
	 * at {@code rate} (a fifth more than the consumers would take at that rate). A drain that ran
	 * out of backlog before {@value BenchOptions#MIN_DRAIN_SECONDS} s (the consumers ran faster than
	 * when warming up) is run again from a larger backlog, up to twice; it counts as more warm-up.
	 */
	static Runs measure(BenchContext context, QueueSystem system, int concurrency, int batchSize, double rate) {
		return measure(context, system, concurrency, batchSize, rate, context.options().drainRuns());
	}

	/** {@link #measure(BenchContext, QueueSystem, int, int, double)} with {@code runs} timed drains. */
	static Runs measure(BenchContext context, QueueSystem system, int concurrency, int batchSize, double rate,
			int runs) {
		Duration window = context.options().drainTime();
		double seconds = window.toMillis() / 1000.0;
		long size = clamp(rate * seconds * BACKLOG_MARGIN);
		List<Outcome> outcomes = new ArrayList<>();
		long backlog = 0;
		for (int i = 0; i < runs; i++) {
			Outcome outcome;
			for (int attempt = 0;; attempt++) {
				backlog = prepare(context, system, size);
				context.startProbe();
				outcome = run(system, concurrency, batchSize, backlog, window);
				context.endProbe("drain " + system.name() + " " + concurrency + "x" + batchSize);
				if (outcome.seconds() >= BenchOptions.MIN_DRAIN_SECONDS || attempt == 2) {
					break;
				}
				size = clamp(outcome.rate() * seconds * BACKLOG_MARGIN * 1.2);
			}
			outcomes.add(outcome);
		}
		return new Runs(outcomes, backlog);
	}

	private static long clamp(double messages) {
		return (long) Math.max(MIN_MESSAGES, Math.min(MAX_MESSAGES, Math.ceil(messages)));
	}

	/**
	 * Starts consumers and waits until they have handled {@code target} messages or {@code cap}
	 * has passed; returns how many they handled and in how long. Fails if they handled none: a
	 * system whose consumers fail has no rate to report.
	 */
	static Outcome run(QueueSystem system, int concurrency, int batchSize, long target, Duration cap) {
		LongAdder handled = new LongAdder();
		long started = System.nanoTime();
		long deadline = started + cap.toNanos();
		long count;
		long finished;
		try (Consumers consumers = system.startConsumers(concurrency, batchSize, (n) -> handled.increment())) {
			do {
				BenchContext.pause(5);
				count = handled.sum();
				finished = System.nanoTime();
			}
			while (count < target && finished < deadline);
		}
		if (count == 0) {
			throw new IllegalStateException("The consumers of " + system.name() + " (" + concurrency + " x batch "
					+ batchSize + ") handled no message in " + cap.toSeconds() + " s; see the errors logged above");
		}
		return new Outcome(count, (finished - started) / 1e9);
	}

	/** {@code messages} handled in {@code seconds}. */
	record Outcome(long messages, double seconds) {

		double rate() {
			return this.messages / this.seconds;
		}

	}

	/** The timed drains of one system and configuration, and the backlog the last one started from. */
	record Runs(List<Outcome> outcomes, long backlog) {

		/** The drain of median rate (of an even number, the lower of the middle two). */
		Outcome median() {
			List<Outcome> sorted = sorted();
			return sorted.get((sorted.size() - 1) / 2);
		}

		/** The median rate (of an even number of drains, the mean of the middle two). */
		double medianRate() {
			List<Outcome> sorted = sorted();
			int n = sorted.size();
			return (n % 2 == 1) ? sorted.get(n / 2).rate() : (sorted.get(n / 2 - 1).rate() + sorted.get(n / 2).rate()) / 2;
		}

		/** Every drain's rate, rounded, in the order they ran. */
		String rates() {
			return this.outcomes.stream().map((outcome) -> String.valueOf(Math.round(outcome.rate()))).toList().toString();
		}

		double minRate() {
			return sorted().get(0).rate();
		}

		double maxRate() {
			return sorted().get(this.outcomes.size() - 1).rate();
		}

		private List<Outcome> sorted() {
			return this.outcomes.stream().sorted(Comparator.comparingDouble(Outcome::rate)).toList();
		}

	}

}
