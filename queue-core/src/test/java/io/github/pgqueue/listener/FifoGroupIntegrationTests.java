package io.github.pgqueue.listener;

import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.Statement;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.stream.IntStream;

import io.github.pgqueue.ConsumptionMode;
import io.github.pgqueue.ContextInternals;
import io.github.pgqueue.QueueAdmin;
import io.github.pgqueue.QueueDefinition;
import io.github.pgqueue.QueueTemplate;
import io.github.pgqueue.SendOptions;
import io.github.pgqueue.internal.ClaimedMessage;
import io.github.pgqueue.internal.ConsumerSession;
import io.github.pgqueue.internal.QueueSql;
import io.github.pgqueue.testing.EmbeddedPostgres;
import io.github.pgqueue.testing.ListenerFixture;
import io.github.pgqueue.testing.Pollers;
import io.github.pgqueue.testing.PostgresExtension;
import io.github.pgqueue.testing.TransactionalClaims;
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
import static org.awaitility.Awaitility.await;

/**
 * FIFO groups under concurrent producers and consumers, in both modes: one message of a group in
 * flight at a time, in send order; a failing message holds up only its own group.
 */
@ExtendWith(PostgresExtension.class)
class FifoGroupIntegrationTests {

	private final EmbeddedPostgres postgres = EmbeddedPostgres.get();

	private final JdbcTemplate jdbc = new JdbcTemplate(this.postgres.dataSource());

	@RegisterExtension
	final ListenerFixture listeners = ListenerFixture.pools("fifo-app", 16, "fifo-consumers", 16);

	private final QueueTemplate template = this.listeners.template();

	private final QueueAdmin admin = this.listeners.admin();

	/** A message of the test: who sent it, its number among that producer's sends to the group. */
	record Step(int producer, String group, int n) {
	}

	@ParameterizedTest
	@EnumSource(ConsumptionMode.class)
	void eachGroupIsHandledOneAtATimeInSendOrderWhileGroupsRunInParallel(ConsumptionMode mode) throws Exception {
		String queue = "fifo-" + mode.name().toLowerCase(Locale.ROOT);
		int groups = 20;
		int perProducer = 10;
		int producers = 3;
		ExecutorService senders = Executors.newFixedThreadPool(producers);
		List<Future<?>> sent = new ArrayList<>();
		for (int p = 0; p < producers; p++) {
			int producer = p;
			sent.add(senders.submit(() -> {
				for (int n = 0; n < perProducer; n++) {
					for (int g = 0; g < groups; g++) {
						this.template.send(queue, new Step(producer, "g" + g, n),
								SendOptions.builder().group("g" + g).priority((n + g) % 3).build());
					}
					this.template.send(queue, new Step(producer, "none", n));
				}
			}));
		}
		Map<String, AtomicInteger> inFlight = new ConcurrentHashMap<>();
		Map<String, List<Long>> order = new ConcurrentHashMap<>();
		Map<String, List<Step>> steps = new ConcurrentHashMap<>();
		AtomicInteger overlaps = new AtomicInteger();
		AtomicInteger handled = new AtomicInteger();
		QueueMessageListener listener = (message, ack) -> {
			Step step = (Step) message.payload();
			handled.incrementAndGet();
			if (step.group().equals("none")) {
				return;
			}
			if (inFlight.computeIfAbsent(step.group(), (k) -> new AtomicInteger()).incrementAndGet() > 1) {
				overlaps.incrementAndGet();
			}
			order.computeIfAbsent(step.group(), (k) -> new CopyOnWriteArrayList<>()).add(message.id());
			steps.computeIfAbsent(step.group(), (k) -> new CopyOnWriteArrayList<>()).add(step);
			Thread.sleep(1);
			inFlight.get(step.group()).decrementAndGet();
		};
		this.listeners.start(endpoint(queue + "-a", Step.class, listener, properties(queue).concurrency(4).mode(mode)),
				endpoint(queue + "-b", Step.class, listener, properties(queue).concurrency(4).mode(mode)));
		for (Future<?> future : sent) {
			future.get(60, TimeUnit.SECONDS);
		}
		senders.shutdown();
		int total = producers * perProducer * (groups + 1);
		await().atMost(Duration.ofSeconds(60)).until(() -> handled.get() >= total && count(queue) == 0);

		assertThat(handled.get()).as("each message once").isEqualTo(total);
		assertThat(overlaps.get()).as("two messages of one group in flight at once").isZero();
		for (int g = 0; g < groups; g++) {
			List<Long> ids = order.get("g" + g);
			assertThat(ids).as("group g%d in id order", g).hasSize(producers * perProducer).isSorted();
			for (int p = 0; p < producers; p++) {
				int producer = p;
				assertThat(steps.get("g" + g).stream().filter((s) -> s.producer() == producer).map(Step::n).toList())
					.as("producer %d's sends to g%d in send order", p, g).isSorted().hasSize(perProducer);
			}
		}
	}

	@ParameterizedTest
	@EnumSource(ConsumptionMode.class)
	void aFailingMessageHoldsUpOnlyItsOwnGroup(ConsumptionMode mode) {
		String queue = "stuck-" + mode.name().toLowerCase(Locale.ROOT);
		this.admin.declare(QueueDefinition.of(queue).withMaxAttempts(5)
			.withBackoff(Duration.ofMillis(300), 1.0, Duration.ofMillis(300)));
		for (int n = 0; n < 5; n++) {
			this.template.send(queue, "bad-" + n, SendOptions.builder().group("bad").build());
			this.template.send(queue, "good-" + n, SendOptions.builder().group("good").build());
		}
		List<String> handled = new CopyOnWriteArrayList<>();
		AtomicInteger failures = new AtomicInteger();
		this.listeners.start(endpoint(queue, String.class, (message, ack) -> {
			String payload = (String) message.payload();
			if (payload.equals("bad-0") && failures.incrementAndGet() <= 2) {
				throw new IllegalStateException("not yet");
			}
			handled.add(payload);
		}, properties(queue).concurrency(3).mode(mode)));

		await().atMost(Duration.ofSeconds(20)).until(() -> handled.size() == 10);
		assertThat(handled.stream().filter((p) -> p.startsWith("bad")).toList())
			.containsExactly("bad-0", "bad-1", "bad-2", "bad-3", "bad-4");
		assertThat(handled.stream().filter((p) -> p.startsWith("good")).toList())
			.containsExactly("good-0", "good-1", "good-2", "good-3", "good-4");
		assertThat(handled.indexOf("good-4")).as("the good group did not wait for the bad one's retries")
			.isLessThan(handled.indexOf("bad-0"));
	}

	/**
	 * More messages of a group whose head is failing than a claim walks at a time, all older than
	 * the other groups' messages: the walks that find nothing to take among them must go on past
	 * them rather than wait, and come back to the head once they reach the end.
	 */
	@ParameterizedTest
	@EnumSource(ConsumptionMode.class)
	void groupsBehindMoreMessagesOfAFailingGroupThanAClaimWalksStillFlow(ConsumptionMode mode) throws Exception {
		String queue = "walled-" + mode.name().toLowerCase(Locale.ROOT);
		int blocked = 3 * QueueSql.CLAIM_WINDOW;
		sendWall(queue, "wall", 0, blocked);
		for (int n = 0; n < 3; n++) {
			for (int g = 0; g < 3; g++) {
				this.template.send(queue, "g" + g + "-" + n, SendOptions.builder().group("g" + g).build());
			}
		}
		List<String> handled = listenFailingOnWalls(queue, 2, mode);

		// A handler records its message before the ack commits: wait for the acks too.
		await().atMost(Duration.ofSeconds(20)).until(() -> handled.size() == 10 && count(queue) == blocked);
		assertThat(handled).as("the wall's head once, then retrying in ten minutes; every other group in order")
			.containsOnlyOnce("wall-0")
			.containsSubsequence("g0-0", "g0-1", "g0-2")
			.containsSubsequence("g1-0", "g1-1", "g1-2")
			.containsSubsequence("g2-0", "g2-1", "g2-2");

		// Nothing left to take: the pollers wait rather than walk the wall again and again. Seen from
		// their threads, sampled: the database's statistics come in up to ten seconds late.
		await("both pollers waiting for work").atMost(Duration.ofSeconds(10))
			.until(() -> Pollers.awaitingWork(queue) == 2);
		int samples = 250;
		int busy = 0;
		for (int i = 0; i < samples; i++) {
			Thread.sleep(10);
			if (Pollers.awaitingWork(queue) < 2) {
				busy++;
			}
		}
		assertThat(busy).as("samples of %d in which a poller was not waiting for work while nothing could be taken",
				samples).isLessThan(5);
	}

	/**
	 * As above with a second wall in a later priority, so that a claim's windows end in both: the
	 * claims must go on through the first priority's wall, not stop at the second's.
	 */
	@Test
	void groupsBehindAWallGetThroughWhenALaterPriorityIsWalledToo() {
		String queue = "walled-twice";
		int blocked = 2 * QueueSql.CLAIM_WINDOW;
		for (int priority = 0; priority < 2; priority++) {
			sendWall(queue, "wall-" + priority, priority, blocked);
		}
		for (int g = 0; g < 3; g++) {
			this.template.send(queue, "g" + g, SendOptions.builder().group("g" + g).build());
		}
		List<String> handled = listenFailingOnWalls(queue, 1, ConsumptionMode.TRANSACTIONAL);

		await().atMost(Duration.ofSeconds(20)).until(() -> handled.containsAll(List.of("g0", "g1", "g2")));
		assertThat(handled).filteredOn((p) -> p.startsWith("wall")).containsExactly("wall-0", "wall-0");
	}

	/**
	 * Declares {@code queue} with a ten-minute back-off, so that a failed head stays out of sight for
	 * the test, and sends it {@code size} messages ("wall-0", "wall-1", ...) in one group.
	 */
	private void sendWall(String queue, String group, int priority, int size) {
		this.admin.declare(QueueDefinition.of(queue).withMaxAttempts(5)
			.withBackoff(Duration.ofMinutes(10), 1.0, Duration.ofMinutes(10)));
		this.template.sendBatch(queue, IntStream.range(0, size).mapToObj((n) -> "wall-" + n).toList(),
				SendOptions.builder().group(group).priority(priority).build());
	}

	/** Starts a listener of {@code queue} that records every payload and fails the walls' messages. */
	private List<String> listenFailingOnWalls(String queue, int concurrency, ConsumptionMode mode) {
		List<String> handled = new CopyOnWriteArrayList<>();
		this.listeners.start(endpoint(queue, String.class, (message, ack) -> {
			String payload = (String) message.payload();
			handled.add(payload);
			if (payload.startsWith("wall")) {
				throw new IllegalStateException("a wall's head fails");
			}
		}, properties(queue).concurrency(concurrency).pollInterval(Duration.ofSeconds(30)).mode(mode)));
		return handled;
	}

	/**
	 * A backlog of three groups, each sent as one long run, so that the second and third groups'
	 * heads are tens of windows behind the first's: the claims can take only the three heads at a
	 * time, fewer than their batches ask for, and must find them without walking the groups'
	 * later messages (walking them, a claim or a round of claims costs a pass over the backlog:
	 * a few messages a second).
	 */
	@ParameterizedTest
	@EnumSource(ConsumptionMode.class)
	void aBacklogOfFewerGroupsThanTheBatchesAskForDrainsInOrder(ConsumptionMode mode) {
		String queue = "few-groups-" + mode.name().toLowerCase(Locale.ROOT);
		int perGroup = 20 * QueueSql.CLAIM_WINDOW;
		for (int g = 0; g < 3; g++) {
			String group = "g" + g;
			this.template.sendBatch(queue, IntStream.range(0, perGroup).mapToObj((n) -> group + "-" + n).toList(),
					SendOptions.builder().group(group).build());
		}
		Map<String, AtomicInteger> inFlight = new ConcurrentHashMap<>();
		Map<String, List<Long>> order = new ConcurrentHashMap<>();
		AtomicInteger overlaps = new AtomicInteger();
		AtomicInteger handled = new AtomicInteger();
		this.listeners.start(endpoint(queue, String.class, (message, ack) -> {
			String group = ((String) message.payload()).substring(0, 2);
			if (inFlight.computeIfAbsent(group, (k) -> new AtomicInteger()).incrementAndGet() > 1) {
				overlaps.incrementAndGet();
			}
			order.computeIfAbsent(group, (k) -> new CopyOnWriteArrayList<>()).add(message.id());
			inFlight.get(group).decrementAndGet();
			handled.incrementAndGet();
		}, properties(queue).concurrency(2).pollInterval(Duration.ofSeconds(30)).mode(mode)));

		await().atMost(Duration.ofSeconds(30)).until(() -> handled.get() >= 1500);
		this.listeners.stop();
		assertThat(overlaps.get()).as("two messages of one group in flight at once").isZero();
		assertThat(order).as("every group flows").containsOnlyKeys("g0", "g1", "g2");
		order.forEach((group, ids) -> assertThat(ids).as("group %s in id order", group).isSorted()
			.doesNotHaveDuplicates());
	}

	/**
	 * After a claim that came back short, a session's claims find the groups' heads through the
	 * group index: all three heads of a backlog two windows deep, and no key of any other row.
	 */
	@Test
	void aClaimAfterAShortOneTakesEveryGroupsHeadAndLocksNothingElse() {
		String queue = "scanned-heads";
		for (int g = 0; g < 3; g++) {
			this.template.sendBatch(queue, IntStream.range(0, 2 * QueueSql.CLAIM_WINDOW).boxed().toList(),
					SendOptions.builder().group("g" + g).build());
		}
		List<Long> heads = this.jdbc.queryForList(
				"SELECT min(id) FROM pgqueue.message WHERE queue = ? GROUP BY group_key ORDER BY 1", Long.class, queue);
		try (ConsumerSession session = ContextInternals.openSession(this.template.context())) {
			ConsumerSession.Claim first = session.claim(queue, 10);
			session.ack(first.messages().stream().map(ClaimedMessage::id).toList());
			ConsumerSession.Claim second = session.claim(queue, 10);
			List<Long> next = this.jdbc.queryForList(
					"SELECT min(id) FROM pgqueue.message WHERE queue = ? GROUP BY group_key ORDER BY 1", Long.class,
					queue);
			assertThat(second.messages()).extracting(ClaimedMessage::id).as("every group's head")
				.containsExactlyInAnyOrderElementsOf(next);
			assertThat(next).doesNotContainAnyElementsOf(heads);
			assertThat(this.jdbc.queryForObject("SELECT count(*) FROM pg_locks WHERE locktype = 'advisory'",
					Long.class)).as("keys held").isEqualTo(3);
			session.ack(second.messages().stream().map(ClaimedMessage::id).toList());
		}
	}

	@Test
	void aClaimTakesOnlyTheHeadOfAGroupAndLocksNothingElse() {
		this.template.sendBatch("long-group", IntStream.range(0, 1000).boxed().toList(),
				SendOptions.builder().group("one").build());
		long head = this.jdbc.queryForObject("SELECT min(id) FROM pgqueue.message WHERE queue = 'long-group'",
				Long.class);
		try (ConsumerSession session = ContextInternals.openSession(this.template.context())) {
			ConsumerSession.Claim claim = session.claim("long-group", 10);
			assertThat(claim.messages()).singleElement().satisfies((m) -> assertThat(m.id()).isEqualTo(head));
			assertThat(this.jdbc.queryForObject("SELECT count(*) FROM pg_locks WHERE locktype = 'advisory'",
					Long.class)).isEqualTo(1);
			try (ConsumerSession other = ContextInternals.openSession(this.template.context())) {
				assertThat(other.claim("long-group", 10).messages()).as("the head is held: the group waits").isEmpty();
			}
			session.ack(List.of(head));
		}
	}

	@Test
	void aPlainInsertJoinsAGroupAndDeadLetteringFreesIt() {
		this.jdbc.update("INSERT INTO pgqueue.message (queue, payload, group_key) VALUES ('sql-group', '1', 'g')");
		this.jdbc.update("INSERT INTO pgqueue.message (queue, payload, group_key) VALUES ('sql-group', '2', 'g')");
		try (ConsumerSession session = ContextInternals.openSession(this.template.context())) {
			ConsumerSession.Claim claim = session.claim("sql-group", 10);
			assertThat(claim.messages()).singleElement().satisfies((m) -> assertThat(m.payloadJson()).isEqualTo("1"));
			session.deadLetter(List.of(ConsumerSession.DeadLetter.of(claim.messages().get(0), "gave up")));
		}
		try (ConsumerSession session = ContextInternals.openSession(this.template.context())) {
			assertThat(session.claim("sql-group", 10).messages()).singleElement()
				.satisfies((m) -> assertThat(m.payloadJson()).isEqualTo("2"));
		}
		assertThat(this.jdbc.queryForObject("SELECT headers->>'pgqueue-group' FROM pgqueue.message "
				+ "WHERE queue = 'sql-group.dlq'", String.class)).isEqualTo("g");
	}

	/**
	 * A send whose transaction's snapshot predates the group's newest message records an older
	 * message as its previous one: the head test must still find the newer one in between, or the
	 * later message would overtake it once the older one is acked.
	 */
	@ParameterizedTest
	@EnumSource(ConsumptionMode.class)
	void aSendThatDidNotSeeTheGroupsNewestMessageStillWaitsForIt(ConsumptionMode mode) throws Exception {
		String queue = "unseen-" + mode.name().toLowerCase(Locale.ROOT);
		SendOptions group = SendOptions.builder().group("g").build();
		long first = this.template.send(queue, 0, group);
		long second;
		long third;
		try (Connection sender = this.listeners.app().getConnection()) {
			sender.setAutoCommit(false);
			sender.setTransactionIsolation(Connection.TRANSACTION_REPEATABLE_READ);
			try (Statement statement = sender.createStatement()) {
				statement.executeQuery("SELECT 1").close(); // takes the transaction's snapshot
			}
			second = this.template.send(queue, 1, group);
			try (PreparedStatement insert = sender.prepareStatement(
					"INSERT INTO pgqueue.message (queue, payload, group_key) VALUES (?, '2', 'g') RETURNING id")) {
				insert.setString(1, queue);
				try (ResultSet rs = insert.executeQuery()) {
					rs.next();
					third = rs.getLong(1);
				}
			}
			sender.commit();
			assertThat(second).isBetween(first, third);
		}
		assertThat(this.jdbc.queryForObject("SELECT previous_id FROM pgqueue.message WHERE id = ?", Long.class, third))
			.as("the third send's snapshot did not show the second").isEqualTo(first);
		try (ConsumerSession session = ContextInternals.openSession(this.template.context())) {
			session.ack(List.of(session.claim(queue, 10).messages().get(0).id()));
		}
		assertThat(claimedIds(mode, queue)).as("only the second is its group's head").containsExactly(second);
		assertThat(count(queue)).isEqualTo(2);
	}

	/** The ids a claim of 10 takes from {@code queue} in {@code mode}, giving them back at once. */
	private List<Long> claimedIds(ConsumptionMode mode, String queue) throws Exception {
		if (mode == ConsumptionMode.SESSION) {
			try (ConsumerSession session = ContextInternals.openSession(this.template.context())) {
				List<Long> ids = session.claim(queue, 10).messages().stream().map(ClaimedMessage::id).toList();
				session.release(ids, false);
				return ids;
			}
		}
		try (Connection connection = this.listeners.app().getConnection()) {
			connection.setAutoCommit(false);
			List<Long> ids = new ArrayList<>();
			try {
				for (Object[] row : TransactionalClaims.claim(this.template, connection, queue, 10)) {
					if (!(Boolean) row[1]) {
						ids.add((Long) row[0]);
					}
				}
			}
			finally {
				connection.rollback();
			}
			return ids;
		}
	}

}
