package io.github.pgqueue.benchmarks;

import java.util.ArrayList;
import java.util.List;

import javax.sql.DataSource;

import com.zaxxer.hikari.HikariDataSource;
import io.github.pgqueue.ConsumptionMode;
import io.github.pgqueue.QueueAdmin;
import io.github.pgqueue.QueueContext;

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
		try (HikariDataSource granted = database.poolAs(ROLE, CONSUMERS + 4)) {
			// Unmeasured: the JIT, both pools and both modes' statements settle before the first measured drain.
			for (ConsumptionMode mode : ConsumptionMode.values()) {
				Drain.Timed warmUps = new Drain.Timed(this.context, 30_000);
				drain(warmUps, database.consumerPool(), mode, 10, "owner (warm-up)");
				drain(warmUps, granted, mode, 10, ROLE + " (warm-up)");
			}
			for (ConsumptionMode mode : ConsumptionMode.values()) {
				for (int batch : List.of(10, 100)) {
					// Up to about 120 000 msg/s here at batch 100 (a backlog that runs out grows).
					Drain.Timed drains = new Drain.Timed(this.context, (batch == 10) ? 30_000 : 120_000);
					List<Drain.Outcome> owner = new ArrayList<>();
					List<Drain.Outcome> role = new ArrayList<>();
					for (int round = 0; round < 3; round++) {
						owner.add(drain(drains, database.consumerPool(), mode, batch, "owner"));
						role.add(drain(drains, granted, mode, batch, ROLE));
					}
					String system = (mode == ConsumptionMode.TRANSACTIONAL) ? "pgqueue-tx" : "pgqueue";
					Drain.Runs ownerRuns = new Drain.Runs(owner, drains.backlog());
					Drain.Runs roleRuns = new Drain.Runs(role, drains.backlog());
					Drain.Outcome ownerMedian = ownerRuns.median();
					Drain.Outcome roleMedian = roleRuns.median();
					double ownerRate = ownerMedian.rate();
					double roleRate = roleMedian.rate();
					this.context.results().add(BenchRow.throughput("granted-role", system, CONSUMERS,
							String.valueOf(batch), ownerMedian.messages(), ownerRate).with("runs", ownerRuns.rates()));
					this.context.results().add(BenchRow.throughput("granted-role", system + "-granted", CONSUMERS,
							String.valueOf(batch), roleMedian.messages(), roleRate).with("runs", roleRuns.rates()));
					this.context.results().ratio("scenario=granted-role system=" + system + " consumers=" + CONSUMERS
							+ " batch=" + batch + " granted/owner=" + Results.ratio(roleRate / ownerRate));
				}
			}
		}
		finally {
			database.execute("TRUNCATE pgqueue.message");
		}
	}

	/** One of {@code drains}, by consumers logged in through {@code pool} as {@code who}. */
	private Drain.Outcome drain(Drain.Timed drains, DataSource pool, ConsumptionMode mode, int batch, String who) {
		return drains.drain("granted-role " + mode.name().toLowerCase(java.util.Locale.ROOT) + " " + who + " "
				+ CONSUMERS + "x" + batch, this::load, (handled) -> Drain.countingListener(QueueContext.of(pool), pool,
						"granted-bench", QUEUE, CONSUMERS, batch, mode, null, handled));
	}

	/** Empties the table and loads {@code messages} into the queue. */
	private void load(long messages) {
		BenchDatabase database = this.context.database();
		database.execute("TRUNCATE pgqueue.message");
		database.admin().update("INSERT INTO pgqueue.message (queue, payload) "
				+ "SELECT ?, jsonb_build_object('n', g) FROM generate_series(1, ?) g", QUEUE, messages);
		database.vacuumAnalyze("pgqueue.message");
	}

}
