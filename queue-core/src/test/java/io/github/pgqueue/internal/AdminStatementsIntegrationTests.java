package io.github.pgqueue.internal;

import java.math.BigDecimal;
import java.sql.Connection;
import java.sql.SQLException;
import java.time.Duration;
import java.util.List;
import java.util.Map;

import io.github.pgqueue.ContextInternals;
import io.github.pgqueue.QueueNames;
import io.github.pgqueue.QueueTemplate;
import io.github.pgqueue.SendOptions;
import io.github.pgqueue.testing.Db;
import io.github.pgqueue.testing.EmbeddedPostgres;
import io.github.pgqueue.testing.PostgresExtension;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;

import org.springframework.jdbc.core.JdbcTemplate;

import static io.github.pgqueue.internal.StatementConnections.execute;
import static io.github.pgqueue.internal.StatementConnections.lockable;
import static io.github.pgqueue.internal.StatementConnections.message;
import static io.github.pgqueue.internal.StatementConnections.notifications;
import static io.github.pgqueue.internal.StatementConnections.pid;
import static io.github.pgqueue.internal.StatementConnections.query;
import static io.github.pgqueue.internal.StatementConnections.rows;
import static io.github.pgqueue.internal.StatementConnections.update;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatExceptionOfType;
import static org.assertj.core.api.Assertions.entry;
import static org.assertj.core.api.Assertions.tuple;
import static org.assertj.core.api.Assertions.within;

/**
 * Each statement of {@code admin.sql}, run by its name on PostgreSQL as {@code QueueAdmin},
 * {@code QueueTemplate} and {@link RecordedRemovals} run it, on a plain connection, bound from its
 * parameter record: the columns it returns, by name (or the rows it changed, for the statements
 * run as updates), and what it changed: messages removed or moved, queue and exchange definitions,
 * access rows, removal records, locks and notifications. A test method is named after its
 * statement (checked by {@link StatementResourcesTests}).
 * <p>
 * The access tables are not emptied by {@link PostgresExtension}: the tests of access empty
 * queue_access before and after each test, and delete the removal records they write.
 */
@ExtendWith(PostgresExtension.class)
class AdminStatementsIntegrationTests {

	private static final Duration HOUR = Duration.ofHours(1);

	private final JdbcTemplate jdbc = Db.jdbc();

	private final QueueTemplate template = QueueTemplate.builder(EmbeddedPostgres.get().dataSource()).build();

	private final QueueSql sql = ContextInternals.sql(this.template.context());

	private final int namespace = this.template.context().lockNamespace();

	private final StatementConnections connections = new StatementConnections();

	@BeforeEach
	@AfterEach
	void emptyQueueAccess() {
		this.jdbc.update("DELETE FROM pgqueue.queue_access");
	}

	@AfterEach
	void closeConnections() throws SQLException {
		this.connections.close();
	}

	@Test
	void cancel() throws SQLException {
		long free = send("cancel", 1);
		long held = send("cancel", 2);
		long groupFirst = send("cancel", 3, SendOptions.builder().group("g"));
		long groupSecond = send("cancel", 4, SendOptions.builder().group("g"));
		long groupThird = send("cancel", 5, SendOptions.builder().group("g"));
		hold(held);
		Connection connection = this.connections.open();

		assertThat(rows(connection, this.sql.cancel, new QueueSql.Cancel(free, "other", this.namespace)))
			.as("of another queue").containsExactly(Map.of("deleted", false));
		assertThat(rows(connection, this.sql.cancel, new QueueSql.Cancel(held, "cancel", this.namespace)))
			.as("held by a consumer").containsExactly(Map.of("deleted", false));
		assertThat(message(held)).isNotNull();

		connection.setAutoCommit(false);
		assertThat(rows(connection, this.sql.cancel, new QueueSql.Cancel(free, "cancel", this.namespace)))
			.containsExactly(Map.of("deleted", true));
		assertThat(lockable(this.namespace, free)).as("consumers kept off until the transaction ends").isFalse();
		connection.commit();
		connection.setAutoCommit(true);
		assertThat(message(free)).isNull();
		assertThat(lockable(this.namespace, free)).isTrue();
		assertThat(rows(connection, this.sql.cancel, new QueueSql.Cancel(free, "cancel", this.namespace)))
			.as("gone").containsExactly(Map.of("deleted", false));

		assertThat(message(groupThird)).contains(entry("previous_id", groupSecond));
		assertThat(rows(connection, this.sql.cancel, new QueueSql.Cancel(groupSecond, "cancel", this.namespace)))
			.containsExactly(Map.of("deleted", true));
		assertThat(message(groupThird)).as("the group mended: its next message looks back to the one before")
			.contains(entry("previous_id", groupFirst));
	}

	@Test
	void exists() throws SQLException {
		long id = send("exists", 1);
		Connection connection = this.connections.open();

		assertThat(rows(connection, this.sql.exists, new QueueSql.Exists(id, "exists")))
			.containsExactly(Map.of("exists", true));
		assertThat(rows(connection, this.sql.exists, new QueueSql.Exists(id, "other")))
			.containsExactly(Map.of("exists", false));
		assertThat(rows(connection, this.sql.exists, new QueueSql.Exists(id + 1, "exists")))
			.containsExactly(Map.of("exists", false));
	}

	@Test
	void stats() throws SQLException {
		long held = send("st", 1);
		long old = send("st", 2);
		send("st", 3);
		send("st", 4, SendOptions.builder().delay(HOUR));
		send("st.dlq", 5);
		send("st.dlq", 6);
		send("custom", 7);
		this.jdbc.update("UPDATE pgqueue.message SET created_at = now() - interval '100 seconds' WHERE id = ?", held);
		this.jdbc.update("UPDATE pgqueue.message SET created_at = now() - interval '50 seconds' WHERE id = ?", old);
		hold(held);
		Connection connection = this.connections.open();

		Map<String, Object> stats = rows(connection, this.sql.stats, new QueueSql.Stats("st", this.namespace)).get(0);

		assertThat(stats).contains(entry("ready", 2L), entry("delayed", 1L), entry("in_flight", 1L),
				entry("dead_lettered", 2L));
		assertThat(((BigDecimal) stats.get("oldest_age_s")).doubleValue()).as("the oldest ready message not held")
			.isCloseTo(50.0, within(10.0));

		this.jdbc.update("INSERT INTO pgqueue.queue (name, dead_letter_queue) VALUES ('st', 'custom')");
		assertThat(rows(connection, this.sql.stats, new QueueSql.Stats("st", this.namespace)).get(0))
			.as("the configured dead-letter queue").contains(entry("dead_lettered", 1L));
		assertThat(rows(connection, this.sql.stats, new QueueSql.Stats("nothing", this.namespace)).get(0))
			.containsExactly(entry("ready", 0L), entry("delayed", 0L), entry("in_flight", 0L), entry("dead_lettered", 0L),
					entry("oldest_age_s", null));
	}

	@Test
	void upsertQueue() throws SQLException {
		Connection connection = this.connections.open();

		assertThat(update(connection, this.sql.upsertQueue, new QueueSql.UpsertQueue("up", 3, 100, 1.5, 5000,
				"up-dead", null, null, 100, 1000, "tenant", 2, 5, 60000))).isEqualTo(1);
		assertThat(queue("up")).containsExactly(entry("name", "up"), entry("max_attempts", 3),
				entry("backoff_initial_ms", 100L), entry("backoff_multiplier", 1.5), entry("backoff_max_ms", 5000L),
				entry("dead_letter_queue", "up-dead"), entry("paused", false), entry("rate_limit_permits", 100),
				entry("rate_limit_period_ms", 1000), entry("concurrency_key", "tenant"),
				entry("max_in_flight_per_key", 2), entry("recently_updated", true));

		this.jdbc.update("UPDATE pgqueue.queue SET paused = true, updated_at = now() - interval '1 hour'");
		assertThat(update(connection, this.sql.upsertQueue, new QueueSql.UpsertQueue("up", 7, 200, 2.5, 9000, null, 60000L,
				3600000L, null, null, null, null, null, null))).isEqualTo(1);
		assertThat(queue("up")).as("the policy replaced (the rate limit and the concurrency key removed), the pause kept")
			.containsExactly(entry("name", "up"), entry("max_attempts", 7), entry("backoff_initial_ms", 200L),
					entry("backoff_multiplier", 2.5), entry("backoff_max_ms", 9000L), entry("dead_letter_queue", null),
					entry("paused", true), entry("rate_limit_permits", null), entry("rate_limit_period_ms", null),
					entry("concurrency_key", null), entry("max_in_flight_per_key", null), entry("recently_updated", true));
		assertThat(update(connection, this.sql.upsertQueue, new QueueSql.UpsertQueue("up", 7, 200, 2.5, 9000, null, 60000L,
				3600000L, null, null, "region", null, null, null))).isEqualTo(1);
		assertThat(queue("up")).as("a key without a limit").contains(entry("concurrency_key", "region"),
				entry("max_in_flight_per_key", null));
		assertThat(this.jdbc.queryForList("SELECT deduplication_window_ms, retention_ms FROM pgqueue.queue WHERE name = 'up'"))
			.containsExactly(Map.of("deduplication_window_ms", 60000L, "retention_ms", 3600000L));
		assertThat(update(connection, this.sql.upsertQueue, new QueueSql.UpsertQueue("up", 7, 200, 2.5, 9000, null, 60000L,
				3600000L, null, null, "region", null, 5, 60000))).isEqualTo(1);
		assertThat(this.jdbc.queryForList("SELECT rate_limit_per_key_permits, rate_limit_per_key_period_ms "
				+ "FROM pgqueue.queue WHERE name = 'up'")).as("a rate limit per key")
			.containsExactly(Map.of("rate_limit_per_key_permits", 5, "rate_limit_per_key_period_ms", 60000));
	}

	@Test
	void redrive() throws SQLException {
		long parked = deadLetter("r.dlq", "r", "{\"x\": \"1\", \"pgqueue-group\": \"g\"}", true);
		long waiting = deadLetter("r.dlq", "r", "{}", false);
		long held = deadLetter("r.dlq", "r", "{}", false);
		long otherOrigin = deadLetter("r.dlq", "other", "{}", false);
		hold(held);
		Connection connection = this.connections.open();
		Connection listener = this.connections.listen(this.sql.channel());

		assertThat(rows(connection, this.sql.redrive, redrive(10))).containsExactly(Map.of("moved", 2L));

		assertThat(message(parked)).as("parked ones included, outside any group, the group kept in a header")
			.contains(entry("queue", "r"), entry("attempts", 0), entry("visible", true), entry("claim_open", false),
					entry("group_key", null), entry("previous_id", null), entry("last_error", "failed"),
					entry("headers", "{\"x\": \"1\", \"pgqueue-group\": \"g\"}"));
		assertThat(message(waiting)).contains(entry("queue", "r"), entry("headers", "{}"));
		assertThat(message(held)).as("held by a consumer").contains(entry("queue", "r.dlq"));
		assertThat(message(otherOrigin)).as("from another queue").contains(entry("queue", "r.dlq"));
		assertThat(notifications(listener, this.sql.channel())).containsExactly("r");

		long first = deadLetter("r.dlq", "r", "{}", false);
		long second = deadLetter("r.dlq", "r", "{}", false);
		assertThat(rows(connection, this.sql.redrive, redrive(1))).as("up to max, in id order")
			.containsExactly(Map.of("moved", 1L));
		assertThat(message(first)).contains(entry("queue", "r"));
		assertThat(message(second)).contains(entry("queue", "r.dlq"));
	}

	@Test
	void declareExchange() throws SQLException {
		Connection connection = this.connections.open();

		assertThat(update(connection, this.sql.declareExchange, new QueueSql.DeclareExchange("ex", "topic", "drop",
				new String[] { "q1", "q2" }, new String[] { "a.*", "#" }, new String[] { "r1", "r2" })))
			.as("nothing to delete").isZero();
		assertThat(exchange("ex")).containsExactly("topic", "drop");
		assertThat(bindings("ex")).containsExactly(tuple("q1", "a.*", "r1"), tuple("q2", "#", "r2"));

		this.jdbc.update("UPDATE pgqueue.exchange SET updated_at = now() - interval '1 hour'");
		assertThat(update(connection, this.sql.declareExchange, new QueueSql.DeclareExchange("ex", "direct", "fail",
				new String[] { "q2", "q3" }, new String[] { "#", "k" }, new String[] { "r2b", "r3" })))
			.as("the binding no longer declared is deleted").isEqualTo(1);
		assertThat(exchange("ex")).containsExactly("direct", "fail");
		assertThat(Db.queryForLong("SELECT count(*) FROM pgqueue.exchange WHERE updated_at > now() - interval '1 minute'"))
			.isEqualTo(1);
		assertThat(bindings("ex")).containsExactly(tuple("q2", "#", "r2b"), tuple("q3", "k", "r3"));

		assertThat(update(connection, this.sql.declareExchange, new QueueSql.DeclareExchange("ex", "direct", "fail",
				new String[0], new String[0], new String[0]))).isEqualTo(2);
		assertThat(bindings("ex")).isEmpty();
		assertThat(exchange("ex")).containsExactly("direct", "fail");
	}

	@Test
	void ensureExchange() throws SQLException {
		Connection connection = this.connections.open();

		assertThat(rows(connection, this.sql.ensureExchange, new QueueSql.Exchange("ex")))
			.as("declared now, as a topic exchange").containsExactly(Map.of("type", "topic"));
		assertThat(exchange("ex")).containsExactly("topic", "drop");
		this.jdbc.update("UPDATE pgqueue.exchange SET type = 'fanout', unroutable = 'fail' WHERE name = 'ex'");
		assertThat(rows(connection, this.sql.ensureExchange, new QueueSql.Exchange("ex")))
			.as("one row: the declared exchange's type, left as it is").containsExactly(Map.of("type", "fanout"));
		assertThat(exchange("ex")).containsExactly("fanout", "fail");
	}

	@Test
	void bindQueue() throws SQLException {
		Connection connection = this.connections.open();
		update(connection, this.sql.declareExchange, new QueueSql.DeclareExchange("ex", "topic", "drop",
				new String[] { "q1" }, new String[] { "#" }, new String[] { "r1" }));

		assertThat(update(connection, this.sql.bindQueue, new QueueSql.BindQueue("ex", "q2", "a.*", "r2"))).isEqualTo(1);
		assertThat(update(connection, this.sql.bindQueue, new QueueSql.BindQueue("ex", "q2", "a.*", "r2b")))
			.as("again: the regex is replaced").isEqualTo(1);
		assertThat(bindings("ex")).containsExactly(tuple("q1", "#", "r1"), tuple("q2", "a.*", "r2b"));
	}

	@Test
	void unbindQueue() throws SQLException {
		Connection connection = this.connections.open();
		update(connection, this.sql.declareExchange, new QueueSql.DeclareExchange("ex", "topic", "drop",
				new String[] { "q1", "q2" }, new String[] { "#", "#" }, new String[] { "r1", "r2" }));

		assertThat(update(connection, this.sql.unbindQueue, new QueueSql.UnbindQueue("ex", "q1", "#"))).isEqualTo(1);
		assertThat(update(connection, this.sql.unbindQueue, new QueueSql.UnbindQueue("ex", "q1", "#"))).isZero();
		assertThat(bindings("ex")).containsExactly(tuple("q2", "#", "r2"));
	}

	@Test
	void deadLetterQueue() throws SQLException {
		this.jdbc.update("INSERT INTO pgqueue.queue (name, dead_letter_queue) VALUES ('configured', 'elsewhere'), "
				+ "('plain', null)");
		Connection connection = this.connections.open();

		assertThat(rows(connection, this.sql.deadLetterQueue, new QueueSql.Queue("configured")))
			.containsExactly(Map.of("dead_letter_queue", "elsewhere"));
		assertThat(rows(connection, this.sql.deadLetterQueue, new QueueSql.Queue("plain")))
			.extracting("dead_letter_queue").as("the default: null").containsExactly((Object) null);
		assertThat(rows(connection, this.sql.deadLetterQueue, new QueueSql.Queue("undeclared"))).isEmpty();
	}

	@Test
	void deadLetterQueueOfDeclared() throws SQLException {
		String longName = "q".repeat(63);
		this.jdbc.update("INSERT INTO pgqueue.queue (name, dead_letter_queue) VALUES ('configured', 'elsewhere'), "
				+ "('plain', null), (?, null)", longName);
		Connection connection = this.connections.open();

		assertThat(rows(connection, this.sql.deadLetterQueueOfDeclared, new QueueSql.Queue("configured")))
			.containsExactly(Map.of("dead_letter_queue", "elsewhere"));
		assertThat(rows(connection, this.sql.deadLetterQueueOfDeclared, new QueueSql.Queue("plain")))
			.containsExactly(Map.of("dead_letter_queue", "plain.dlq"));
		assertThat(rows(connection, this.sql.deadLetterQueueOfDeclared, new QueueSql.Queue(longName)))
			.as("as QueueNames computes it")
			.containsExactly(Map.of("dead_letter_queue", QueueNames.defaultDeadLetterQueue(longName)));
		assertThat(rows(connection, this.sql.deadLetterQueueOfDeclared, new QueueSql.Queue("undeclared"))).isEmpty();
	}

	@Test
	void declaredQueues() throws SQLException {
		this.jdbc.update("INSERT INTO pgqueue.queue (name, dead_letter_queue) VALUES ('a', 'x'), ('b', null), "
				+ "('c', 'a')");
		Connection connection = this.connections.open();

		assertThat(rows(connection, this.sql.declaredQueues, new QueueSql.None())).extracting("name")
			.containsExactlyInAnyOrder("a", "b", "c", "x", "b.dlq");
	}

	@Test
	void createQueue() throws SQLException {
		Connection connection = this.connections.open();

		assertThat(update(connection, this.sql.createQueue, definition("created", 3, null))).isEqualTo(1);
		assertThat(queue("created")).contains(entry("max_attempts", 3), entry("backoff_initial_ms", 100L),
				entry("backoff_multiplier", 1.5), entry("backoff_max_ms", 5000L), entry("dead_letter_queue", null),
				entry("paused", false), entry("rate_limit_permits", 6000), entry("rate_limit_period_ms", 60000),
				entry("concurrency_key", "tenant"), entry("max_in_flight_per_key", 2));

		assertThat(update(connection, this.sql.createQueue, definition("created", 9, "dead"))).as("it exists")
			.isZero();
		assertThat(queue("created")).contains(entry("max_attempts", 3), entry("dead_letter_queue", null),
				entry("concurrency_key", "tenant"));
	}

	@Test
	void alterQueue() throws SQLException {
		Connection connection = this.connections.open();

		assertThat(update(connection, this.sql.alterQueue, definition("altered", 3, null))).as("it does not exist")
			.isZero();
		assertThat(queue("altered")).isNull();

		this.jdbc.update("INSERT INTO pgqueue.queue (name, paused, updated_at) VALUES ('altered', true, "
				+ "now() - interval '1 hour')");
		assertThat(update(connection, this.sql.alterQueue, definition("altered", 9, "dead"))).isEqualTo(1);
		assertThat(queue("altered")).contains(entry("max_attempts", 9), entry("backoff_initial_ms", 100L),
				entry("backoff_multiplier", 1.5), entry("backoff_max_ms", 5000L), entry("dead_letter_queue", "dead"),
				entry("paused", true), entry("rate_limit_permits", 6000), entry("rate_limit_period_ms", 60000),
				entry("concurrency_key", "tenant"), entry("max_in_flight_per_key", 2), entry("recently_updated", true));
		assertThat(update(connection, this.sql.alterQueue, new QueueSql.QueueDefinition("altered", 9, 100, 1.5, 5000,
				"dead", null, null, null, null, null, null, null, null))).isEqualTo(1);
		assertThat(queue("altered")).as("the concurrency key removed").contains(entry("concurrency_key", null),
				entry("max_in_flight_per_key", null), entry("rate_limit_permits", null));
	}

	@Test
	void dropQueue() throws SQLException {
		this.jdbc.update("INSERT INTO pgqueue.queue (name) VALUES ('dropped'), ('kept')");
		send("dropped", 1);
		Connection connection = this.connections.open();

		assertThat(update(connection, this.sql.dropQueue, new QueueSql.Queue("dropped"))).isEqualTo(1);
		assertThat(queue("dropped")).isNull();
		assertThat(queue("kept")).isNotNull();
		assertThat(Db.count("dropped")).as("the definition only").isEqualTo(1);
		assertThat(update(connection, this.sql.dropQueue, new QueueSql.Queue("dropped"))).isZero();
	}

	@Test
	void setPaused() throws SQLException {
		this.jdbc.update("INSERT INTO pgqueue.queue (name, updated_at) VALUES ('p', now() - interval '1 hour')");
		Connection connection = this.connections.open();

		assertThat(update(connection, this.sql.setPaused, new QueueSql.SetPaused("p", true))).isEqualTo(1);
		assertThat(queue("p")).contains(entry("paused", true), entry("recently_updated", true));
		assertThat(update(connection, this.sql.setPaused, new QueueSql.SetPaused("p", false))).isEqualTo(1);
		assertThat(queue("p")).contains(entry("paused", false));
		assertThat(update(connection, this.sql.setPaused, new QueueSql.SetPaused("undeclared", true))).isZero();
	}

	@Test
	void wake() throws SQLException {
		Connection connection = this.connections.open();
		Connection listener = this.connections.listen(this.sql.channel());

		assertThat(rows(connection, this.sql.wake, new QueueSql.Wake(this.sql.channel(), "woken"))).hasSize(1);

		assertThat(notifications(listener, this.sql.channel())).containsExactly("woken");
	}

	@Test
	void isPaused() throws SQLException {
		this.jdbc.update("INSERT INTO pgqueue.queue (name, paused) VALUES ('paused', true), ('running', false)");
		Connection connection = this.connections.open();

		assertThat(rows(connection, this.sql.isPaused, new QueueSql.Queue("paused")))
			.containsExactly(Map.of("paused", true));
		assertThat(rows(connection, this.sql.isPaused, new QueueSql.Queue("running")))
			.containsExactly(Map.of("paused", false));
		assertThat(rows(connection, this.sql.isPaused, new QueueSql.Queue("undeclared")))
			.containsExactly(Map.of("paused", false));
	}

	@Test
	void isDeclared() throws SQLException {
		this.jdbc.update("INSERT INTO pgqueue.queue (name) VALUES ('declared')");
		Connection connection = this.connections.open();

		assertThat(rows(connection, this.sql.isDeclared, new QueueSql.Queue("declared")))
			.containsExactly(Map.of("declared", true));
		assertThat(rows(connection, this.sql.isDeclared, new QueueSql.Queue("undeclared")))
			.containsExactly(Map.of("declared", false));
	}

	@Test
	void queues() throws SQLException {
		this.jdbc.update("INSERT INTO pgqueue.queue (name, max_attempts, backoff_initial_ms, backoff_multiplier, "
				+ "backoff_max_ms, dead_letter_queue, paused, rate_limit_permits, rate_limit_period_ms, concurrency_key, "
				+ "max_in_flight_per_key) VALUES ('b', 3, 10, 1.5, 100, 'b-dead', true, 5, 1000, 'tenant', 3), "
				+ "('a', 5, 1000, 2.0, 600000, null, false, null, null, null, null)");
		Connection connection = this.connections.open();

		assertThat(rows(connection, this.sql.queues, new QueueSql.None()))
			.extracting("name", "max_attempts", "backoff_initial_ms", "backoff_multiplier", "backoff_max_ms",
					"dead_letter_queue", "paused", "rate_limit_permits", "rate_limit_period_ms", "concurrency_key",
					"max_in_flight_per_key")
			.containsExactly(tuple("a", 5, 1000L, 2.0, 600000L, null, false, null, null, null, null),
					tuple("b", 3, 10L, 1.5, 100L, "b-dead", true, 5, 1000, "tenant", 3));
	}

	@Test
	void messageCount() throws SQLException {
		send("counted", 1);
		send("counted", 2, SendOptions.builder().delay(HOUR));
		hold(send("counted", 3));
		send("other", 4);
		Connection connection = this.connections.open();

		assertThat(rows(connection, this.sql.messageCount, new QueueSql.Queue("counted")))
			.as("delayed and held ones included").containsExactly(Map.of("messages", 3L));
		assertThat(rows(connection, this.sql.messageCount, new QueueSql.Queue("empty")))
			.containsExactly(Map.of("messages", 0L));
	}

	@Test
	void boundExchanges() throws SQLException {
		this.jdbc.update("INSERT INTO pgqueue.exchange (name, type) VALUES ('e1', 'direct'), ('e2', 'fanout'), "
				+ "('e3', 'fanout')");
		this.jdbc.update("INSERT INTO pgqueue.binding (exchange, queue, routing_key, key_regex) VALUES "
				+ "('e2', 'q', '', ''), ('e1', 'q', 'a', '^\\.a$'), ('e1', 'q', 'b', '^\\.b$'), ('e3', 'other', '', '')");
		Connection connection = this.connections.open();

		assertThat(rows(connection, this.sql.boundExchanges, new QueueSql.Queue("q"))).extracting("exchange")
			.containsExactly("e1", "e2");
		assertThat(rows(connection, this.sql.boundExchanges, new QueueSql.Queue("unbound"))).isEmpty();
	}

	@Test
	void purgeChunk() throws SQLException {
		long free = send("purge", 1);
		long held = send("purge", 2);
		long delayed = send("purge", 3, SendOptions.builder().delay(HOUR));
		long rowLocked = send("purge", 4);
		long freeLater = send("purge", 5);
		long groupFirst = send("purge", 6, SendOptions.builder().group("g"));
		long groupSecond = send("purge", 7, SendOptions.builder().group("g"));
		long groupThird = send("purge", 8, SendOptions.builder().group("g").delay(HOUR));
		long elsewhere = send("purge-other", 9);
		hold(held);
		hold(groupFirst);
		Connection transaction = this.connections.open();
		transaction.setAutoCommit(false);
		execute(transaction, "SELECT id FROM pgqueue.message WHERE id = " + rowLocked + " FOR UPDATE");
		Connection connection = this.connections.open();

		// The ready ones, three at a time: a held one is looked at and left, a row-locked one skipped.
		assertThat(rows(connection, this.sql.purgeChunk, purge(0, false, 3)))
			.containsExactly(Map.of("last_id", freeLater, "looked", 3L, "deleted", 2L));
		assertThat(List.of(free, freeLater)).allSatisfy((id) -> assertThat(message(id)).isNull());
		assertThat(rows(connection, this.sql.purgeChunk, purge(freeLater, false, 3)))
			.containsExactly(Map.of("last_id", groupSecond, "looked", 2L, "deleted", 1L));
		assertThat(message(groupThird)).as("the group mended").contains(entry("previous_id", groupFirst));

		assertThat(rows(connection, this.sql.purgeChunk, purge(0, true, 100))).as("everything: delayed ones too")
			.containsExactly(Map.of("last_id", groupThird, "looked", 4L, "deleted", 2L));
		assertThat(this.jdbc.queryForList("SELECT id FROM pgqueue.message ORDER BY id", Long.class))
			.containsExactly(held, rowLocked, groupFirst, elsewhere);
		assertThat(message(delayed)).isNull();
	}

	@Test
	void redriveIds() throws SQLException {
		long fromA = deadLetter("a.dlq", "a", "{\"y\": \"2\"}", true);
		long fromB = deadLetter("b.dlq", "b", "{}", false);
		long plain = send("a", 1);
		long held = deadLetter("a.dlq", "a", "{}", false);
		hold(held);
		Connection connection = this.connections.open();
		Connection listener = this.connections.listen(this.sql.channel());

		List<Map<String, Object>> rows = rows(connection, this.sql.redriveIds,
				new QueueSql.RedriveIds(new Long[] { fromA, fromB, plain, held }, this.namespace, this.sql.channel()));

		assertThat(rows).extracting("id").containsExactlyInAnyOrder(fromA, fromB);
		assertThat(message(fromA)).contains(entry("queue", "a"), entry("attempts", 0), entry("visible", true),
				entry("headers", "{\"y\": \"2\"}"));
		assertThat(message(fromB)).contains(entry("queue", "b"));
		assertThat(message(plain)).as("not a dead letter").contains(entry("queue", "a"), entry("attempts", 0));
		assertThat(message(held)).contains(entry("queue", "a.dlq"));
		assertThat(notifications(listener, this.sql.channel())).containsExactlyInAnyOrder("a", "b");
	}

	@Test
	void deadLetterQueueOf() throws SQLException {
		this.jdbc.update("INSERT INTO pgqueue.queue (name, dead_letter_queue) VALUES ('configured', 'elsewhere'), "
				+ "('plain', null)");
		Connection connection = this.connections.open();

		assertThat(rows(connection, this.sql.deadLetterQueueOf, new QueueSql.Queue("configured")))
			.containsExactly(Map.of("dead_letter_queue", "elsewhere"));
		assertThat(rows(connection, this.sql.deadLetterQueueOf, new QueueSql.Queue("plain")))
			.containsExactly(Map.of("dead_letter_queue", "plain.dlq"));
		assertThat(rows(connection, this.sql.deadLetterQueueOf, new QueueSql.Queue("undeclared")))
			.containsExactly(Map.of("dead_letter_queue", "undeclared.dlq"));
	}

	@Test
	void roleExists() throws SQLException {
		Connection connection = this.connections.open();

		assertThat(rows(connection, this.sql.roleExists, new QueueSql.Role("postgres")))
			.containsExactly(Map.of("found", true));
		assertThat(rows(connection, this.sql.roleExists, new QueueSql.Role("stmt_no_such_role")))
			.containsExactly(Map.of("found", false));
	}

	@Test
	void archiveUpkeep() throws SQLException {
		this.jdbc.update("INSERT INTO pgqueue.queue (name, retention_ms) VALUES ('kept', 3 * 86400000)");
		Connection connection = this.connections.open();

		assertThat(rows(connection, this.sql.archiveUpkeep, new QueueSql.None())).hasSize(1);
		assertThat(this.jdbc.queryForList("SELECT to_regclass('pgqueue.archive_' || to_char(now() AT TIME ZONE 'UTC' "
				+ "+ d * interval '1 day', 'YYYYMMDD'))::text FROM generate_series(0, 4) d", String.class))
			.as("today, the 3 days of the retention, and one more").doesNotContainNull().hasSize(5);
		assertThat(rows(connection, this.sql.archiveUpkeep, new QueueSql.None()))
			.as("nothing left to create or drop").containsExactly(Map.of("created", 0, "dropped", 0));
	}

	@Test
	void archived() throws SQLException {
		this.jdbc.update("INSERT INTO pgqueue.archive (id, queue, outcome, payload, headers, priority, attempts, "
				+ "created_at, completed_at, expires_at) VALUES "
				+ "(1, 'a', 'acked', '1', '{\"tenant\": \"acme\"}', 0, 1, now(), now() - interval '2 minutes', now() + interval '1 day'), "
				+ "(2, 'a', 'purged', '2', '{}', 0, 0, now(), now() - interval '1 minute', now() + interval '1 day'), "
				+ "(3, 'b', 'acked', '3', '{\"tenant\": \"acme\"}', 0, 1, now(), now(), now() + interval '1 day'), "
				+ "(4, 'a', 'acked', '4', '{}', 0, 1, now(), now() - interval '2 days', now() - interval '1 day')");
		Connection connection = this.connections.open();

		assertThat(rows(connection, this.sql.archived, new QueueSql.Archived(null, null, null, null, null, null, 10)))
			.extracting((row) -> row.get("id")).as("newest first, the expired one left out").containsExactly(3L, 2L, 1L);
		assertThat(rows(connection, this.sql.archived, new QueueSql.Archived("a", null, "tenant", "acme", null, null, 10)))
			.extracting((row) -> row.get("id")).containsExactly(1L);
		assertThat(rows(connection, this.sql.archived, new QueueSql.Archived(null, 2L, null, null, null, null, 10)))
			.extracting((row) -> row.get("outcome")).containsExactly("purged");
		assertThat(rows(connection, this.sql.archived, new QueueSql.Archived(null, null, null, null,
				java.time.Instant.now().minusSeconds(90), null, 1))).extracting((row) -> row.get("id")).containsExactly(3L);
	}

	@Test
	void resendArchived() throws SQLException {
		this.jdbc.update("INSERT INTO pgqueue.archive (id, queue, outcome, payload, headers, priority, attempts, "
				+ "max_attempts, group_key, created_at, completed_at, expires_at) VALUES "
				+ "(7, 'a', 'dead-lettered', '\"old\"', '{\"tenant\": \"acme\"}', -1, 3, 3, 'g', now(), now() - interval '1 minute', now() + interval '1 day'), "
				+ "(7, 'a', 'acked', '\"newer\"', '{}', 0, 1, null, null, now(), now(), now() + interval '1 day')");
		Connection connection = this.connections.open();

		List<Map<String, Object>> sent = rows(connection, this.sql.resendArchived, new QueueSql.ResendArchived("a", 7));
		assertThat(sent).hasSize(1);
		assertThat(this.jdbc.queryForMap("SELECT payload #>> '{}' AS body, headers ->> 'pgqueue-resent-from' AS resent "
				+ "FROM pgqueue.message WHERE id = ?", sent.get(0).get("id")))
			.as("the newest copy").containsEntry("body", "newer").containsEntry("resent", "7");
		assertThat(rows(connection, this.sql.resendArchived, new QueueSql.ResendArchived("b", 7))).isEmpty();
	}

	@Test
	void tablePrivileges() throws SQLException {
		createRole("Stmt Reader");
		Connection connection = this.connections.open();

		List<Map<String, Object>> rows = rows(connection, this.sql.tablePrivileges,
				new QueueSql.TablePrivileges("pgqueue", "Stmt Reader"));

		assertThat(rows).extracting("statement").containsExactly("GRANT USAGE ON SCHEMA pgqueue TO \"Stmt Reader\"",
				"GRANT SELECT, INSERT, UPDATE, DELETE ON pgqueue.message TO \"Stmt Reader\"",
				"GRANT SELECT ON pgqueue.queue TO \"Stmt Reader\"", "GRANT SELECT ON pgqueue.setting TO \"Stmt Reader\"",
				"GRANT SELECT ON pgqueue.exchange TO \"Stmt Reader\"", "GRANT SELECT ON pgqueue.binding TO \"Stmt Reader\"",
				"GRANT SELECT, INSERT, UPDATE, DELETE ON pgqueue.holding TO \"Stmt Reader\"",
				"GRANT SELECT ON pgqueue.deduplication_key TO \"Stmt Reader\"",
				"GRANT SELECT, INSERT ON pgqueue.archive TO \"Stmt Reader\"",
				"GRANT SELECT, INSERT, UPDATE ON pgqueue.rate_bucket TO \"Stmt Reader\"",
				"GRANT SELECT, INSERT, UPDATE, DELETE ON pgqueue.key_rate_bucket TO \"Stmt Reader\"",
				"GRANT USAGE ON SEQUENCE pgqueue.message_id_seq TO \"Stmt Reader\"",
				"GRANT USAGE ON SEQUENCE pgqueue.holding_session_seq TO \"Stmt Reader\"");
		for (Map<String, Object> row : rows) {
			execute(connection, (String) row.get("statement"));
		}
		assertThat(query(connection, "SELECT has_table_privilege('Stmt Reader', 'pgqueue.message', 'INSERT') AS m, "
				+ "has_table_privilege('Stmt Reader', 'pgqueue.holding', 'DELETE') AS h, "
				+ "has_sequence_privilege('Stmt Reader', 'pgqueue.message_id_seq', 'USAGE') AS s"))
			.as("valid statements, which give what they say").containsExactly(Map.of("m", true, "h", true, "s", true));
	}

	@Test
	void grantAccess() throws SQLException {
		long oid = createRole("stmt_alice");
		Connection connection = this.connections.open();

		assertThat(update(connection, this.sql.grantAccess, new QueueSql.Access("q", "stmt_alice", true, false)))
			.isEqualTo(1);
		assertThat(access()).containsExactly(tuple("q", "stmt_alice", oid, true, false));
		assertThat(update(connection, this.sql.grantAccess, new QueueSql.Access("q", "stmt_alice", false, true)))
			.isEqualTo(1);
		assertThat(access()).as("added to what it has").containsExactly(tuple("q", "stmt_alice", oid, true, true));
		assertThat(update(connection, this.sql.grantAccess, new QueueSql.Access("q", "stmt_no_such_role", true, true)))
			.as("no such role").isZero();
		assertThat(access()).hasSize(1);
	}

	@Test
	void lockAccess() throws SQLException {
		Connection connection = this.connections.open();
		connection.setAutoCommit(false);

		update(connection, this.sql.lockAccess, new QueueSql.None());

		assertThat(Db.queryForLong("SELECT count(*) FROM pg_locks WHERE pid = ? AND locktype = 'relation' AND granted "
				+ "AND relation = 'pgqueue.queue_access'::regclass AND mode = 'ShareRowExclusiveLock'", pid(connection)))
			.isEqualTo(1);
		Connection reader = this.connections.open();
		execute(reader, "SET lock_timeout = '5s'");
		assertThat(query(reader, "SELECT count(*) AS n FROM pgqueue.queue_access")).as("readers do not wait")
			.containsExactly(Map.of("n", 0L));
		Connection revoker = this.connections.open();
		revoker.setAutoCommit(false);
		execute(revoker, "SET LOCAL lock_timeout = '50ms'");
		assertThatExceptionOfType(SQLException.class).as("revokes take turns")
			.isThrownBy(() -> update(revoker, this.sql.lockAccess, new QueueSql.None()))
			.withMessageContaining("lock timeout");
		connection.commit();
		assertThat(Db.queryForLong("SELECT count(*) FROM pg_locks WHERE pid = ? AND locktype = 'relation' "
				+ "AND relation = 'pgqueue.queue_access'::regclass", pid(connection))).isZero();
	}

	@Test
	void revokeAccess() throws SQLException {
		long oid = createRole("stmt_alice");
		this.jdbc.update("INSERT INTO pgqueue.queue_access (queue, role, role_oid, send, consume) VALUES "
				+ "('q', 'stmt_alice', ?, true, true), ('r', 'stmt_alice', ?, true, true)", oid, oid);
		Connection connection = this.connections.open();

		assertThat(update(connection, this.sql.revokeAccess, new QueueSql.Access("q", "stmt_alice", true, false)))
			.isEqualTo(1);
		assertThat(access()).containsExactly(tuple("q", "stmt_alice", oid, false, true),
				tuple("r", "stmt_alice", oid, true, true));
		assertThat(update(connection, this.sql.revokeAccess, new QueueSql.Access("q", "stmt_alice", false, true)))
			.isEqualTo(1);
		assertThat(access()).as("the row stays: forget_access decides")
			.containsExactly(tuple("q", "stmt_alice", oid, false, false), tuple("r", "stmt_alice", oid, true, true));
		assertThat(update(connection, this.sql.revokeAccess, new QueueSql.Access("q", "stmt_no_such_role", true, true)))
			.isZero();
	}

	@Test
	void forgetAccess() throws SQLException {
		long alice = createRole("stmt_alice");
		long bob = createRole("stmt_bob");
		this.jdbc.update("INSERT INTO pgqueue.queue_access (queue, role, role_oid, send, consume) VALUES "
				+ "('q1', 'stmt_alice', ?, true, false), ('q2', 'stmt_alice', ?, false, false), "
				+ "('q3', 'stmt_bob', ?, false, false), ('q4', 'dropped', 1, true, true)", alice, alice, bob);
		Connection connection = this.connections.open();

		assertThat(update(connection, this.sql.forgetAccess, new QueueSql.None())).isEqualTo(2);

		assertThat(access()).as("a role's last row stays, granting nothing; a dropped role's goes")
			.containsExactly(tuple("q1", "stmt_alice", alice, true, false), tuple("q3", "stmt_bob", bob, false, false));
	}

	@Test
	void recordRemoval() throws SQLException {
		Connection removal = this.connections.open();
		removal.setAutoCommit(false);
		String running = (String) rows(removal, this.sql.currentTransaction, new QueueSql.None()).get(0).get("xid");
		Connection recorder = this.connections.open();
		try {
			assertThat(rows(recorder, this.sql.recordRemoval, new QueueSql.RecordRemoval(running)))
				.containsExactly(Map.of("recorded", 1));
			assertThat(removalRecords()).contains(running);

			assertThatExceptionOfType(SQLException.class).as("not a running transaction")
				.isThrownBy(() -> rows(recorder, this.sql.recordRemoval, new QueueSql.RecordRemoval("3")))
				.withMessageContaining("is not a running transaction");

			removal.commit();
			Connection next = this.connections.open();
			next.setAutoCommit(false);
			String later = (String) rows(next, this.sql.currentTransaction, new QueueSql.None()).get(0).get("xid");
			rows(recorder, this.sql.recordRemoval, new QueueSql.RecordRemoval(later));
			assertThat(removalRecords()).as("a committed removal's record goes: it can count no more")
				.contains(later).doesNotContain(running);
			next.rollback();
		}
		finally {
			this.jdbc.update("DELETE FROM pgqueue.removal_xact");
		}
	}

	@Test
	void currentTransaction() throws SQLException {
		Connection connection = this.connections.open();
		connection.setAutoCommit(false);

		String xid = (String) rows(connection, this.sql.currentTransaction, new QueueSql.None()).get(0).get("xid");

		assertThat(Long.parseLong(xid)).isPositive();
		assertThat(rows(connection, this.sql.currentTransaction, new QueueSql.None()))
			.as("the same for the whole transaction").containsExactly(Map.of("xid", xid));
		assertThat(Db.queryForLong("SELECT count(*) FROM pg_locks WHERE pid = ? AND locktype = 'transactionid' "
				+ "AND transactionid::text = ?", pid(connection), Long.toString(Long.parseLong(xid) & 0xFFFFFFFFL)))
			.as("assigned: its transaction holds it").isEqualTo(1);
		connection.commit();
		String next = (String) rows(connection, this.sql.currentTransaction, new QueueSql.None()).get(0).get("xid");
		assertThat(Long.parseLong(next)).isGreaterThan(Long.parseLong(xid));
	}

	// Helpers

	private long send(String queue, Object payload) {
		return this.template.send(queue, payload);
	}

	private long send(String queue, Object payload, SendOptions.Builder options) {
		return this.template.send(queue, payload, options.build());
	}

	/** Holds message {@code id} as a consumer session does, on a connection of its own. */
	private void hold(long id) throws SQLException {
		execute(this.connections.open(), "SELECT pg_advisory_lock(" + this.namespace + ", " + id + ")");
	}

	/**
	 * A message in {@code queue} as dead_letter leaves one that came from {@code origin}: parked
	 * (visible never, as a dead letter that failed again) or waiting, with its error.
	 */
	private long deadLetter(String queue, String origin, String headers, boolean parked) {
		return this.jdbc.queryForObject("INSERT INTO pgqueue.message (queue, payload, headers, attempts, visible_at, "
				+ "last_error) VALUES (?, '1', ?::jsonb || jsonb_build_object('pgqueue-dead-lettered-from', ?::text, "
				+ "'pgqueue-dead-lettered-attempts', '5'), 2, CASE WHEN ? THEN 'infinity'::timestamptz ELSE now() END, "
				+ "'failed') RETURNING id", Long.class, queue, headers, origin, parked);
	}

	private QueueSql.Redrive redrive(int max) {
		return new QueueSql.Redrive("r", "r.dlq", max + 1000, this.namespace, max, this.sql.channel());
	}

	private QueueSql.PurgeChunk purge(long afterId, boolean everything, int chunk) {
		return new QueueSql.PurgeChunk("purge", afterId, everything, chunk, this.namespace);
	}

	private static QueueSql.QueueDefinition definition(String name, int maxAttempts, String deadLetterQueue) {
		return new QueueSql.QueueDefinition(name, maxAttempts, 100, 1.5, 5000, deadLetterQueue, null, null, 6000, 60000,
				"tenant", 2, 10, 1000);
	}

	/** Queue {@code name}'s definition, and whether it was updated in the last minute; null if none. */
	private Map<String, Object> queue(String name) {
		List<Map<String, Object>> rows = this.jdbc.queryForList("SELECT name, max_attempts, backoff_initial_ms, "
				+ "backoff_multiplier, backoff_max_ms, dead_letter_queue, paused, rate_limit_permits, "
				+ "rate_limit_period_ms, concurrency_key, max_in_flight_per_key, updated_at > now() - interval '1 minute' AS recently_updated FROM pgqueue.queue WHERE name = ?", name);
		return rows.isEmpty() ? null : rows.get(0);
	}

	/** Exchange {@code name}'s type and unroutable policy. */
	private List<String> exchange(String name) {
		return this.jdbc.queryForObject("SELECT type, unroutable FROM pgqueue.exchange WHERE name = ?",
				(rs, n) -> List.of(rs.getString("type"), rs.getString("unroutable")), name);
	}

	/** Exchange {@code name}'s bindings as (queue, routing key, key regex), in that order. */
	private List<org.assertj.core.groups.Tuple> bindings(String exchange) {
		return this.jdbc.query("SELECT queue, routing_key, key_regex FROM pgqueue.binding WHERE exchange = ? "
				+ "ORDER BY queue, routing_key", (rs, n) -> tuple(rs.getString(1), rs.getString(2), rs.getString(3)),
				exchange);
	}

	/** Every access row as (queue, role, role oid, send, consume), by queue. */
	private List<org.assertj.core.groups.Tuple> access() {
		return this.jdbc.query("SELECT queue, role, role_oid::text::bigint, send, consume FROM pgqueue.queue_access "
				+ "ORDER BY queue", (rs, n) -> tuple(rs.getString(1), rs.getString(2), rs.getLong(3), rs.getBoolean(4),
						rs.getBoolean(5)));
	}

	private List<String> removalRecords() {
		return this.jdbc.queryForList("SELECT xact::text FROM pgqueue.removal_xact", String.class);
	}

	/** Role {@code name} (created if it does not exist yet; roles outlive the database's tests): its oid. */
	private long createRole(String name) {
		this.jdbc.execute("DO $$ BEGIN CREATE ROLE \"" + name + "\"; EXCEPTION WHEN duplicate_object THEN NULL; END $$");
		return Db.queryForLong("SELECT oid::text::bigint FROM pg_roles WHERE rolname = ?", name);
	}

}
