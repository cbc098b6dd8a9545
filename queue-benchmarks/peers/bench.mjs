// Runs one scenario of pgqueue's benchmark against one peer, on the database DATABASE_URL names:
//   node bench.mjs <pg-boss|graphile-worker> <send|drain|steady|delayed> schema=NAME key=value ...
// Prints one RESULT line with the figures; anything else it prints is a remark. The delayed
// scenario reads its delays from standard input. Exits non-zero when the scenario failed.

import pg from 'pg';

import * as scenarios from './scenarios.mjs';

const PEERS = {
	'pg-boss': () => import('./pg-boss.mjs'),
	'graphile-worker': () => import('./graphile-worker.mjs'),
};

const SCENARIOS = {
	send: scenarios.send,
	drain: scenarios.drain,
	steady: scenarios.steady,
	delayed: scenarios.delayed,
};

/** The key=value arguments, each required: a missing one is an error, never a silent default. */
function parse(argv) {
	const values = new Map(argv.map((arg) => {
		const eq = arg.indexOf('=');
		if (eq < 1) {
			throw new Error(`Expected key=value, got '${arg}'`);
		}
		return [arg.slice(0, eq), arg.slice(eq + 1)];
	}));
	const get = (key) => {
		if (!values.has(key)) {
			throw new Error(`Missing argument ${key}=`);
		}
		return values.get(key);
	};
	return {
		string: get,
		int: (key) => Number.parseInt(get(key), 10),
		number: (key) => Number.parseFloat(get(key)),
	};
}

/** The benchmark's own statements: vacuum and statistics, on a connection of their own. */
async function connect(url) {
	const client = new pg.Client({ connectionString: url, application_name: 'bench-admin' });
	await client.connect();
	return {
		async vacuumAnalyze(schema) {
			const tables = await client.query(
				"SELECT format('%I.%I', schemaname, tablename) AS name FROM pg_tables WHERE schemaname = $1", [schema]);
			for (const table of tables.rows) {
				await client.query(`VACUUM ANALYZE ${table.name}`);
			}
		},
		async committedTransactions() {
			await client.query('SELECT pg_stat_clear_snapshot()');
			const rows = await client.query(
				'SELECT xact_commit FROM pg_stat_database WHERE datname = current_database()');
			return Number(rows.rows[0].xact_commit);
		},
		close: () => client.end(),
	};
}

async function main() {
	const [name, scenario, ...rest] = process.argv.slice(2);
	if (!PEERS[name] || !SCENARIOS[scenario]) {
		throw new Error(`Usage: bench.mjs <${Object.keys(PEERS).join('|')}> <${Object.keys(SCENARIOS).join('|')}> key=value ...`);
	}
	const url = process.env.DATABASE_URL;
	if (!url) {
		throw new Error('DATABASE_URL is not set');
	}
	const args = parse(rest);
	const database = await connect(url);
	const peer = await (await PEERS[name]()).open(url, args.string('schema'), args.int('pool-size'), database);
	try {
		await SCENARIOS[scenario](peer, args, database);
	}
	finally {
		await peer.close();
		await database.close();
	}
}

main().then(() => process.exit(0), (error) => {
	console.error(error);
	process.exit(1);
});
