package io.github.pgqueue.internal;

import java.sql.Connection;
import java.sql.SQLException;
import java.time.Duration;
import java.time.Instant;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;

import io.github.pgqueue.ContextInternals;
import io.github.pgqueue.QueueTemplate;
import io.github.pgqueue.SendOptions;
import io.github.pgqueue.testing.Db;
import io.github.pgqueue.testing.EmbeddedPostgres;
import io.github.pgqueue.testing.PostgresExtension;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;

import org.springframework.jdbc.core.JdbcTemplate;

import static io.github.pgqueue.internal.StatementConnections.execute;
import static io.github.pgqueue.internal.StatementConnections.message;
import static io.github.pgqueue.internal.StatementConnections.notifications;
import static io.github.pgqueue.internal.StatementConnections.rows;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.entry;
import static org.assertj.core.api.Assertions.tuple;
import static org.assertj.core.api.Assertions.within;
import static org.awaitility.Awaitility.await;

/**
 * Each statement of {@code send.sql}, run by its name on PostgreSQL as {@link QueueTemplate} runs
 * it, on a plain connection in autocommit, bound from its parameter record: the columns it
 * returns, by name, and the rows it inserts, with the notification the insert wakes consumers
 * with. A test method is named after its statement (checked by {@link StatementResourcesTests}).
 */
@ExtendWith(PostgresExtension.class)
class SendStatementsIntegrationTests {

	private final JdbcTemplate jdbc = Db.jdbc();

	private final QueueTemplate template = QueueTemplate.builder(EmbeddedPostgres.get().dataSource()).build();

	private final QueueSql sql = ContextInternals.sql(this.template.context());

	private final StatementConnections connections = new StatementConnections();

	@AfterEach
	void closeConnections() throws SQLException {
		this.connections.close();
	}

	@Test
	void send() throws SQLException {
		Connection connection = this.connections.open();
		Connection listener = this.connections.listen(this.sql.channel());

		List<Map<String, Object>> rows = rows(connection, this.sql.send, new QueueSql.Send("send", "{\"a\": 1}",
				"{\"h\": \"v\"}", 4, null, 60_000, 3, "g", "not read by send"));

		assertThat(rows).hasSize(1);
		long id = (Long) rows.get(0).get("id");
		assertThat(rows.get(0)).containsOnlyKeys("id");
		Map<String, Object> sent = message(id);
		assertThat(sent).contains(entry("queue", "send"), entry("payload", "{\"a\": 1}"),
				entry("headers", "{\"h\": \"v\"}"), entry("priority", 4), entry("attempts", 0), entry("max_attempts", 3),
				entry("group_key", "g"), entry("previous_id", null), entry("deduplication_key", null),
				entry("last_error", null), entry("claim_open", false), entry("visible", false));
		assertThat((Double) sent.get("visible_in_s")).as("visible after the delay").isCloseTo(60.0, within(5.0));
		assertThat(notifications(listener, this.sql.channel())).as("the insert wakes the queue's consumers")
			.containsExactly("send");

		long second = (Long) rows(connection, this.sql.send, new QueueSql.Send("send", "2", "{}", 0,
				Instant.now().plus(Duration.ofHours(2)), 60_000, null, "g", null)).get(0).get("id");
		assertThat(message(second)).as("the group's previous message recorded")
			.contains(entry("previous_id", id), entry("max_attempts", null));
		assertThat((Double) message(second).get("visible_in_s")).as("not before wins over the delay")
			.isCloseTo(7200.0, within(60.0));
	}

	@Test
	void sendPlain() throws SQLException {
		Connection connection = this.connections.open();

		List<Map<String, Object>> rows = rows(connection, this.sql.sendPlain, new QueueSql.SendPlain("plain", "[1, 2]"));

		assertThat(rows).hasSize(1);
		assertThat(message((Long) rows.get(0).get("id"))).as("the column defaults").contains(entry("queue", "plain"),
				entry("payload", "[1, 2]"), entry("headers", "{}"), entry("priority", 0), entry("attempts", 0),
				entry("max_attempts", null), entry("group_key", null), entry("deduplication_key", null),
				entry("visible", true), entry("claim_open", false));
	}

	@Test
	void sendDeduplicated() throws Exception {
		Connection connection = this.connections.open();

		List<Map<String, Object>> first = rows(connection, this.sql.sendDeduplicated, dedup("dedup", "1", "k"));
		assertThat(first).hasSize(1);
		long id = (Long) first.get(0).get("id");
		assertThat(first.get(0)).containsExactly(entry("id", id), entry("inserted", true));
		assertThat(message(id)).contains(entry("deduplication_key", "k"), entry("payload", "1"), entry("priority", 2),
				entry("max_attempts", 4), entry("group_key", null));

		assertThat(rows(connection, this.sql.sendDeduplicated, dedup("dedup", "2", "k")))
			.as("the key is in the queue: its message's id, nothing inserted")
			.containsExactly(Map.of("id", id, "inserted", false));
		assertThat(Db.count("dedup")).isEqualTo(1);
		assertThat(message(id)).contains(entry("payload", "1"));

		List<Map<String, Object>> elsewhere = rows(connection, this.sql.sendDeduplicated, dedup("dedup-other", "3", "k"));
		assertThat(elsewhere).extracting("inserted").as("a key is per queue").containsExactly(true);

		this.jdbc.update("DELETE FROM pgqueue.message WHERE id = ?", id);
		List<Map<String, Object>> again = rows(connection, this.sql.sendDeduplicated, dedup("dedup", "4", "k"));
		assertThat(again).extracting("inserted").as("the key left with its message").containsExactly(true);
		assertThat((Long) again.get(0).get("id")).isNotEqualTo(id);
	}

	@Test
	void sendDeduplicatedReturnsNothingForAKeyCommittedAfterItsSnapshot() throws Exception {
		Connection other = this.connections.open();
		other.setAutoCommit(false);
		execute(other, "INSERT INTO pgqueue.message (queue, payload, deduplication_key) VALUES ('race', '1', 'k')");
		Connection connection = this.connections.open();
		int pid = StatementConnections.pid(connection);

		// The insert waits for the other transaction's row with the key, and conflicts once it
		// commits; the statement's snapshot, taken before, does not show that row.
		CompletableFuture<List<Map<String, Object>>> sent = CompletableFuture.supplyAsync(() -> {
			try {
				return rows(connection, this.sql.sendDeduplicated, dedup("race", "2", "k"));
			}
			catch (SQLException ex) {
				throw new IllegalStateException(ex);
			}
		});
		await().atMost(Duration.ofSeconds(20)).until(() -> Db.queryForLong("SELECT count(*) FROM pg_stat_activity "
				+ "WHERE pid = ? AND wait_event_type = 'Lock'", pid) == 1);
		other.commit();

		assertThat(sent.get(20, TimeUnit.SECONDS)).as("no row: the caller runs it again").isEmpty();
		assertThat(Db.count("race")).isEqualTo(1);
		assertThat(rows(connection, this.sql.sendDeduplicated, dedup("race", "2", "k"))).extracting("inserted")
			.containsExactly(false);
	}

	@Test
	void sendBatch() throws SQLException {
		Connection connection = this.connections.open();
		Connection listener = this.connections.listen(this.sql.channel());

		List<Map<String, Object>> rows = rows(connection, this.sql.sendBatch, new QueueSql.SendBatch("batch",
				"{\"h\": \"v\"}", 2, null, 0, 4, null, new String[] { "\"c\"", "\"a\"", "\"b\"" }));

		List<Long> ids = rows.stream().map((row) -> (Long) row.get("id")).sorted().toList();
		assertThat(ids).hasSize(3);
		assertThat(ids.stream().map((id) -> message(id).get("payload"))).as("sorted ids follow the payloads' order")
			.containsExactly("\"c\"", "\"a\"", "\"b\"");
		assertThat(ids).allSatisfy((id) -> assertThat(message(id)).contains(entry("queue", "batch"),
				entry("headers", "{\"h\": \"v\"}"), entry("priority", 2), entry("max_attempts", 4), entry("visible", true),
				entry("group_key", null)));
		assertThat(notifications(listener, this.sql.channel())).as("one per statement").containsExactly("batch");
	}

	@Test
	void sendGroupedBatch() throws SQLException {
		long tail = this.template.send("grouped", 0, SendOptions.builder().group("g").build());
		Connection connection = this.connections.open();

		List<Map<String, Object>> rows = rows(connection, this.sql.sendGroupedBatch, new QueueSql.SendBatch("grouped",
				"{}", 1, null, 30_000, null, "g", new String[] { "1", "2", "3" }));

		List<Long> ids = rows.stream().map((row) -> (Long) row.get("id")).sorted().toList();
		assertThat(ids).hasSize(3).allSatisfy((id) -> assertThat(id).isGreaterThan(tail));
		assertThat(ids.stream().map(StatementConnections::message))
			.extracting((m) -> m.get("payload"), (m) -> m.get("previous_id"), (m) -> m.get("group_key"))
			.as("each records the one before it, the first the group's tail")
			.containsExactly(tuple("1", tail, "g"), tuple("2", ids.get(0), "g"), tuple("3", ids.get(1), "g"));
		assertThat(message(ids.get(0))).contains(entry("priority", 1), entry("visible", false));
		assertThat((Double) message(ids.get(0)).get("visible_in_s")).isCloseTo(30.0, within(5.0));

		List<Map<String, Object>> fresh = rows(connection, this.sql.sendGroupedBatch, new QueueSql.SendBatch("grouped",
				"{}", 0, null, 0, null, "new", new String[] { "4", "5" }));
		List<Long> freshIds = fresh.stream().map((row) -> (Long) row.get("id")).sorted().toList();
		// A group with no message: the first bounds nothing (0, as null for a single send).
		assertThat(message(freshIds.get(0)).get("previous_id")).isIn(null, 0L);
		assertThat(message(freshIds.get(1)).get("previous_id")).isEqualTo(freshIds.get(0));
	}

	@Test
	void publish() throws SQLException {
		this.jdbc.update("INSERT INTO pgqueue.exchange (name, type) VALUES ('ex', 'topic'), ('other', 'fanout')");
		this.jdbc.update("INSERT INTO pgqueue.binding (exchange, queue, routing_key, key_regex) VALUES "
				+ "('ex', 'q1', 'a.*', '^\\.a\\.[^.]*$'), ('ex', 'q2', '#', '^(\\.[^.]*)*$'), "
				+ "('ex', 'q2', 'a.x', '^\\.a\\.x$'), ('ex', 'q3', 'b.c', '^\\.b\\.c$'), ('other', 'q4', '', '')");
		Connection connection = this.connections.open();
		Connection listener = this.connections.listen(this.sql.channel());
		Instant notBefore = Instant.now().plus(Duration.ofHours(1));

		List<Map<String, Object>> rows = rows(connection, this.sql.publish,
				publish("ex", "a.x", notBefore, null, "grp"));

		assertThat(rows).as("one copy per queue, however many of its bindings match").extracting("queue")
			.containsExactlyInAnyOrder("q1", "q2");
		assertThat(rows).allSatisfy((row) -> assertThat(message((Long) row.get("id"))).contains(
				entry("queue", row.get("queue")), entry("payload", "{\"n\": 1}"), entry("headers", "{\"h\": \"v\"}"),
				entry("priority", 3), entry("max_attempts", 2), entry("group_key", "grp"), entry("visible", false)));
		assertThat((Double) message((Long) rows.get(0).get("id")).get("visible_in_s")).isCloseTo(3600.0, within(60.0));
		assertThat(notifications(listener, this.sql.channel())).containsExactlyInAnyOrder("q1", "q2");

		assertThat(rows(connection, this.sql.publish, publish("ex", "b.c", null, null, null))).extracting("queue")
			.containsExactlyInAnyOrder("q2", "q3");
		assertThat(rows(connection, this.sql.publish, publish("ex", "z", null, null, null))).extracting("queue")
			.containsExactly("q2");
		assertThat(rows(connection, this.sql.publish, publish("ex", "", null, null, null))).extracting("queue")
			.as("the empty key has no word: '#' matches it").containsExactly("q2");
		assertThat(rows(connection, this.sql.publish, publish("nobody", "a.x", null, null, null))).isEmpty();

		assertThat(rows(connection, this.sql.publish, publish("ex", "a.y", null, "key", null))).extracting("queue")
			.containsExactlyInAnyOrder("q1", "q2");
		assertThat(rows(connection, this.sql.publish, publish("ex", "b.c", null, "key", null)))
			.as("a queue that holds a message with the key gets none").extracting("queue").containsExactly("q3");
		assertThat(Db.queryForLong("SELECT count(*) FROM pgqueue.message WHERE deduplication_key = 'key'"))
			.isEqualTo(3);

		assertThat(rows(connection, this.sql.publish, publish("other", "any.key", null, null, null)))
			.as("fanout: the empty regular expression matches every key").extracting("queue").containsExactly("q4");
		assertThat(rows(connection, this.sql.publish, publish("other", "", null, null, null))).extracting("queue")
			.containsExactly("q4");
	}

	@Test
	void unroutablePolicy() throws SQLException {
		this.jdbc.update("INSERT INTO pgqueue.exchange (name, type) VALUES ('dropping', 'direct')");
		this.jdbc.update("INSERT INTO pgqueue.exchange (name, type, unroutable) VALUES ('failing', 'direct', 'fail')");
		Connection connection = this.connections.open();

		assertThat(rows(connection, this.sql.unroutablePolicy, new QueueSql.Exchange("dropping")))
			.containsExactly(Map.of("unroutable", "drop"));
		assertThat(rows(connection, this.sql.unroutablePolicy, new QueueSql.Exchange("failing")))
			.containsExactly(Map.of("unroutable", "fail"));
		assertThat(rows(connection, this.sql.unroutablePolicy, new QueueSql.Exchange("undeclared"))).isEmpty();
	}

	private static QueueSql.Send dedup(String queue, String payload, String key) {
		return new QueueSql.Send(queue, payload, "{}", 2, null, 0, 4, null, key);
	}

	private static QueueSql.Publish publish(String exchange, String routingKey, Instant notBefore, String key,
			String group) {
		return new QueueSql.Publish(exchange, routingKey, "{\"n\": 1}", "{\"h\": \"v\"}", 3, notBefore, 0, 2, key, group);
	}

}
