// Send-to-handler latencies by sequence number, on this process's monotonic clock. The same
// definitions as the Java harness's Latencies: a percentile is the value at rank ceil(f * n), a
// handler that starts before the recorded instant counts as 0 ms late and as early.

export class Latencies {

	constructor(capacity) {
		this.committed = new Float64Array(capacity);
		this.started = new Float64Array(capacity);
	}

	/** The instant a send returned (its transaction committed), or a delayed message fell due. */
	committedAt(sequence, millis) {
		if (sequence >= 0 && sequence < this.committed.length) {
			this.committed[sequence] = millis;
		}
	}

	/** Records the first start of a handler on the message. */
	startedAt(sequence, millis) {
		if (sequence >= 0 && sequence < this.started.length && this.started[sequence] === 0) {
			this.started[sequence] = millis;
		}
	}

	/** p50, p99 and max in ms over every message both recorded and started, and how many were early. */
	summarize(include = () => true) {
		const values = [];
		let early = 0;
		for (let i = 0; i < this.committed.length; i++) {
			const sent = this.committed[i];
			const handled = this.started[i];
			if (sent !== 0 && handled !== 0 && include(i)) {
				values.push(Math.max(0, handled - sent));
				early += (handled < sent) ? 1 : 0;
			}
		}
		values.sort((a, b) => a - b);
		return { count: values.length, p50: percentile(values, 0.5), p99: percentile(values, 0.99),
			max: percentile(values, 1), early };
	}

	/**
	 * The p99 of the messages recorded from warmUpMs after startMs on; how many waited over slowMs;
	 * and the seconds of the run with the most of those, worst first, as second:count.
	 */
	tail(startMs, warmUpMs, slowMs, seconds) {
		const values = [];
		const slowBySecond = new Map();
		for (let i = 0; i < this.committed.length; i++) {
			const sent = this.committed[i];
			const handled = this.started[i];
			if (sent === 0 || handled === 0) {
				continue;
			}
			const latency = Math.max(0, handled - sent);
			if (sent - startMs >= warmUpMs) {
				values.push(latency);
			}
			if (latency > slowMs) {
				const second = Math.floor((sent - startMs) / 1000);
				slowBySecond.set(second, (slowBySecond.get(second) ?? 0) + 1);
			}
		}
		values.sort((a, b) => a - b);
		const worst = [...slowBySecond.entries()]
			.sort((a, b) => (b[1] - a[1]) || (a[0] - b[0]))
			.slice(0, seconds)
			.map(([second, count]) => `${second}:${count}`)
			.join(';');
		let slow = 0;
		slowBySecond.forEach((count) => slow += count);
		return { p99AfterWarmUp: percentile(values, 0.99), slow, slowestSeconds: worst || '-' };
	}

}

function percentile(sorted, fraction) {
	if (sorted.length === 0) {
		return null;
	}
	const index = Math.ceil(fraction * sorted.length) - 1;
	return sorted[Math.max(0, Math.min(sorted.length - 1, index))];
}
