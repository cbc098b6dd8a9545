// The benchmark's scenarios, run against one peer through the adapter its module exports. The
// Java harness chooses every size (messages, durations, rates, batch sizes, consumers) and passes
// it on the command line; this side only times and counts, and prints one RESULT line per figure.

import { readFileSync } from 'node:fs';
import { performance } from 'node:perf_hooks';
import { setTimeout as sleep } from 'node:timers/promises';

import { Latencies } from './latencies.mjs';

/** Marks the messages loaded in bulk, as the Java harness's Payloads.UNTRACKED. */
export const UNTRACKED = -1;

const now = () => performance.now();

/** One RESULT line: the figures of one BENCH row, as key=value pairs; null prints as '-'. */
function result(figures) {
	const fields = Object.entries(figures).map(([key, value]) => `${key}=${format(value)}`);
	console.log(`RESULT ${fields.join(' ')}`);
}

function format(value) {
	if (value === null || value === undefined) {
		return '-';
	}
	return (typeof value === 'number' && !Number.isInteger(value)) ? value.toFixed(3) : String(value);
}

/**
 * Runs `threads` producer loops for durationMs, together at most `rate` messages a second (0: flat
 * out), each awaiting its own sends, numbering messages from one counter; returns how many they sent.
 */
async function produce(threads, durationMs, rate, counter, perSend, send) {
	const intervalMs = (rate > 0) ? 1000 * threads * perSend / rate : 0;
	const deadline = now() + durationMs;
	const loops = [];
	for (let t = 0; t < threads; t++) {
		loops.push((async () => {
			let sent = 0;
			let next = now();
			while (now() < deadline) {
				if (intervalMs > 0) {
					const wait = next - now();
					if (wait >= 1) {
						await sleep(wait);
					}
					next += intervalMs;
				}
				const first = counter.next;
				counter.next += perSend;
				await send(first, perSend);
				sent += perSend;
			}
			return sent;
		})());
	}
	return (await Promise.all(loops)).reduce((a, b) => a + b, 0);
}

async function until(condition, timeoutMs, stepMs = 5) {
	const deadline = now() + timeoutMs;
	while (!condition() && now() < deadline) {
		await sleep(stepMs);
	}
}

/** send / send-batch: `threads` producers of `per-send` messages a call; warm-up, then timed. */
export async function send(peer, args) {
	const threads = args.int('threads');
	const perSend = args.int('per-send');
	const call = (perSend === 1) ? (first) => peer.send(first) : (first, count) => peer.sendBatch(first, count);
	await peer.clear();
	const counter = { next: 0 };
	await produce(threads, args.int('warm-up-ms'), 0, counter, perSend, call);
	const started = now();
	const sent = await produce(threads, args.int('duration-ms'), 0, counter, perSend, call);
	const seconds = (now() - started) / 1000;
	await peer.clear();
	result({ messages: sent, seconds });
}

/**
 * drain, as the Java harness's Drain and WarmUp do it: the workers (`consumers` of them, fetching
 * `batch` at a time) warm up on a backlog of their own in half-second slices until two slices in a
 * row run within 15 % of each other (at least `warm-up-min-ms`, at most `warm-up-max-ms`; when they
 * take most of it too soon, again on one sized by the rate they reached, up to twice). Then `runs`
 * timed drains of `drain-ms` each, every one from a fresh backlog (vacuumed and analyzed) sized to
 * outlast it at the warm-up's rate; one that ran out before `min-drain-ms` is run again from a
 * larger backlog, up to twice. The clock starts before the workers do, as in the Java drains.
 * Prints the median drain's figures, with the range of the rates.
 */
export async function drain(peer, args) {
	const consumers = args.int('consumers');
	const batch = args.int('batch');
	const pollMs = args.int('poll-ms');
	const drainMs = args.int('drain-ms');
	const minDrainMs = args.int('min-drain-ms');
	const warmUpMinMs = args.int('warm-up-min-ms');
	const warmUpMaxMs = args.int('warm-up-max-ms');
	const margin = args.number('backlog-margin');
	const clamp = (messages) => Math.max(args.int('min-messages'), Math.min(args.int('max-messages'),
		Math.ceil(messages)));
	const prepare = async (size) => {
		await peer.clear();
		await peer.preload(size);
		await peer.vacuumAnalyze();
		return size;
	};

	let rate = args.number('first-guess');
	let warmUp = null;
	for (let attempt = 0; attempt < 3 && (warmUp === null || warmUp.seconds * 1000 < warmUpMinMs); attempt++) {
		if (warmUp !== null) {
			rate = Math.max(rate * 4, warmUp.rate * 2);
		}
		const backlog = await prepare(clamp(rate * warmUpMaxMs / 1000));
		let handled = 0;
		const workers = await peer.startConsumers(consumers, batch, pollMs, () => handled++);
		warmUp = await untilSteady(warmUpMinMs, warmUpMaxMs, () => handled, () => handled >= 0.8 * backlog);
		await workers.stop();
		if (handled === 0) {
			throw new Error(`The workers (${consumers} x batch ${batch}) handled no message while warming up`);
		}
	}

	const outcomes = [];
	let size = clamp(warmUp.rate * drainMs / 1000 * margin);
	for (let i = 0; i < args.int('runs'); i++) {
		let outcome;
		for (let attempt = 0; ; attempt++) {
			outcome = await timedDrain(peer, consumers, batch, pollMs, await prepare(size), drainMs);
			if (outcome.seconds * 1000 >= minDrainMs || attempt === 2) {
				break;
			}
			size = clamp(outcome.messages / outcome.seconds * drainMs / 1000 * margin * 1.2);
		}
		outcomes.push(outcome);
	}
	await peer.clear();
	const sorted = outcomes.map((o) => ({ ...o, rate: o.messages / o.seconds })).sort((a, b) => a.rate - b.rate);
	const n = sorted.length;
	const median = sorted[(n - 1) >> 1];
	const medianRate = (n % 2 === 1) ? sorted[n >> 1].rate : (sorted[n / 2 - 1].rate + sorted[n / 2].rate) / 2;
	result({ messages: median.messages, seconds: median.seconds, rate: medianRate, min: sorted[0].rate,
		max: sorted[n - 1].rate, runs: n, backlog: size, warm_up_s: warmUp.seconds });
}

/** The warm-up's slices, as WarmUp.untilSteady: returns the last slice's rate and the time taken. */
async function untilSteady(minMs, maxMs, handled, exhausted) {
	const started = now();
	let previous = -1;
	let seen = handled();
	for (;;) {
		const sliceStarted = now();
		await sleep(500);
		const count = handled();
		const at = now();
		const rate = (count - seen) / ((at - sliceStarted) / 1000);
		seen = count;
		const steady = previous > 0 && Math.abs(rate - previous) <= 0.15 * Math.max(rate, previous);
		previous = rate;
		const elapsed = at - started;
		if (elapsed >= maxMs || (elapsed >= minMs && steady) || exhausted()) {
			return { rate, seconds: elapsed / 1000 };
		}
	}
}

/** Workers on a backlog of `backlog` until all are handled or `capMs` has passed. */
async function timedDrain(peer, consumers, batch, pollMs, backlog, capMs) {
	let handled = 0;
	const started = now();
	const deadline = started + capMs;
	const workers = await peer.startConsumers(consumers, batch, pollMs, () => handled++);
	let count;
	let finished;
	do {
		await sleep(5);
		count = handled;
		finished = now();
	}
	while (count < backlog && finished < deadline);
	await workers.stop();
	if (count === 0) {
		throw new Error(`The workers (${consumers} x batch ${batch}) handled no message in ${capMs} ms`);
	}
	return { messages: count, seconds: (finished - started) / 1000 };
}

/**
 * steady: `producers` loops of single sends paced together to `rate` a second for `duration-ms`,
 * while `consumers` workers fetching `batch` at a time handle them; latency from each send's return
 * to its handler's start, over the messages handled by `grace-ms` after the producers stopped.
 */
export async function steady(peer, args) {
	const producers = args.int('producers');
	const rate = args.number('rate');
	await peer.clear();
	await peer.vacuumAnalyze();
	const latencies = new Latencies(args.int('capacity'));
	let handled = 0;
	const workers = await peer.startConsumers(args.int('consumers'), args.int('batch'), args.int('poll-ms'), (n) => {
		latencies.startedAt(n, now());
		handled++;
	});
	const started = now();
	const sent = await produce(producers, args.int('duration-ms'), rate, { next: 0 }, 1, async (first) => {
		await peer.send(first);
		latencies.committedAt(first, now());
	});
	const out = handled;
	const seconds = (now() - started) / 1000;
	await until(() => handled >= sent, args.int('grace-ms'), 10);
	await workers.stop();
	await peer.clear();
	const summary = latencies.summarize();
	const tail = latencies.tail(started, args.int('warm-up-ms'), args.int('slow-ms'), 5);
	result({ messages: out, seconds, p50_ms: summary.p50, p99_ms: summary.p99, in_messages: sent,
		unhandled: Math.max(0, sent - summary.count), p99_after_warm_up_ms: tail.p99AfterWarmUp,
		slow: tail.slow, slowest_seconds: tail.slowestSeconds });
}

/**
 * delayed: the delays (ms, one a line on standard input, in send order) sent one by one into an
 * idle queue watched by one worker polling every `poll-ms`; each message's lateness is its
 * handler's start minus the instant just before its send began plus its delay. Also counts the
 * transactions the database committed over the run, read as the Java harness reads them.
 */
export async function delayed(peer, args, database) {
	const delays = readFileSync(0, 'utf8').split('\n').filter((line) => line.trim() !== '').map(Number);
	const messages = delays.length;
	await peer.clear();
	await peer.vacuumAnalyze();
	const lateness = new Latencies(messages);
	const afterSends = new Latencies(messages);
	let handled = 0;
	const worker = await peer.startConsumers(1, args.int('batch'), args.int('poll-ms'), (n) => {
		const at = now();
		lateness.startedAt(n, at);
		afterSends.startedAt(n, at);
		handled++;
	});
	// Let the worker find the queue empty and go to sleep for its poll interval.
	await sleep(1500);
	const before = await database.committedTransactions();
	const due = new Float64Array(messages);
	let lastDue = 0;
	const sendStart = now();
	for (let i = 0; i < messages; i++) {
		const start = now();
		await peer.sendDelayed(i, delays[i]);
		due[i] = start + delays[i];
		lateness.committedAt(i, due[i]);
		lastDue = Math.max(lastDue, due[i]);
	}
	const sendEnd = now();
	let dueAfterSends = 0;
	for (let i = 0; i < messages; i++) {
		if (due[i] > sendEnd) {
			afterSends.committedAt(i, due[i]);
			dueAfterSends++;
		}
	}
	await until(() => handled >= messages, lastDue + args.int('grace-ms') - now(), 20);
	await sleep(args.int('stats-flush-ms'));
	const transactions = await database.committedTransactions() - before - 2;
	await worker.stop();
	const unhandled = messages - handled;
	const end = now();
	for (let i = 0; i < messages; i++) {
		// Only those no handler started on: they count as started now, a lower bound.
		lateness.startedAt(i, end);
		afterSends.startedAt(i, end);
	}
	await peer.clear();
	const summary = lateness.summarize();
	const quiet = afterSends.summarize();
	result({ messages: summary.count, p50_ms: summary.p50, p99_ms: summary.p99, max_ms: summary.max,
		send_s: (sendEnd - sendStart) / 1000, due_after_sends: dueAfterSends, after_sends_p50_ms: quiet.p50,
		after_sends_p99_ms: quiet.p99, transactions, early: summary.early, unhandled });
}
