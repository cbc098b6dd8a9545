package io.github.pgqueue.listener;

import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.sql.Types;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;

import io.github.pgqueue.ContextInternals;
import io.github.pgqueue.QueueTemplate;
import io.github.pgqueue.internal.QueueSql;
import io.github.pgqueue.SendOptions;
import io.github.pgqueue.testing.EmbeddedPostgres;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;

import org.springframework.jdbc.core.JdbcTemplate;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * A grouped insert (by the insert trigger, or a grouped sendBatch) looks up its group's newest
 * message. Whatever the table's statistics say, that must be one descent of the group index:
 * planned as a scan of the queue in the claim index or of the primary key backwards, every grouped
 * insert read its queue, and a bulk grouped insert was quadratic. Each state is made on a schema of its own; the counts
 * are the inserting backend's own (pg_stat_get_xact_*), read in the inserting transaction.
 */
class GroupedInsertPlanIntegrationTests {

	private static final int FILL = 20_000;

	private static final int INSERTS = 3_000;

	private final EmbeddedPostgres postgres = EmbeddedPostgres.get();

	private final JdbcTemplate jdbc = new JdbcTemplate(this.postgres.dataSource());

	/** How the message table's statistics were left before the grouped inserts. */
	enum Statistics {

		/** Created and never analyzed. */
		FRESH,

		/**
		 * Analyzed while full, then drained and analyzed empty, the dead rows not vacuumed yet (as
		 * autovacuum's analyze leaves a drained queue): pages, but no rows, so every plan looks free.
		 */
		DRAINED_AND_ANALYZED,

		/** As above, then vacuumed: no pages either. */
		DRAINED_AND_VACUUMED

	}

	@ParameterizedTest
	@EnumSource(Statistics.class)
	void aGroupedInsertLooksUpItsGroupInOneDescentOfTheGroupIndex(Statistics statistics) throws SQLException {
		String schema = "pgqueue_grouped_" + statistics.name().toLowerCase(Locale.ROOT);
		this.jdbc.execute("DROP SCHEMA IF EXISTS " + schema + " CASCADE");
		this.postgres.migrate(schema, null);
		if (statistics != Statistics.FRESH) {
			// The fill spreads over ten groups, as a few busy groups would leave a queue.
			this.jdbc.update("INSERT INTO " + schema + ".message (queue, payload, group_key) "
					+ "SELECT 'plans', '{}', 'g0' || (n % 10) FROM generate_series(1, ?) n", FILL);
			this.jdbc.execute("ANALYZE " + schema + ".message");
			this.jdbc.execute("DELETE FROM " + schema + ".message");
			this.jdbc.execute(((statistics == Statistics.DRAINED_AND_VACUUMED) ? "VACUUM " : "") + "ANALYZE " + schema
					+ ".message");
		}
		try (Connection connection = this.postgres.dataSource().getConnection()) {
			connection.setAutoCommit(false);
			// READ COMMITTED looks up the group's newest message, the stricter levels its oldest.
			int[] isolations = { Connection.TRANSACTION_READ_COMMITTED, Connection.TRANSACTION_REPEATABLE_READ };
			for (int i = 0; i < isolations.length; i++) {
				connection.setTransactionIsolation(isolations[i]);
				assertOneDescentPerInsert(connection, schema, "g" + (i + 1));
			}
		}
		finally {
			this.jdbc.execute("DROP SCHEMA IF EXISTS " + schema + " CASCADE");
		}
	}

	/**
	 * QueueTemplate's sendBatch to a group orders its messages once per batch: one descent of the
	 * group index, each message recording the one before it, the first the group's newest.
	 */
	@Test
	void aGroupedBatchLooksItsGroupUpOnceAndChainsItsMessages() throws SQLException {
		QueueTemplate template = QueueTemplate.builder(this.postgres.dataSource()).build();
		this.jdbc.update("DELETE FROM pgqueue.message WHERE queue = 'batch-chain'");
		long first = template.send("batch-chain", 0, SendOptions.builder().group("g").build());
		List<Long> batch = new ArrayList<>();
		long descents;
		try (Connection connection = this.postgres.dataSource().getConnection()) {
			connection.setAutoCommit(false);
			Map<String, long[]> before = reads(connection, "pgqueue");
			try (PreparedStatement send = ContextInternals.sql(template.context()).sendGroupedBatch.prepare(connection, new QueueSql.SendBatch(
					"batch-chain", "{}", 0, null, 0, null, "g", new String[] { "1", "2", "3" }))) {
				try (ResultSet rs = send.executeQuery()) {
					while (rs.next()) {
						batch.add(rs.getLong(1));
					}
				}
			}
			descents = reads(connection, "pgqueue").get("message_group_idx")[0] - before.get("message_group_idx")[0];
			connection.commit();
		}
		long last = template.send("batch-chain", 4, SendOptions.builder().group("g").build());
		assertThat(descents).as("descents of the group index for a batch of three").isEqualTo(1);
		assertThat(batch).hasSize(3).isSorted();
		assertThat(this.jdbc.queryForList(
				"SELECT previous_id FROM pgqueue.message WHERE queue = 'batch-chain' ORDER BY id", Long.class))
			.containsExactly(null, first, batch.get(0), batch.get(1), batch.get(2));
		assertThat(last).isGreaterThan(batch.get(2));
		this.jdbc.update("DELETE FROM pgqueue.message WHERE queue = 'batch-chain'");
	}

	/**
	 * One bulk grouped insert on {@code connection}, into groups named {@code prefix} and a digit,
	 * rolled back, and what it read.
	 */
	private static void assertOneDescentPerInsert(Connection connection, String schema, String prefix)
			throws SQLException {
		Map<String, long[]> before = reads(connection, schema);
		try (Statement statement = connection.createStatement()) {
			// A bulk grouped insert as the drain benchmark's fill makes one, into groups no earlier
			// insert used (no dead index entries of theirs to step over), one row at a time.
			statement.executeUpdate("INSERT INTO " + schema + ".message (queue, payload, group_key) "
					+ "SELECT 'plans', '{}', '" + prefix + "' || (n % 10) FROM generate_series(1, " + INSERTS + ") n");
		}
		Map<String, long[]> after = reads(connection, schema);
		connection.rollback();
		Map<String, String> reads = new LinkedHashMap<>();
		after.forEach((relation, counts) -> reads.put(relation, "scans=" + (counts[0] - before.get(relation)[0])
				+ " read=" + (counts[1] - before.get(relation)[1])));
		assertThat(reads).as("scans of the message table and its indexes, and entries read, for %d grouped inserts "
				+ "at isolation %d", INSERTS, connection.getTransactionIsolation())
			.containsEntry("message", "scans=0 read=0")
			.containsEntry("message_pkey", "scans=0 read=0")
			.containsEntry("message_claim_idx", "scans=0 read=0")
			.containsEntry("message_headers_idx", "scans=0 read=0")
			.containsEntry("message_deduplication_idx", "scans=0 read=0");
		assertThat(after.get("message_group_idx")[0] - before.get("message_group_idx")[0])
			.as("descents of the group index").isEqualTo(INSERTS);
		assertThat(after.get("message_group_idx")[1] - before.get("message_group_idx")[1])
			.as("group index entries read: one of the group's messages at most").isLessThanOrEqualTo(INSERTS);
	}

	/**
	 * Scans (sequential for the table) and entries or rows read, per relation of the message table,
	 * as this backend has counted them and not yet reported.
	 */
	private static Map<String, long[]> reads(Connection connection, String schema) throws SQLException {
		Map<String, long[]> reads = new LinkedHashMap<>();
		try (PreparedStatement ps = connection.prepareStatement("""
				SELECT c.relname, pg_stat_get_xact_numscans(c.oid), pg_stat_get_xact_tuples_returned(c.oid)
				  FROM pg_class c
				 WHERE c.relnamespace = ?::regnamespace AND (c.relname = 'message' OR c.relname LIKE 'message\\_%')
				   AND c.relkind IN ('r', 'i')""")) {
			ps.setString(1, schema);
			try (ResultSet rs = ps.executeQuery()) {
				while (rs.next()) {
					reads.put(rs.getString(1), new long[] { rs.getLong(2), rs.getLong(3) });
				}
			}
		}
		return reads;
	}

}
