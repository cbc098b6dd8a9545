package io.github.pgqueue.testing;

import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.util.ArrayList;
import java.util.List;

import io.github.pgqueue.ContextInternals;
import io.github.pgqueue.QueueTemplate;
import io.github.pgqueue.internal.QueueSql;

/**
 * Runs pgqueue's transactional claim statement by hand, for tests that interleave it with other
 * sessions at a chosen point.
 */
public final class TransactionalClaims {

	private TransactionalClaims() {
	}

	/**
	 * The rows a transactional claim of up to {@code batchSize} messages from the head of
	 * {@code queue} returns on {@code connection}, in its open transaction, as (id, suspect): the
	 * messages it took (false) and the suspects it found (true). The row that says when the next
	 * delayed message is due and the one that marks where a walked-out window ended are left out.
	 */
	public static List<Object[]> claim(QueueTemplate template, Connection connection, String queue, int batchSize)
			throws SQLException {
		List<Object[]> rows = new ArrayList<>();
		QueueSql sql = ContextInternals.sql(template.context());
		try (PreparedStatement ps = sql.transactionalClaimWalk.variant(batchSize, false).prepare(connection,
				new QueueSql.TransactionalClaim(queue, null, template.context().lockNamespace(), template.context().maxPayloadBytes(), null,
						null, null));
				ResultSet rs = ps.executeQuery()) {
			while (rs.next()) {
				String kind = rs.getString("kind");
				if (kind.equals("claimed") || kind.equals("suspect")) {
					rows.add(new Object[] { rs.getLong("id"), kind.equals("suspect") });
				}
			}
		}
		return rows;
	}

}
