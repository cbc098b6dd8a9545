package io.github.pgqueue.testing;

import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.util.ArrayList;
import java.util.List;

import io.github.pgqueue.ContextInternals;
import io.github.pgqueue.QueueTemplate;

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
		try (PreparedStatement ps = connection.prepareStatement(ContextInternals.sql(template.context()).transactionalClaim(batchSize))) {
			int i = 0;
			for (int n = 0; n < 4; n++) {
				ps.setString(++i, queue);
			}
			ps.setInt(++i, template.context().lockNamespace());
			ps.setString(++i, queue);
			ps.setInt(++i, template.context().maxPayloadBytes());
			ps.setString(++i, queue);
			try (ResultSet rs = ps.executeQuery()) {
				while (rs.next()) {
					boolean windowEnd = rs.getBoolean(2) && rs.getObject(5) != null;
					if (rs.getObject(1) != null && !windowEnd) {
						rows.add(new Object[] { rs.getLong(1), rs.getBoolean(2) });
					}
				}
			}
		}
		return rows;
	}

}
