package io.github.pgqueue.benchmarks;

import java.util.ArrayList;
import java.util.List;
import java.util.Locale;

import io.github.pgqueue.ConsumptionMode;

import org.springframework.context.ConfigurableApplicationContext;

/**
 * {@code binder}: what the Spring Cloud Stream binder costs over an {@code @QueueListener}. One
 * Spring Boot application per consumption mode and configuration ({@link BinderApplication})
 * holds a {@code Consumer<Tick>} function bound with the pgqueue binder and an
 * {@code @QueueListener(Tick)} on the binding's queue, with the same mode, concurrency and batch
 * size; the two are started one at a time on the same queue and payload. {@code binder-drain} is
 * {@code drain}'s measurement (warm-up, then a timed drain of a tiny-JSON backlog; 4 consumers and
 * batch 10 in quick mode, drain's four configurations in full); {@code binder-steady} is
 * {@code steady}'s (4 consumers, batch 10, two producers at {@code steady-rate}), for
 * {@value #QUICK_STEADY_SECONDS} s in quick mode and {@code steady-seconds} in full. RATIO lines
 * give the binder's figures over the listener's: rate, and in steady also p50 and p99 and the
 * p99's difference in milliseconds.
 */
final class BinderScenario {

	/** How long each side's steady load lasts in quick mode. */
	static final int QUICK_STEADY_SECONDS = 2;

	/** The most the binder may cost: its drain rate at least 0.85 of the listener's, its p99 at most 1.15 of it ... */
	static final double TARGET = 0.15;

	/** ... or at most this much above it, in milliseconds, when the p99 is too small for a ratio to mean much. */
	static final double P99_FLOOR_MILLIS = 2;

	private static final int[][] QUICK_CONFIGURATIONS = { { SteadyScenario.CONSUMERS, PgQueueSystem.DEFAULT_BATCH_SIZE } };

	private static final int[][] FULL_CONFIGURATIONS = { { 1, PgQueueSystem.DEFAULT_BATCH_SIZE }, { 1, 100 },
			{ SteadyScenario.CONSUMERS, PgQueueSystem.DEFAULT_BATCH_SIZE }, { 4, 100 } };

	private final BenchContext context;

	BinderScenario(BenchContext context) {
		this.context = context;
	}

	void run() {
		List<String> verdicts = new ArrayList<>();
		for (ConsumptionMode mode : ConsumptionMode.values()) {
			String binder = BinderSystem.name(BinderSystem.Path.BINDER, mode);
			String listener = BinderSystem.name(BinderSystem.Path.QUEUE_LISTENER, mode);
			if (!this.context.options().measures(binder) || !this.context.options().measures(listener)) {
				continue;
			}
			for (int[] configuration : this.context.options().quick() ? QUICK_CONFIGURATIONS : FULL_CONFIGURATIONS) {
				run(mode, configuration[0], configuration[1], verdicts);
			}
		}
		verdicts.forEach((verdict) -> System.out.println("# binder: " + verdict));
	}

	private void run(ConsumptionMode mode, int concurrency, int batchSize, List<String> verdicts) {
		BinderApplication.HandlerSlot slot = new BinderApplication.HandlerSlot();
		try (ConfigurableApplicationContext application = BinderApplication.start(this.context.database(), mode,
				concurrency, batchSize, slot)) {
			BinderSystem listener = new BinderSystem(this.context.database(), application, slot,
					BinderSystem.Path.QUEUE_LISTENER, mode, concurrency, batchSize);
			BinderSystem binder = new BinderSystem(this.context.database(), application, slot, BinderSystem.Path.BINDER,
					mode, concurrency, batchSize);
			BenchRow[] drains = drain(listener, binder, concurrency, batchSize);
			BenchRow listenerDrain = drains[0];
			BenchRow binderDrain = drains[1];
			double drainRatio = binderDrain.msgsPerSecond() / listenerDrain.msgsPerSecond();
			String pair = binder.name() + "/" + listener.name();
			String where = "consumers=" + concurrency + " batch=" + batchSize;
			this.context.results().ratio("scenario=binder-drain " + where + " " + pair + "=" + Results.ratio(drainRatio));
			verdicts.add(String.format(Locale.ROOT, "drain %s %s %s %.2f, target >= %.2f: %s", where, pair,
					"rate", drainRatio, 1 - TARGET, (drainRatio >= 1 - TARGET) ? "met" : "missed"));
			if (concurrency != SteadyScenario.CONSUMERS || batchSize != PgQueueSystem.DEFAULT_BATCH_SIZE) {
				return;
			}
			java.time.Duration duration = this.context.options().quick()
					? java.time.Duration.ofSeconds(QUICK_STEADY_SECONDS) : this.context.options().steady();
			SteadyScenario steady = new SteadyScenario(this.context);
			BenchRow listenerSteady = steady.measure(listener, "binder-steady", duration);
			this.context.results().add(listenerSteady);
			BenchRow binderSteady = steady.measure(binder, "binder-steady", duration);
			this.context.results().add(binderSteady);
			double p99Difference = binderSteady.p99Millis() - listenerSteady.p99Millis();
			double p99Ratio = binderSteady.p99Millis() / listenerSteady.p99Millis();
			this.context.results()
				.ratio("scenario=binder-steady " + where + " " + pair + "="
						+ Results.ratio(binderSteady.msgsPerSecond() / listenerSteady.msgsPerSecond()) + " p50_" + pair + "="
						+ Results.ratio(binderSteady.p50Millis() / listenerSteady.p50Millis()) + " p99_" + pair + "="
						+ Results.ratio(p99Ratio) + " p99_diff_ms=" + BenchRow.format(p99Difference, 2));
			boolean met = p99Ratio <= 1 + TARGET || p99Difference <= P99_FLOOR_MILLIS;
			verdicts.add(String.format(Locale.ROOT, "steady %s %s p99 %.2f (%+.2f ms), target <= %.2f or <= +%.0f ms: %s",
					where, pair, p99Ratio, p99Difference, 1 + TARGET, P99_FLOOR_MILLIS, met ? "met" : "missed"));
		}
	}

	/**
	 * Warms both sides up, then times {@code drain-runs} drains of each, alternating which goes
	 * first (listener, binder, binder, listener, …) so that a change in the machine's load over
	 * the scenario weighs on both; returns their rows, the listener's first.
	 */
	private BenchRow[] drain(BinderSystem listener, BinderSystem binder, int concurrency, int batchSize) {
		listener.clear();
		WarmUp.Result listenerWarmUp = Drain.warmUp(this.context, listener, concurrency, batchSize, Drain.FIRST_GUESS);
		WarmUp.Result binderWarmUp = Drain.warmUp(this.context, binder, concurrency, batchSize, Drain.FIRST_GUESS);
		List<Drain.Outcome> listenerRuns = new ArrayList<>();
		List<Drain.Outcome> binderRuns = new ArrayList<>();
		long[] backlogs = new long[2];
		for (int i = 0; i < this.context.options().drainRuns(); i++) {
			for (int side : (i % 2 == 0) ? new int[] { 0, 1 } : new int[] { 1, 0 }) {
				BinderSystem system = (side == 0) ? listener : binder;
				double rate = ((side == 0) ? listenerWarmUp : binderWarmUp).rate();
				Drain.Runs runs = Drain.measure(this.context, system, concurrency, batchSize, rate, 1);
				((side == 0) ? listenerRuns : binderRuns).addAll(runs.outcomes());
				backlogs[side] = runs.backlog();
			}
		}
		BenchRow[] rows = { row(listener, concurrency, batchSize, new Drain.Runs(listenerRuns, backlogs[0]), listenerWarmUp),
				row(binder, concurrency, batchSize, new Drain.Runs(binderRuns, backlogs[1]), binderWarmUp) };
		listener.clear();
		return rows;
	}

	private BenchRow row(BinderSystem system, int concurrency, int batchSize, Drain.Runs runs, WarmUp.Result warmUp) {
		BenchRow row = BenchRow
			.throughput("binder-drain", system.name(), concurrency, String.valueOf(batchSize), runs.median().messages(),
					runs.medianRate())
			.with("backlog", runs.backlog())
			.with("seconds", runs.median().seconds())
			.with("warm_up_s", warmUp.seconds())
			.with("runs", runs.outcomes().size());
		if (runs.outcomes().size() > 1) {
			row = row.with("min", BenchRow.format(runs.minRate(), 1)).with("max", BenchRow.format(runs.maxRate(), 1));
		}
		this.context.results().add(row);
		return row;
	}

}
