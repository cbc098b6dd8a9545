// graphile-worker as its performance guide makes it fastest: addJobs for many jobs at once, a
// worker pool of `concurrency` jobs at a time fed by a local queue that fetches (and locks) a batch
// of jobs in one statement, and job completions batched (completeJobBatchDelay 0).

import { Logger, makeWorkerUtils, run } from 'graphile-worker';

import { UNTRACKED } from './scenarios.mjs';

const TASK = 'bench';

const PRELOAD_CHUNK = 1000;

/** Warnings and errors to standard error; the rest (start-up and per-job lines) is left out. */
const logger = new Logger(() => (level, message) => {
	if (level === 'error' || level === 'warning') {
		console.error(`graphile-worker ${level}: ${message}`);
	}
});

export async function open(url, schema, poolSize, database) {
	const utils = await makeWorkerUtils({ connectionString: url, schema, maxPoolSize: poolSize, logger });
	await utils.migrate();
	const jobs = (first, count) => Array.from({ length: count }, (_, i) => ({ identifier: TASK, payload: { n: first + i } }));
	return {
		send: (n) => utils.addJob(TASK, { n }),
		sendBatch: (first, count) => utils.addJobs(jobs(first, count)),
		sendDelayed: (n, delayMs) => utils.addJob(TASK, { n }, { runAt: new Date(Date.now() + delayMs) }),
		async preload(count) {
			for (let done = 0; done < count; done += PRELOAD_CHUNK) {
				const size = Math.min(PRELOAD_CHUNK, count - done);
				await utils.addJobs(Array.from({ length: size }, () => ({ identifier: TASK, payload: { n: UNTRACKED } })));
			}
		},
		// Completing a job deletes it; what is left is the backlog, cleared in one statement.
		clear: () => utils.withPgClient((client) => client.query(`DELETE FROM "${schema}"._private_jobs`)),
		vacuumAnalyze: () => database.vacuumAnalyze(schema),
		async startConsumers(consumers, batchSize, pollMs, handler) {
			const runner = await run({
				connectionString: url,
				schema,
				concurrency: consumers,
				maxPoolSize: Math.max(10, consumers + 2),
				pollInterval: pollMs,
				noHandleSignals: true,
				logger,
				taskList: { [TASK]: async (payload) => handler(payload.n) },
				preset: { worker: { localQueue: { size: batchSize }, completeJobBatchDelay: 0, failJobBatchDelay: 0 } },
			});
			return { stop: () => runner.stop() };
		},
		close: () => utils.release(),
	};
}
