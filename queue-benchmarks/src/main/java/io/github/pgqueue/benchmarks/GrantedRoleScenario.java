package io.github.pgqueue.benchmarks;

import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.atomic.LongAdder;

import javax.sql.DataSource;

import com.zaxxer.hikari.HikariDataSource;
import io.github.pgqueue.ConsumptionMode;
import io.github.pgqueue.QueueAdmin;
import io.github.pgqueue.QueueContext;
import io.github.pgqueue.listener.QueueListenerEndpointRegistry;

/**
 * {@code granted-role}: what per-role access costs a consumer. Consumers (4, at batch 10 and 100,
 * in both modes) logged in as the tables' owner, whom row-level security does not restrict, and as
 * a role granted send and consume on the queue, whose every statement on the message table the
 * policies check, each drain the same backlog for the run's drain time ({@code drain-seconds}),
 * alternated three times, median.
 */
final class GrantedRoleScenario {

	private static final String QUEUE = "granted-bench";

	private static final String ROLE = "bench_consumer";

	private static final int CONSUMERS = 4;

	private final BenchContext context;

	GrantedRoleScenario(BenchContext context) {
		this.context = context;
	}

	void run() {
		BenchDatabase database = this.context.database();
		database.execute("DO $$ BEGIN CREATE ROLE " + ROLE + " LOGIN; EXCEPTION WHEN duplicate_object THEN NULL; END $$");
		new QueueAdmin(QueueContext.of(database.adminPool())).grant(ROLE, QUEUE, QueueAdmin.Access.SEND,
				QueueAdmin.Access.CONSUME);
		// More than the fastest side drains in the drain time (up to about 120 000 msg/s here).
		int backlog = (int) Math.min(2_000_000, 150_000 * this.context.options().drainTime().toSeconds());
		try (HikariDataSource granted = database.poolAs(ROLE, CONSUMERS + 4)) {
			// Unmeasured: the JIT, both pools and both modes' statements settle before the first measured drain.
			for (ConsumptionMode mode : ConsumptionMode.values()) {
				drain(database.consumerPool(), mode, 10, backlog, "owner (warm-up)");
				drain(granted, mode, 10, backlog, ROLE + " (warm-up)");
			}
			for (ConsumptionMode mode : ConsumptionMode.values()) {
				for (int batch : List.of(10, 100)) {
					List<Drain.Outcome> owner = new ArrayList<>();
					List<Drain.Outcome> role = new ArrayList<>();
					for (int round = 0; round < 3; round++) {
						owner.add(drain(database.consumerPool(), mode, batch, backlog, "owner"));
						role.add(drain(granted, mode, batch, backlog, ROLE));
					}
					String system = (mode == ConsumptionMode.TRANSACTIONAL) ? "pgqueue-tx" : "pgqueue";
					Drain.Outcome ownerMedian = new Drain.Runs(owner, backlog).median();
					Drain.Outcome roleMedian = new Drain.Runs(role, backlog).median();
					double ownerRate = ownerMedian.rate();
					double roleRate = roleMedian.rate();
					this.context.results().add(BenchRow.throughput("granted-role", system, CONSUMERS,
							String.valueOf(batch), ownerMedian.messages(), ownerRate).with("runs", rates(owner)));
					this.context.results().add(BenchRow.throughput("granted-role", system + "-granted", CONSUMERS,
							String.valueOf(batch), roleMedian.messages(), roleRate).with("runs", rates(role)));
					this.context.results().ratio("scenario=granted-role system=" + system + " consumers=" + CONSUMERS
							+ " batch=" + batch + " granted/owner=" + Results.ratio(roleRate / ownerRate));
				}
			}
		}
		finally {
			database.execute("TRUNCATE pgqueue.message");
		}
	}

	/**
	 * Drains a backlog of {@code messages} for the drain time with consumers logged in through
	 * {@code pool} as {@code who}.
	 */
	private Drain.Outcome drain(DataSource pool, ConsumptionMode mode, int batch, int messages, String who) {
		BenchDatabase database = this.context.database();
		database.execute("TRUNCATE pgqueue.message");
		database.admin().update("INSERT INTO pgqueue.message (queue, payload) "
				+ "SELECT ?, jsonb_build_object('n', g) FROM generate_series(1, ?) g", QUEUE, messages);
		database.vacuumAnalyze("pgqueue.message");
		LongAdder handled = new LongAdder();
		QueueListenerEndpointRegistry registry = Drain.countingListener(QueueContext.of(pool), pool, "granted-bench",
				QUEUE, CONSUMERS, batch, mode, null, handled);
		this.context.startProbe();
		Drain.Outcome listened = Drain.listenUntilHandled(registry, handled, messages,
				this.context.options().drainTime());
		this.context.endProbe("granted-role " + mode.name().toLowerCase(java.util.Locale.ROOT) + " " + who + " "
				+ CONSUMERS + "x" + batch);
		if (listened.messages() == 0) {
			throw new IllegalStateException("Consumers logged in as " + who + " handled none of " + messages
					+ " messages of '" + QUEUE + "' in " + this.context.options().drainTime().toSeconds() + " s");
		}
		return listened;
	}

	private static String rates(List<Drain.Outcome> drains) {
		return drains.stream().map((drain) -> String.valueOf(Math.round(drain.rate()))).toList().toString();
	}

}
