// pg-boss as its documentation makes it fastest: one queue with LISTEN/NOTIFY on, insert() for
// many jobs at once, workers fetching batchSize jobs a time, localConcurrency workers in the
// process, and burstWhenBatchFull so that a worker whose batch came back full fetches again at once.

import { PgBoss } from 'pg-boss';

import { UNTRACKED } from './scenarios.mjs';

const QUEUE = 'bench';

const PRELOAD_CHUNK = 1000;

export async function open(url, schema, poolSize, database) {
	const boss = new PgBoss({ connectionString: url, schema, max: poolSize, useListenNotify: true,
		application_name: 'bench-pg-boss' });
	boss.on('error', (error) => console.error('pg-boss error:', error));
	await boss.start();
	if (!(await boss.getQueue(QUEUE))) {
		await boss.createQueue(QUEUE, { notify: true });
	}
	const jobs = (first, count) => Array.from({ length: count }, (_, i) => ({ data: { n: first + i } }));
	return {
		send: (n) => boss.send(QUEUE, { n }),
		sendBatch: (first, count) => boss.insert(QUEUE, jobs(first, count)),
		sendDelayed: (n, delayMs) => boss.send(QUEUE, { n }, { startAfter: new Date(Date.now() + delayMs) }),
		async preload(count) {
			for (let done = 0; done < count; done += PRELOAD_CHUNK) {
				const size = Math.min(PRELOAD_CHUNK, count - done);
				await boss.insert(QUEUE, Array.from({ length: size }, () => ({ data: { n: UNTRACKED } })));
			}
		},
		clear: () => boss.deleteAllJobs(QUEUE),
		vacuumAnalyze: () => database.vacuumAnalyze(schema),
		async startConsumers(consumers, batchSize, pollMs, handler) {
			const seconds = Math.max(0.5, pollMs / 1000);
			const id = await boss.work(QUEUE, { batchSize, localConcurrency: consumers, burstWhenBatchFull: true,
				pollingIntervalSeconds: seconds, notifyPollingIntervalSeconds: seconds }, async (batch) => {
				for (const job of batch) {
					handler(job.data.n);
				}
			});
			return { stop: () => boss.offWork(QUEUE, { id, wait: true }) };
		},
		close: () => boss.stop({ graceful: true, wait: true }),
	};
}
