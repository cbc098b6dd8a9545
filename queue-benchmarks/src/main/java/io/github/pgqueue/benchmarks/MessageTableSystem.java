package io.github.pgqueue.benchmarks;

import java.time.Duration;
import java.util.List;

/**
 * What pgqueue and the two plain-SQL baselines share: pgqueue's own message table, indexes,
 * trigger and autovacuum settings, and one queue in it, so that they do the same physical work.
 */
abstract class MessageTableSystem implements QueueSystem {

	static final String QUEUE = "bench";

	static final String TABLE = "pgqueue.message";

	final BenchDatabase database;

	MessageTableSystem(BenchDatabase database) {
		this.database = database;
	}

	@Override
	public void preload(int count, Duration delay) {
		this.database.admin().update("""
				INSERT INTO pgqueue.message (queue, payload, visible_at)
				SELECT ?, '{"n": -1}'::jsonb, now() + ? * interval '1 millisecond' FROM generate_series(1, ?)""",
				QUEUE, delay.toMillis(), count);
	}

	@Override
	public long pending() {
		return this.database.queryLong("SELECT count(*) FROM pgqueue.message WHERE queue = ?", QUEUE);
	}

	@Override
	public void clear() {
		this.database.execute("TRUNCATE pgqueue.message");
	}

	@Override
	public String table() {
		return TABLE;
	}

	/**
	 * pgqueue's message table and its consumer sessions' holding table, which every claim reads
	 * whole: a session-mode run before leaves hundreds of its rows dead, which autovacuum would have
	 * removed by the time an application starts.
	 */
	@Override
	public List<String> tables() {
		return List.of(TABLE, "pgqueue.holding");
	}

}
