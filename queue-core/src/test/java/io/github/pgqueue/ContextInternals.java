package io.github.pgqueue;

import javax.sql.DataSource;

import io.github.pgqueue.internal.ConsumerSession;
import io.github.pgqueue.internal.QueueSql;

/** What a {@link QueueContext} keeps to this package, for tests in other packages. */
public final class ContextInternals {

	private ContextInternals() {
	}

	/** A consumer session on a connection of its own from the context's data source. */
	public static ConsumerSession openSession(QueueContext context) {
		return context.openSession();
	}

	/** A consumer session on a connection of its own from {@code dataSource}. */
	public static ConsumerSession openSession(QueueContext context, DataSource dataSource) {
		return ConsumerSession.open(dataSource, context.sql(), context.lockNamespace(), context.maxPayloadBytes());
	}

	/** The statements of the context's schema. */
	public static QueueSql sql(QueueContext context) {
		return context.sql();
	}

}
