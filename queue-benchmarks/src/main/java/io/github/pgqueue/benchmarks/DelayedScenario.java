package io.github.pgqueue.benchmarks;

import java.math.BigDecimal;
import java.math.MathContext;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.concurrent.atomic.LongAdder;

/**
 * {@code delayed}: 10 000 messages sent one by one up front into an idle queue, each visible only
 * after its own delay; the delays are spread evenly over 20 s and sent in a shuffled order (fixed
 * seed), so that a message sent later is often due sooner than one already waiting. One consumer
 * thread whose poll interval is 60 s handles them. The figure is each message's lateness: when its
 * handler started minus when it fell due, the instant just before its send began plus its delay, on
 * the same clock (so the send's own time counts as lateness, never the other way round). A message
 * still unhandled at the deadline counts as started then: its lateness is a lower bound. The
 * messages due after the last send returned are also summarized apart: while the sends go on, the
 * consumer is woken by each one's notification and shares the two cores with the producer.
 */
final class DelayedScenario {

	static final int MESSAGES = 10_000;

	static final Duration SPREAD = Duration.ofSeconds(20);

	static final Duration POLL_INTERVAL = Duration.ofSeconds(60);

	/** The target for pgqueue's p99 lateness. */
	static final double TARGET_P99_MILLIS = 50;

	private static final long SEED = 20_000;

	/** After the last due instant: a poller with no wake-up for due messages finds them at its next poll. */
	static final Duration GRACE = POLL_INTERVAL.plusSeconds(30);

	// Longer than the 10 s an idle backend may hold back its statistics.
	static final long STATS_FLUSH_MILLIS = 11_000;

	/** The two statements of each reading of the transaction counter: one of them falls inside the window. */
	private static final int READING_STATEMENTS = 2;

	private final BenchContext context;

	DelayedScenario(BenchContext context) {
		this.context = context;
	}

	void run() {
		List<Duration> delays = delays();
		for (QueueSystem system : this.context.systems()) {
			if (!system.sendsDelayed()) {
				System.out.println("# delayed: " + system.name() + " has no per-message delay; no figure taken");
				this.context.results()
					.add(new BenchRow("delayed", system.name(), 1, "-", 0, null, null, null, Map.of())
						.with("note", "no_per_message_delay"));
				continue;
			}
			measure(system, delays);
		}
		ratios();
	}

	/** Evenly spread over {@link #SPREAD}, in a shuffled order that is the same in every run. */
	static List<Duration> delays() {
		List<Duration> delays = new ArrayList<>(MESSAGES);
		for (int i = 0; i < MESSAGES; i++) {
			delays.add(SPREAD.multipliedBy(i).dividedBy(MESSAGES));
		}
		Collections.shuffle(delays, new Random(SEED));
		return delays;
	}

	private void measure(QueueSystem system, List<Duration> delays) {
		system.clear();
		this.context.database().vacuumAnalyze(system);
		int batchSize = system.claimsInBatches() ? PgQueueSystem.DEFAULT_BATCH_SIZE : 1;
		Latencies lateness = new Latencies(MESSAGES);
		// The messages due after the last send returned: the consumer had only them to wait for.
		Latencies afterSends = new Latencies(MESSAGES);
		LongAdder handled = new LongAdder();
		long sendNanos;
		long transactions;
		try (Consumers consumer = system.startDelayedConsumer(batchSize, POLL_INTERVAL, (n) -> {
			lateness.started(n);
			afterSends.started(n);
			handled.increment();
		})) {
			// Let the consumer find the queue empty and go to sleep for its poll interval.
			BenchContext.pause(1_500);
			long before = this.context.database().committedTransactions();
			long[] due = new long[MESSAGES];
			long lastDue = 0;
			long sendStart = System.nanoTime();
			for (int i = 0; i < MESSAGES; i++) {
				Duration delay = delays.get(i);
				long start = System.nanoTime();
				system.sendDelayed(i, delay);
				due[i] = start + delay.toNanos();
				lateness.due(i, due[i]);
				lastDue = Math.max(lastDue, due[i]);
			}
			long sendEnd = System.nanoTime();
			sendNanos = sendEnd - sendStart;
			for (int i = 0; i < MESSAGES; i++) {
				if (due[i] > sendEnd) {
					afterSends.due(i, due[i]);
				}
			}
			long deadline = lastDue + GRACE.toNanos();
			while (handled.sum() < MESSAGES && System.nanoTime() < deadline) {
				BenchContext.pause(20);
			}
			BenchContext.pause(STATS_FLUSH_MILLIS);
			transactions = this.context.database().committedTransactions() - before - READING_STATEMENTS;
		}
		long unhandled = MESSAGES - handled.sum();
		for (int i = 0; i < MESSAGES; i++) {
			// Only those no handler started on: they count as started now, a lower bound.
			lateness.started(i);
			afterSends.started(i);
		}
		Latencies.Summary summary = lateness.summarize();
		Latencies.Summary quiet = afterSends.summarize();
		this.context.results()
			.add(new BenchRow("delayed", system.name(), 1, String.valueOf(batchSize), summary.count(), null,
					summary.p50Millis(), summary.p99Millis(), Map.of())
				.with("max_ms", summary.maxMillis())
				.with("poll_interval_s", POLL_INTERVAL.toSeconds())
				.with("send_s", sendNanos / 1e9)
				.with("due_after_sends", quiet.count())
				.with("after_sends_p50_ms", BenchRow.format(quiet.p50Millis(), 2))
				.with("after_sends_p99_ms", BenchRow.format(quiet.p99Millis(), 2))
				// The sends are one transaction each; the rest is the consumer's (and its wake-ups').
				.with("consumer_xacts_per_msg", Math.max(0, transactions - MESSAGES) / (double) MESSAGES)
				.with("early", summary.early())
				.with("unhandled", unhandled));
		system.clear();
	}

	/**
	 * One line per pgqueue system: its p99 lateness over each other system's. Lower is better, the
	 * other way round from the throughput ratios: 0.5 means half as late.
	 */
	private void ratios() {
		List<String> mine = List.of("pgqueue", "pgqueue-tx");
		for (String system : mine) {
			BenchRow row = find(system);
			if (row == null || row.p99Millis() == null) {
				continue;
			}
			StringBuilder line = new StringBuilder("scenario=delayed consumers=1 batch=").append(row.batch())
				.append(" metric=p99_lateness");
			List<String> others = new ArrayList<>(Results.OTHERS);
			if (system.equals("pgqueue-tx")) {
				others.add(0, "pgqueue");
			}
			for (String other : others) {
				BenchRow theirs = find(other);
				if (theirs != null && theirs.p99Millis() != null && theirs.p99Millis() > 0) {
					line.append(' ').append(system).append('/').append(other).append('=')
						.append(ratio(row.p99Millis() / theirs.p99Millis()));
				}
			}
			this.context.results().ratio(line.toString());
			System.out.printf("# delayed: %s p99 lateness %.2f ms (%s ms for the messages due after the sends), "
					+ "target <= %.0f ms: %s%n", system, row.p99Millis(), row.extra().get("after_sends_p99_ms"),
					TARGET_P99_MILLIS, (row.p99Millis() <= TARGET_P99_MILLIS) ? "met" : "missed");
		}
	}

	private BenchRow find(String system) {
		return this.context.results()
			.rows()
			.stream()
			.filter((row) -> row.scenario().equals("delayed") && row.system().equals(system))
			.findFirst()
			.orElse(null);
	}

	/** Two significant digits, never in exponent form: lateness ratios can be far below 0.01. */
	private static String ratio(double value) {
		return (value >= 0.01) ? Results.ratio(value)
				: new BigDecimal(value).round(new MathContext(2)).stripTrailingZeros().toPlainString();
	}

}
