package io.github.pgqueue.listener;

import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.stream.Collectors;
import java.util.stream.IntStream;

import io.github.pgqueue.AckMode;
import io.github.pgqueue.ConsumptionMode;
import io.github.pgqueue.QueueAdmin;
import io.github.pgqueue.QueueDefinition;
import io.github.pgqueue.QueueTemplate;
import io.github.pgqueue.testing.EmbeddedPostgres;
import io.github.pgqueue.testing.ListenerFixture;
import io.github.pgqueue.testing.PostgresExtension;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;
import org.junit.jupiter.api.extension.RegisterExtension;

import org.springframework.jdbc.core.JdbcTemplate;

import static io.github.pgqueue.testing.Db.count;
import static io.github.pgqueue.testing.ListenerFixture.properties;
import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

/**
 * Transactional mode on real PostgreSQL when the transaction is rolled back to the claim's
 * savepoint (a handler without a savepoint of its own fails, or is interrupted by the stop): every
 * message whose handler ran since that savepoint has its writes undone, so none of them may be
 * acked; each runs again or is released. Each handler writes an effect row in its transaction, and
 * every message must take effect exactly once.
 */
@ExtendWith(PostgresExtension.class)
class TransactionalRollbackIntegrationTests {

	private final EmbeddedPostgres postgres = EmbeddedPostgres.get();

	private final JdbcTemplate jdbc = new JdbcTemplate(this.postgres.dataSource());

	@RegisterExtension
	final ListenerFixture listeners = ListenerFixture.pools("tx-rollback-app", 12, "tx-rollback-consumers", 12);

	/** The application's DataSource: handlers write through it, in the listener's transaction. */
	private final JdbcTemplate appJdbc = new JdbcTemplate(this.listeners.app());

	private final QueueTemplate template = this.listeners.template();

	private final QueueAdmin admin = this.listeners.admin();

	@BeforeEach
	void effectTable() {
		// No key on message_id: an effect written twice must show as two rows, not as a failure.
		this.jdbc.execute("DROP TABLE IF EXISTS tx_effect");
		this.jdbc.execute("CREATE TABLE tx_effect (message_id bigint NOT NULL, attempt int NOT NULL)");
	}

	/**
	 * Message 1 fails: the next {@value TransactionalStrategy#GUARDED_AFTER_FAILURE} handlers run
	 * under savepoints, a run that ends within the batch of message 105 (101 has the last one); 105
	 * then fails without a savepoint, and the rollback to the claim undoes 101's writes too.
	 */
	@Test
	void aFailureAfterTheSavepointRunEndsWithinABatchLosesNoEffectOfTheHandlersBeforeIt() {
		this.admin.declare(QueueDefinition.of("ledger").withMaxAttempts(5)
			.withBackoff(Duration.ofMillis(10), 1.0, Duration.ofMillis(10)));
		List<Long> ids = this.template.sendBatch("ledger", IntStream.rangeClosed(1, 200).boxed().toList());
		Map<Integer, AtomicInteger> runs = new ConcurrentHashMap<>();
		this.listeners.start(endpoint("ledger", 1, 10, failingOnce(Set.of(1, 105), runs)));

		await().atMost(Duration.ofSeconds(60)).until(() -> count("ledger") == 0);
		assertThat(count("ledger.dlq")).isZero();
		assertEveryEffectOnce(ids);
		assertThat(runs.get(105)).as("failed once, then its retry").hasValue(2);
	}

	@Test
	void handlersFailingOnceAtRandomUnderConcurrentPollersLoseNoEffect() {
		this.admin.declare(QueueDefinition.of("ledger").withMaxAttempts(5)
			.withBackoff(Duration.ofMillis(10), 1.0, Duration.ofMillis(10)));
		int total = 3000;
		long seed = System.nanoTime();
		Random random = new Random(seed);
		Set<Integer> failing = IntStream.range(0, total).filter((n) -> random.nextInt(100) == 0).boxed()
			.collect(Collectors.toSet());
		List<Long> ids = new ArrayList<>();
		List<Integer> payloads = IntStream.range(0, total).boxed().toList();
		for (int i = 0; i < total; i += 1000) {
			ids.addAll(this.template.sendBatch("ledger", payloads.subList(i, i + 1000)));
		}
		Map<Integer, AtomicInteger> runs = new ConcurrentHashMap<>();
		QueueMessageListener listener = failingOnce(failing, runs);
		this.listeners.start(endpoint("ledger-10", 2, 10, listener), endpoint("ledger-100", 2, 100, listener));

		await().atMost(Duration.ofSeconds(120)).until(() -> count("ledger") == 0);
		assertThat(count("ledger.dlq")).isZero();
		assertThat(failing).as("seed %d", seed).isNotEmpty();
		assertEveryEffectOnce(ids);
	}

	/**
	 * The stop interrupts a handler that has no savepoint (the run of savepoints after message 1
	 * failed ended just before it, within its batch): it gives its message back, and the rollback to
	 * the claim undoes the writes of the handler before it, which had a savepoint of its own. That
	 * message must be released with the rest, not acked.
	 */
	@Test
	void aHandlerInterruptedByTheStopReleasesTheMessagesHandledBeforeItInItsBatch() throws Exception {
		this.admin.declare(QueueDefinition.of("ledger").withMaxAttempts(5));
		List<Long> ids = this.template.sendBatch("ledger", IntStream.rangeClosed(1, 200).boxed().toList());
		int blocking = 2 + TransactionalStrategy.GUARDED_AFTER_FAILURE;
		CountDownLatch blocked = new CountDownLatch(1);
		Map<Integer, AtomicInteger> runs = new ConcurrentHashMap<>();
		QueueMessageListener listener = (message, ack) -> {
			int n = (Integer) message.payload();
			runs.computeIfAbsent(n, (k) -> new AtomicInteger()).incrementAndGet();
			this.appJdbc.update("INSERT INTO tx_effect (message_id, attempt) VALUES (?, ?)", message.id(),
					message.attempt());
			if (n == 1) {
				throw new IllegalStateException("message 1 fails");
			}
			if (n == blocking) {
				blocked.countDown();
				new CountDownLatch(1).await(); // until the stop interrupts it
			}
		};
		// Message 1 is dead-lettered at its failure, so that it does not come back among the others.
		QueueErrorHandler deadLetter = (message, error, backoff) -> FailureAction.deadLetter("fails");
		this.listeners.registry(Duration.ofMillis(200));
		this.listeners.start(ListenerFixture.endpoint("ledger", Integer.class, listener,
				properties("ledger").errorHandler(deadLetter).mode(ConsumptionMode.TRANSACTIONAL)));
		assertThat(blocked.await(30, TimeUnit.SECONDS)).isTrue();
		this.listeners.stop();

		Set<Long> left = Set.copyOf(this.jdbc.queryForList("SELECT id FROM pgqueue.message WHERE queue = 'ledger'",
				Long.class));
		Map<Long, Long> effects = effects();
		List<Long> ackedWithoutEffect = ids.subList(1, ids.size()).stream()
			.filter((id) -> !left.contains(id) && !effects.containsKey(id)).toList();
		assertThat(ackedWithoutEffect).as("deleted, their writes rolled back").isEmpty();
		assertThat(left).as("the interrupted message is given back").contains(ids.get(blocking - 1));
		assertThat(runs.get(blocking - 1)).as("the message before it ran").hasValue(1);

		// The rest runs on a new listener; each message takes effect once in all.
		this.listeners.start(endpoint("ledger-again", 1, 10, failingOnce(Set.of(), runs)));
		await().atMost(Duration.ofSeconds(60)).until(() -> count("ledger") == 0);
		assertThat(count("ledger.dlq")).isEqualTo(1);
		assertEveryEffectOnce(ids.subList(1, ids.size()));
		assertThat(effects()).doesNotContainKey(ids.get(0));
	}

	/**
	 * A handler that acknowledges its message and then throws has its writes rolled back: its ack
	 * cannot stand (the message would be deleted with no effect), so the throw fails the attempt.
	 */
	@Test
	void aHandlerThatAcksThenThrowsFailsItsAttemptRatherThanDeletingItsMessageWithoutEffect() {
		this.admin.declare(QueueDefinition.of("ledger").withMaxAttempts(3)
			.withBackoff(Duration.ofMillis(10), 1.0, Duration.ofMillis(10)));
		List<Long> ids = this.template.sendBatch("ledger", List.of(1, 2, 3, 4));
		Map<Integer, AtomicInteger> runs = new ConcurrentHashMap<>();
		this.listeners.start(ListenerFixture.endpoint("ledger", Integer.class, (message, ack) -> {
			int n = (Integer) message.payload();
			runs.computeIfAbsent(n, (k) -> new AtomicInteger()).incrementAndGet();
			this.appJdbc.update("INSERT INTO tx_effect (message_id, attempt) VALUES (?, ?)", message.id(),
					message.attempt());
			ack.ack();
			if (message.attempt() == 1 && (n == 1 || n == 3)) {
				throw new IllegalStateException("message " + n + " fails after its ack");
			}
		}, properties("ledger").ackMode(AckMode.MANUAL).mode(ConsumptionMode.TRANSACTIONAL)));

		await().atMost(Duration.ofSeconds(30)).until(() -> count("ledger") == 0);
		assertThat(count("ledger.dlq")).isZero();
		assertEveryEffectOnce(ids);
		assertThat(this.jdbc.queryForList("SELECT attempt FROM tx_effect WHERE message_id IN (?, ?)", Integer.class,
				ids.get(0), ids.get(2))).as("taken effect on their second attempt").containsExactly(2, 2);
	}

	/** A handler that writes its effect, then fails on the first run of the payloads in {@code failing}. */
	private QueueMessageListener failingOnce(Set<Integer> failing, Map<Integer, AtomicInteger> runs) {
		return (message, ack) -> {
			int n = (Integer) message.payload();
			int run = runs.computeIfAbsent(n, (k) -> new AtomicInteger()).incrementAndGet();
			this.appJdbc.update("INSERT INTO tx_effect (message_id, attempt) VALUES (?, ?)", message.id(),
					message.attempt());
			if (run == 1 && failing.contains(n)) {
				throw new IllegalStateException("first run of message " + n + " fails");
			}
		};
	}

	/** Every message of {@code ids} has exactly one effect row: none lost, none doubled. */
	private void assertEveryEffectOnce(List<Long> ids) {
		Map<Long, Long> effects = effects();
		List<Long> lost = ids.stream().filter((id) -> !effects.containsKey(id)).toList();
		Map<Long, Long> doubled = effects.entrySet().stream().filter((e) -> e.getValue() > 1)
			.collect(Collectors.toMap(Map.Entry::getKey, Map.Entry::getValue));
		assertThat(lost).as("%d of %d messages gone without their effect", lost.size(), ids.size()).isEmpty();
		assertThat(doubled).as("messages whose effect committed more than once").isEmpty();
		assertThat(effects.keySet()).containsExactlyInAnyOrderElementsOf(ids);
	}

	/** How many effect rows each message has. */
	private Map<Long, Long> effects() {
		Map<Long, Long> effects = new HashMap<>();
		this.jdbc.query("SELECT message_id, count(*) FROM tx_effect GROUP BY message_id",
				(rs) -> {
					effects.put(rs.getLong(1), rs.getLong(2));
				});
		return effects;
	}

	private QueueListenerEndpoint endpoint(String id, int concurrency, int batchSize, QueueMessageListener listener) {
		return ListenerFixture.endpoint(id, Integer.class, listener,
				properties("ledger").concurrency(concurrency).batchSize(batchSize).mode(ConsumptionMode.TRANSACTIONAL));
	}

}
