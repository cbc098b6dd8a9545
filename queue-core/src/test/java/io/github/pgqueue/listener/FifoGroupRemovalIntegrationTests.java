package io.github.pgqueue.listener;

import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.time.Duration;
import java.util.Collections;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;

import com.zaxxer.hikari.HikariDataSource;
import io.github.pgqueue.CancelResult;
import io.github.pgqueue.ConsumptionMode;
import io.github.pgqueue.ContextInternals;
import io.github.pgqueue.Lease;
import io.github.pgqueue.QueueAdmin;
import io.github.pgqueue.QueueContext;
import io.github.pgqueue.QueueTemplate;
import io.github.pgqueue.SendOptions;
import io.github.pgqueue.internal.ClaimedMessage;
import io.github.pgqueue.internal.ConsumerSession;
import io.github.pgqueue.internal.QueueSql;
import io.github.pgqueue.testing.EmbeddedPostgres;
import io.github.pgqueue.testing.ListenerFixture;
import io.github.pgqueue.testing.PostgresExtension;
import io.github.pgqueue.testing.TransactionalClaims;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;

import org.springframework.jdbc.core.JdbcTemplate;

import static io.github.pgqueue.testing.Db.count;
import static io.github.pgqueue.testing.ListenerFixture.endpoint;
import static io.github.pgqueue.testing.ListenerFixture.properties;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.awaitility.Awaitility.await;

/**
 * Messages that leave a FIFO group other than as its head (cancelled, purged, redriven out of a
 * dead-letter queue) must leave the group's head test exact: while the head is in the queue (held,
 * or backing off) no later message of its group is claimable, in either mode.
 */
@ExtendWith(PostgresExtension.class)
class FifoGroupRemovalIntegrationTests {

	private static final SendOptions GROUP = SendOptions.builder().group("g").build();

	private final EmbeddedPostgres postgres = EmbeddedPostgres.get();

	private final JdbcTemplate jdbc = new JdbcTemplate(this.postgres.dataSource());

	@RegisterExtension
	final ListenerFixture listeners = ListenerFixture.pools("fifo-removal-app", 8, "fifo-removal-consumers", 8);

	/** Sessions whose waits a test looks for in pg_stat_activity. */
	private final HikariDataSource remover = this.postgres.pool("fifo-remover", 2);

	private final QueueTemplate template = this.listeners.template();

	private final QueueAdmin admin = this.listeners.admin();

	@AfterEach
	void closeRemover() {
		this.remover.close();
	}

	@ParameterizedTest
	@EnumSource(ConsumptionMode.class)
	void cancellingAMiddleMessageKeepsTheRestOfTheGroupBehindItsHeldHead(ConsumptionMode mode) throws Exception {
		String queue = queue("cancel", mode);
		long a = this.template.send(queue, "a", GROUP);
		long b = this.template.send(queue, "b", GROUP);
		long c = this.template.send(queue, "c", GROUP);
		try (Lease<String> head = this.template.receive(queue, String.class).orElseThrow()) {
			assertThat(head.message().id()).isEqualTo(a);
			assertThat(this.template.cancel(queue, b)).isEqualTo(CancelResult.REMOVED);
			assertThat(claimable(mode, queue)).as("claimable while the head is held").isEmpty();
			assertThat(this.template.receive(queue, c, String.class)).as("c received by id while a is held").isEmpty();
			head.ack();
		}
		assertThat(claimable(mode, queue)).containsExactly(c);
	}

	/**
	 * A transactional listener, with a second poller free to take the group's next message: once
	 * the middle message is cancelled, the last one must still wait for the first one's end.
	 */
	@Test
	void aTransactionalListenerRunsAGroupInOrderWhenAMiddleMessageIsCancelled() throws Exception {
		String queue = "cancel-tx-listener";
		this.template.send(queue, "a", GROUP);
		long b = this.template.send(queue, "b", GROUP);
		this.template.send(queue, "c", GROUP);
		List<String> log = new CopyOnWriteArrayList<>();
		CountDownLatch aStarted = new CountDownLatch(1);
		CountDownLatch releaseA = new CountDownLatch(1);
		this.listeners.start(endpoint(queue, String.class, (message, ack) -> {
			String payload = (String) message.payload();
			log.add("start " + payload);
			if (payload.equals("a")) {
				aStarted.countDown();
				assertThat(releaseA.await(30, TimeUnit.SECONDS)).isTrue();
			}
			log.add("end " + payload);
		}, properties(queue).concurrency(2).mode(ConsumptionMode.TRANSACTIONAL)
			.transactionTimeout(Duration.ofSeconds(60))));
		assertThat(aStarted.await(20, TimeUnit.SECONDS)).isTrue();
		assertThat(this.template.cancel(queue, b)).isEqualTo(CancelResult.REMOVED);
		// A message of another group, sent after the cancel: once the free poller has handled it, it
		// has claimed since the cancel, and c would have come with it if it were claimable.
		this.template.send(queue, "other", SendOptions.builder().group("h").build());
		await().atMost(Duration.ofSeconds(20)).until(() -> log.contains("end other"));
		releaseA.countDown();
		// c's handler logs its end before the transaction that deletes c commits.
		await().atMost(Duration.ofSeconds(20)).until(() -> log.contains("end c") && count(queue) == 0);
		assertThat(log).filteredOn((entry) -> !entry.endsWith("other"))
			.containsExactly("start a", "end a", "start c", "end c");
	}

	/**
	 * The head backs off after a failure; a purge of the ready messages takes the middle one; the
	 * last one, delayed at the time, must not overtake the head once it becomes visible.
	 */
	@ParameterizedTest
	@EnumSource(ConsumptionMode.class)
	void purgingTheReadyMessagesBehindAHeadThatBacksOffKeepsTheLaterOnesBehindIt(ConsumptionMode mode)
			throws Exception {
		String queue = queue("purge", mode);
		long a = this.template.send(queue, "a", GROUP);
		this.template.send(queue, "b", GROUP);
		long c = this.template.send(queue, "c", SendOptions.builder().group("g").delay(Duration.ofSeconds(3)).build());
		try (Lease<String> head = this.template.receive(queue, String.class).orElseThrow()) {
			assertThat(head.message().id()).isEqualTo(a);
			head.nack(Duration.ofMinutes(5));
		}
		assertThat(new QueueAdmin(this.template.context()).purge(queue, QueueAdmin.Purge.READY)).as("b purged").isEqualTo(1);
		awaitVisible(c);
		assertThat(claimable(mode, queue)).as("claimable while the head backs off").isEmpty();
		assertThat(ids(queue)).containsExactly(a, c);
	}

	/**
	 * A purge that runs while a transaction has sent a message to the group and not committed yet:
	 * that send recorded the purged message as its group's newest, and must not become a second
	 * head once it commits.
	 */
	@ParameterizedTest
	@EnumSource(ConsumptionMode.class)
	void aPurgeDuringAnUncommittedSendToTheGroupKeepsThatSendBehindTheHead(ConsumptionMode mode) throws Exception {
		String queue = queue("purge-race", mode);
		long a = this.template.send(queue, "a", GROUP);
		this.template.send(queue, "b", GROUP);
		QueueAdmin admin = new QueueAdmin(QueueContext.of(this.remover));
		try (Lease<String> head = this.template.receive(queue, String.class).orElseThrow();
				Connection sender = this.listeners.app().getConnection()) {
			sender.setAutoCommit(false);
			long c = insert(sender, queue, "c", Duration.ofSeconds(3));
			CompletableFuture<Long> purge = CompletableFuture.supplyAsync(() -> admin.purge(queue, QueueAdmin.Purge.READY));
			awaitDoneOrWaiting(purge);
			sender.commit();
			assertThat(purge.get(20, TimeUnit.SECONDS)).as("b purged").isEqualTo(1);
			awaitVisible(c);
			assertThat(claimable(mode, queue)).as("claimable while the head is held").isEmpty();
			assertThat(ids(queue)).containsExactly(a, c);
			head.ack();
			assertThat(claimable(mode, queue)).containsExactly(c);
		}
	}

	/** As above for a cancel of the group's newest message while a send to the group is open. */
	@ParameterizedTest
	@EnumSource(ConsumptionMode.class)
	void aCancelDuringAnUncommittedSendToTheGroupKeepsThatSendBehindTheHead(ConsumptionMode mode) throws Exception {
		String queue = queue("cancel-race", mode);
		long a = this.template.send(queue, "a", GROUP);
		long b = this.template.send(queue, "b", GROUP);
		QueueTemplate cancelling = QueueTemplate.builder(this.remover).build();
		long c;
		try (Lease<String> head = this.template.receive(queue, String.class).orElseThrow();
				Connection sender = this.listeners.app().getConnection()) {
			sender.setAutoCommit(false);
			c = insert(sender, queue, "c", Duration.ZERO);
			CompletableFuture<CancelResult> cancel = CompletableFuture.supplyAsync(() -> cancelling.cancel(queue, b));
			awaitDoneOrWaiting(cancel);
			sender.commit();
			assertThat(cancel.get(20, TimeUnit.SECONDS)).isEqualTo(CancelResult.REMOVED);
			assertThat(claimable(mode, queue)).as("claimable while the head is held").isEmpty();
			head.ack();
			assertThat(claimable(mode, queue)).containsExactly(c);
		}
		assertThat(ids(queue)).containsExactly(c).doesNotContain(a);
	}

	/**
	 * A send in a REPEATABLE READ transaction whose snapshot still shows a message cancelled since:
	 * it must not take that message for its group's newest and become a second head.
	 */
	@ParameterizedTest
	@EnumSource(ConsumptionMode.class)
	void aRepeatableReadSendThatStillSeesACancelledMessageStaysBehindTheHead(ConsumptionMode mode) throws Exception {
		String queue = queue("rr-send", mode);
		long a = this.template.send(queue, "a", GROUP);
		long b = this.template.send(queue, "b", GROUP);
		try (Lease<String> head = this.template.receive(queue, String.class).orElseThrow();
				Connection sender = this.listeners.app().getConnection()) {
			sender.setAutoCommit(false);
			sender.setTransactionIsolation(Connection.TRANSACTION_REPEATABLE_READ);
			try (Statement statement = sender.createStatement()) {
				statement.executeQuery("SELECT 1").close(); // takes the transaction's snapshot
			}
			assertThat(this.template.cancel(queue, b)).isEqualTo(CancelResult.REMOVED);
			long c = insert(sender, queue, "c", Duration.ZERO);
			sender.commit();
			assertThat(claimable(mode, queue)).as("claimable while the head is held").isEmpty();
			head.ack();
			assertThat(claimable(mode, queue)).containsExactly(c);
		}
		assertThat(a).isLessThan(b);
	}

	/**
	 * Taking a grouped message out of its group needs a snapshot taken after the group's lock,
	 * which a REPEATABLE READ transaction cannot have: such a cancel is refused, saying why, and
	 * removes nothing. An ungrouped message is cancelled as always.
	 */
	@Test
	void aCancelOfAGroupedMessageInARepeatableReadTransactionIsRefused() throws Exception {
		String queue = "rr-cancel";
		long grouped = this.template.send(queue, "a", GROUP);
		long plain = this.template.send(queue, "b");
		try (Connection connection = this.listeners.app().getConnection()) {
			connection.setAutoCommit(false);
			connection.setTransactionIsolation(Connection.TRANSACTION_REPEATABLE_READ);
			try (PreparedStatement cancel = connection.prepareStatement(ContextInternals.sql(this.template.context()).cancel.sql())) {
				assertThat(cancel(cancel, plain, queue)).as("ungrouped").isTrue();
				assertThatThrownBy(() -> cancel(cancel, grouped, queue)).isInstanceOf(SQLException.class)
					.hasMessageContaining("message " + grouped + " of FIFO group 'g' in queue '" + queue + "'")
					.hasMessageContaining("READ COMMITTED");
			}
			connection.rollback();
		}
		assertThat(ids(queue)).containsExactly(grouped, plain);
	}

	/**
	 * Dead letters of one group in a dead-letter queue: redriving a middle one keeps the rest of
	 * that group behind its held head, and the redriven message, whose id is older than every
	 * message of its group in the target queue, keeps its id and leaves the group (its group stays
	 * in the header pgqueue-group) rather than overtake the group's held head there.
	 */
	@ParameterizedTest
	@EnumSource(ConsumptionMode.class)
	void aRedriveOutOfAGroupKeepsBothQueuesGroupsInOrder(ConsumptionMode mode) throws Exception {
		String queue = queue("redrive", mode);
		String deadLetters = queue + ".dlq";
		String from = "{\"pgqueue-dead-lettered-from\": \"" + queue + "\"}";
		long first = insertDeadLetter(deadLetters, from);
		long redriven = insertDeadLetter(deadLetters, from);
		long last = insertDeadLetter(deadLetters, "{}"); // written there directly: not redriven
		long a = this.template.send(queue, "a", GROUP);
		long b = this.template.send(queue, "b", GROUP);
		try (Lease<Object> dead = this.template.receive(deadLetters, Object.class).orElseThrow();
				Lease<String> head = this.template.receive(queue, String.class).orElseThrow()) {
			assertThat(dead.message().id()).isEqualTo(first);
			assertThat(head.message().id()).isEqualTo(a);
			assertThat(this.admin.redrive(queue, 10)).as("the held dead letter stays").isEqualTo(1);
			assertThat(claimable(mode, deadLetters)).as("claimable in the dead-letter queue while its head is held")
				.isEmpty();
			assertThat(this.jdbc.queryForMap("SELECT queue, group_key, headers->>'pgqueue-group' AS header "
					+ "FROM pgqueue.message WHERE id = ?", redriven))
				.containsEntry("queue", queue).containsEntry("group_key", null).containsEntry("header", "g");
			assertThat(claimable(mode, queue)).as("claimable in the queue while its group's head is held")
				.containsExactly(redriven);
			dead.ack();
			head.ack();
		}
		assertThat(claimable(mode, deadLetters)).containsExactly(last);
		assertThat(claimable(mode, queue)).contains(b);
	}

	/**
	 * A, B, C, D: C is cancelled while A is held, then A is dead-lettered: B is the head, and D
	 * must wait for it.
	 */
	@ParameterizedTest
	@EnumSource(ConsumptionMode.class)
	void deadLetteringTheHeadAfterALaterMessageWasCancelledLeavesTheNextOneInCharge(ConsumptionMode mode)
			throws Exception {
		String queue = queue("dead", mode);
		long a = this.template.send(queue, "a", GROUP);
		long b = this.template.send(queue, "b", GROUP);
		long c = this.template.send(queue, "c", GROUP);
		long d = this.template.send(queue, "d", GROUP);
		try (Lease<String> head = this.template.receive(queue, String.class).orElseThrow()) {
			assertThat(head.message().id()).isEqualTo(a);
			assertThat(this.template.cancel(queue, c)).isEqualTo(CancelResult.REMOVED);
			head.reject("gave up");
		}
		try (Lease<String> head = this.template.receive(queue, String.class).orElseThrow()) {
			assertThat(head.message().id()).isEqualTo(b);
			assertThat(claimable(mode, queue)).as("claimable while b is held").isEmpty();
			head.ack();
		}
		assertThat(claimable(mode, queue)).containsExactly(d);
	}

	/**
	 * 25 groups drained by four pollers (two listeners of two) while a producer sends and random
	 * messages behind their group's head are cancelled, and twice everything ready is purged: no
	 * group ever has two messages in flight, each group is handled in id order, and every message
	 * sent is handled once or removed, never both.
	 */
	@ParameterizedTest
	@EnumSource(ConsumptionMode.class)
	void cancelsAndPurgesWhileManyPollersDrainKeepEveryGroupInOrder(ConsumptionMode mode) throws Exception {
		String queue = queue("churn", mode);
		int groups = 25;
		int perGroup = 40;
		Map<String, AtomicInteger> inFlight = new ConcurrentHashMap<>();
		Map<String, List<Long>> order = new ConcurrentHashMap<>();
		Set<Long> handled = ConcurrentHashMap.newKeySet();
		AtomicInteger deliveries = new AtomicInteger();
		AtomicInteger overlaps = new AtomicInteger();
		QueueMessageListener listener = (message, ack) -> {
			String group = (String) message.payload();
			if (inFlight.computeIfAbsent(group, (k) -> new AtomicInteger()).incrementAndGet() > 1) {
				overlaps.incrementAndGet();
			}
			order.computeIfAbsent(group, (k) -> new CopyOnWriteArrayList<>()).add(message.id());
			handled.add(message.id());
			deliveries.incrementAndGet();
			Thread.sleep(10); // slower than the producer: a backlog builds up
			inFlight.get(group).decrementAndGet();
		};
		this.listeners.start(endpoint(queue + "-a", String.class, listener, properties(queue).concurrency(2).batchSize(5).mode(mode)),
				endpoint(queue + "-b", String.class, listener, properties(queue).concurrency(2).batchSize(5).mode(mode)));
		Set<Long> sent = ConcurrentHashMap.newKeySet();
		Set<Long> cancelled = ConcurrentHashMap.newKeySet();
		AtomicLong purged = new AtomicLong();
		AtomicBoolean producing = new AtomicBoolean(true);
		CompletableFuture<Void> producer = CompletableFuture.runAsync(() -> {
			for (int n = 0; n < perGroup; n += 5) {
				for (int g = 0; g < groups; g++) {
					// Every seventh batch is delayed, so that purges of the ready messages leave some behind.
					Duration delay = ((n / 5 * groups + g) % 7 == 0) ? Duration.ofMillis(150) : Duration.ZERO;
					sent.addAll(this.template.sendBatch(queue, Collections.nCopies(5, "g" + g),
							SendOptions.builder().group("g" + g).delay(delay).build()));
				}
			}
			producing.set(false);
		});
		QueueTemplate removing = QueueTemplate.builder(this.remover).build();
		QueueAdmin admin = new QueueAdmin(removing.context());
		CompletableFuture<Void> remover = CompletableFuture.runAsync(() -> {
			int round = 0;
			while (producing.get() || count(queue) > 0) {
				List<Long> behind = this.jdbc.queryForList("""
						SELECT m.id FROM pgqueue.message m
						 WHERE m.queue = ? AND EXISTS (SELECT 1 FROM pgqueue.message o
						                                WHERE o.queue = m.queue AND o.group_key = m.group_key AND o.id < m.id)
						 ORDER BY random() LIMIT 3""", Long.class, queue);
				for (long id : behind) {
					if (removing.cancel(queue, id) == CancelResult.REMOVED) {
						cancelled.add(id);
					}
				}
				if (++round % 20 == 0 && round <= 40) {
					purged.addAndGet(admin.purge(queue, QueueAdmin.Purge.READY));
				}
				pause(10);
			}
		});
		producer.get(60, TimeUnit.SECONDS);
		remover.get(60, TimeUnit.SECONDS);
		await().atMost(Duration.ofSeconds(30)).until(() -> count(queue) == 0 && inFlight.values().stream()
			.allMatch((n) -> n.get() == 0));

		assertThat(overlaps.get()).as("two messages of one group in flight at once").isZero();
		order.forEach((group, ids) -> assertThat(ids).as("group %s in id order, each once", group).isSorted()
			.doesNotHaveDuplicates());
		assertThat(deliveries.get()).as("deliveries, each message once").isEqualTo(handled.size());
		assertThat(handled).as("cancelled messages never handled").doesNotContainAnyElementsOf(cancelled);
		assertThat(sent).containsAll(handled).containsAll(cancelled);
		assertThat(handled.size() + cancelled.size() + purged.get()).as("handled + cancelled + purged")
			.isEqualTo(sent.size());
		assertThat(cancelled).as("messages cancelled behind their head").isNotEmpty();
		assertThat(purged.get()).as("messages purged").isPositive();
	}

	/** A pause between rounds of a thread that removes messages: pacing, not waiting for an event. */
	private static void pause(long millis) {
		try {
			Thread.sleep(millis);
		}
		catch (InterruptedException ex) {
			Thread.currentThread().interrupt();
			throw new IllegalStateException("Interrupted", ex);
		}
	}

	private static String queue(String name, ConsumptionMode mode) {
		return name + "-" + mode.name().toLowerCase(Locale.ROOT);
	}

	/** The ids a claim of 10 takes from {@code queue} in {@code mode} right now, giving them back at once. */
	private List<Long> claimable(ConsumptionMode mode, String queue) throws SQLException {
		if (mode == ConsumptionMode.SESSION) {
			try (ConsumerSession session = ContextInternals.openSession(this.template.context())) {
				List<Long> ids = session.claim(queue, 10).messages().stream().map(ClaimedMessage::id).toList();
				session.release(ids, false);
				return ids;
			}
		}
		try (Connection connection = this.listeners.app().getConnection()) {
			connection.setAutoCommit(false);
			try {
				return TransactionalClaims.claim(this.template, connection, queue, 10)
					.stream()
					.filter((row) -> !(Boolean) row[1])
					.map((row) -> (Long) row[0])
					.toList();
			}
			finally {
				connection.rollback();
			}
		}
	}

	/** Sends {@code payload} to group g of {@code queue} with a plain INSERT on {@code connection}. */
	private static long insert(Connection connection, String queue, String payload, Duration delay) throws SQLException {
		try (PreparedStatement insert = connection.prepareStatement("""
				INSERT INTO pgqueue.message (queue, payload, group_key, visible_at)
				VALUES (?, to_jsonb(?::text), 'g', now() + ? * interval '1 millisecond') RETURNING id""")) {
			insert.setString(1, queue);
			insert.setString(2, payload);
			insert.setLong(3, delay.toMillis());
			try (ResultSet rs = insert.executeQuery()) {
				rs.next();
				return rs.getLong(1);
			}
		}
	}

	private long insertDeadLetter(String queue, String headers) {
		return this.jdbc.queryForObject("INSERT INTO pgqueue.message (queue, payload, headers, group_key) "
				+ "VALUES (?, '{}', ?::jsonb, 'g') RETURNING id", Long.class, queue, headers);
	}

	/** Runs QueueTemplate's cancel statement on a connection of the test's; whether it removed the message. */
	private boolean cancel(PreparedStatement cancel, long id, String queue) throws SQLException {
		ContextInternals.sql(this.template.context()).cancel.bind(cancel, new QueueSql.Cancel(id, queue, this.template.context().lockNamespace()));
		try (ResultSet rs = cancel.executeQuery()) {
			return rs.next() && !Boolean.FALSE.equals(rs.getObject(1));
		}
	}

	/**
	 * Waits until {@code removal} has either finished or is waiting for a lock (one that a fix
	 * takes before it reads the group), so that what the test does next happens after it began.
	 */
	private void awaitDoneOrWaiting(CompletableFuture<?> removal) {
		await().atMost(Duration.ofSeconds(20)).pollInterval(Duration.ofMillis(20))
			.until(() -> removal.isDone() || this.jdbc.queryForObject("SELECT count(*) FROM pg_stat_activity "
					+ "WHERE application_name = 'fifo-remover' AND wait_event_type = 'Lock'", Integer.class) > 0);
	}

	private void awaitVisible(long id) {
		await().atMost(Duration.ofSeconds(20)).pollInterval(Duration.ofMillis(20))
			.until(() -> this.jdbc.queryForObject("SELECT visible_at <= now() FROM pgqueue.message WHERE id = ?",
					Boolean.class, id));
	}

	private List<Long> ids(String queue) {
		return this.jdbc.queryForList("SELECT id FROM pgqueue.message WHERE queue = ? ORDER BY id", Long.class, queue);
	}

}
