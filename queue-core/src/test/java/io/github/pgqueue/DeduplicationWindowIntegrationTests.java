package io.github.pgqueue;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;

import javax.sql.DataSource;

import com.zaxxer.hikari.HikariDataSource;
import io.github.pgqueue.internal.ConsumerSession;
import io.github.pgqueue.AckMode;
import io.github.pgqueue.testing.EmbeddedPostgres;
import io.github.pgqueue.testing.ListenerFixture;
import io.github.pgqueue.testing.PostgresExtension;
import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;
import org.junit.jupiter.api.extension.RegisterExtension;

import org.springframework.jdbc.core.JdbcTemplate;
import org.springframework.jdbc.support.JdbcTransactionManager;
import org.springframework.transaction.support.TransactionTemplate;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatIllegalArgumentException;

/**
 * Deduplication windows: a key is refused for the queue's window after its message completed, by
 * every way a message completes, under concurrent senders and consumers.
 */
@ExtendWith(PostgresExtension.class)
class DeduplicationWindowIntegrationTests {

	/** The schema of {@link #expiredKeysAreDeletedByLaterCompletionsThroughTheIndex()}. */
	private static final String EXPIRY_SCHEMA = "pgqueue_key_expiry";

	private final DataSource dataSource = EmbeddedPostgres.get().dataSource();

	private final JdbcTemplate jdbc = new JdbcTemplate(this.dataSource);

	private final SimpleMeterRegistry meters = new SimpleMeterRegistry();

	private final QueueTemplate template = new QueueTemplate(
			QueueContext.builder(this.dataSource).meterRegistry(this.meters).build());

	private final QueueAdmin admin = new QueueAdmin(this.template.context());

	@RegisterExtension
	final ListenerFixture listeners = ListenerFixture.consumers("window-consumers", 4);

	private static SendOptions key(String key) {
		return SendOptions.builder().deduplicationKey(key).build();
	}

	private void window(String queue, Duration window) {
		this.admin.declare(QueueDefinition.of(queue).withDeduplicationWindow(window));
	}

	@Test
	void anAckedMessagesKeyIsRefusedUntilTheWindowEnds() {
		window("orders", Duration.ofHours(1));
		long first = this.template.send("orders", "a", key("order-17"));
		ack("orders", 1);

		assertThat(this.template.send("orders", "b", key("order-17"))).as("the completed message's id").isEqualTo(first);
		assertThat(this.jdbc.queryForObject("SELECT count(*) FROM pgqueue.message WHERE queue = 'orders'", Long.class))
			.isZero();
		assertThat(this.meters.get("pgqueue.messages.sent").tag("queue", "orders").counter().count())
			.as("only the send that inserted").isEqualTo(1);

		this.jdbc.update("UPDATE pgqueue.deduplication_key SET kept_until = now() - interval '1 second'");
		long second = this.template.send("orders", "c", key("order-17"));
		assertThat(second).as("free again once the window passed").isNotEqualTo(first);
		assertThat(this.template.send("orders", "d", key("order-17"))).as("held by the new message").isEqualTo(second);
	}

	@Test
	void cancelledPurgedAndDeadLetteredMessagesKeepTheirKeys() {
		window("jobs", Duration.ofHours(1));
		long cancelled = this.template.send("jobs", "a", key("cancelled"));
		assertThat(this.template.cancel("jobs", cancelled)).isEqualTo(CancelResult.REMOVED);
		long purged = this.template.send("jobs", "b", key("purged"));
		assertThat(this.admin.purge("jobs", QueueAdmin.Purge.ALL)).isEqualTo(1);
		long deadLettered = this.template.send("jobs", "c", key("dead"));
		try (ConsumerSession session = this.template.context().openSession()) {
			ConsumerSession.Claim claim = session.claim("jobs", 10);
			session.deadLetter(List.of(ConsumerSession.DeadLetter.of(claim.messages().get(0), "no")));
		}

		assertThat(this.template.send("jobs", "x", key("cancelled"))).isEqualTo(cancelled);
		assertThat(this.template.send("jobs", "y", key("purged"))).isEqualTo(purged);
		assertThat(this.template.send("jobs", "z", key("dead"))).isEqualTo(deadLettered);
		assertThat(this.jdbc.queryForObject("SELECT count(*) FROM pgqueue.message WHERE queue = 'jobs'", Long.class))
			.isZero();
	}

	@Test
	void aQueueWithoutAWindowFreesTheKeyOnCompletionAsBefore() {
		this.admin.declare(QueueDefinition.of("plain"));
		long first = this.template.send("plain", "a", key("k"));
		ack("plain", 1);
		assertThat(this.template.send("plain", "b", key("k"))).isNotEqualTo(first);
		assertThat(this.jdbc.queryForObject("SELECT count(*) FROM pgqueue.deduplication_key", Long.class)).isZero();
	}

	@Test
	void aRolledBackSendLeavesTheKeyFree() {
		window("tx", Duration.ofHours(1));
		TransactionTemplate transactions = new TransactionTemplate(new JdbcTransactionManager(this.dataSource));
		transactions.executeWithoutResult((status) -> {
			this.template.send("tx", "a", key("k"));
			status.setRollbackOnly();
		});
		long sent = this.template.send("tx", "b", key("k"));
		assertThat(this.jdbc.queryForObject("SELECT payload #>> '{}' FROM pgqueue.message WHERE id = ?", String.class,
				sent)).isEqualTo("b");
	}

	/**
	 * Eight threads send the same keys over and over while two consumers ack what arrives: with a
	 * window longer than the test, each key is inserted once. Without one, an acked key is free and
	 * is sent again (the test fails if the window is left out of the declaration).
	 */
	@Test
	void eightSendersAndTwoConsumersInsertEachKeyOnce() throws Exception {
		window("race", Duration.ofHours(1));
		int keys = 200;
		Map<String, Set<Long>> idsByKey = new ConcurrentHashMap<>();
		AtomicBoolean sending = new AtomicBoolean(true);
		AtomicInteger acked = new AtomicInteger();
		ExecutorService threads = Executors.newFixedThreadPool(10);
		CountDownLatch start = new CountDownLatch(1);
		List<Future<?>> senders = eightSenders(threads, start, "race", keys, idsByKey);
		List<Future<?>> consumers = new ArrayList<>();
		for (int c = 0; c < 2; c++) {
			consumers.add(threads.submit(() -> {
				start.await();
				try (ConsumerSession session = this.template.context().openSession()) {
					while (sending.get() || this.jdbc.queryForObject(
							"SELECT count(*) FROM pgqueue.message WHERE queue = 'race'", Long.class) > 0) {
						ConsumerSession.Claim claim = session.claim("race", 10);
						List<Long> ids = claim.messages().stream().map((m) -> m.id()).toList();
						if (!ids.isEmpty()) {
							session.ack(ids);
							acked.addAndGet(ids.size());
						}
					}
				}
				return null;
			}));
		}
		start.countDown();
		for (Future<?> sender : senders) {
			sender.get(120, TimeUnit.SECONDS);
		}
		sending.set(false);
		for (Future<?> consumer : consumers) {
			consumer.get(60, TimeUnit.SECONDS);
		}
		threads.shutdown();

		assertThat(acked.get()).as("each key delivered once").isEqualTo(keys);
		assertThat(idsByKey).hasSize(keys);
		idsByKey.forEach((k, ids) -> assertThat(ids).as("ids returned for %s", k).hasSize(1));
		assertThat(this.jdbc.queryForObject("SELECT count(*) FROM pgqueue.deduplication_key WHERE queue = 'race' "
				+ "AND kept_until > now()", Long.class)).isEqualTo(keys);
	}

	/**
	 * As above with transactional listeners, whose acks keep the keys in the handlers' transactions
	 * (one in ten handled messages fails its first run, so retries and rollbacks come between the
	 * acks): each key is inserted once, every send of it gets the one id, and the handlers' writes,
	 * made in their transactions, commit once per key. (A failure rolls back and runs again the
	 * handlers before it in its batch, so handler calls are not counted.)
	 */
	@Test
	void eightSendersAndTransactionalListenersHandleEachKeyOnce() throws Exception {
		window("tx-race", Duration.ofHours(1));
		int keys = 200;
		Map<String, Set<Long>> idsByKey = new ConcurrentHashMap<>();
		this.jdbc.execute("CREATE TABLE public.window_handled (key text NOT NULL)");
		ExecutorService threads = Executors.newFixedThreadPool(8);
		try {
			AtomicInteger runs = new AtomicInteger();
			this.listeners.start(ListenerFixture.endpoint("tx-race", String.class, (message, ack) -> {
				this.jdbc.update("INSERT INTO public.window_handled (key) VALUES (?)", message.payload());
				if (runs.incrementAndGet() % 10 == 0 && message.attempt() == 1) {
					throw new IllegalStateException("first run of a tenth message");
				}
			}, ListenerFixture.properties("tx-race").concurrency(2).batchSize(10).ackMode(AckMode.AUTO)
				.mode(ConsumptionMode.TRANSACTIONAL)));
			CountDownLatch start = new CountDownLatch(1);
			List<Future<?>> senders = eightSenders(threads, start, "tx-race", keys, idsByKey);
			start.countDown();
			for (Future<?> sender : senders) {
				sender.get(120, TimeUnit.SECONDS);
			}
			org.awaitility.Awaitility.await().atMost(Duration.ofSeconds(60)).until(() -> this.jdbc.queryForObject(
					"SELECT count(*) FROM pgqueue.message WHERE queue = 'tx-race'", Long.class) == 0);
			this.listeners.stop();

			assertThat(this.jdbc.queryForObject("SELECT count(DISTINCT key) FROM public.window_handled", Long.class))
				.as("keys handled").isEqualTo(keys);
			assertThat(this.jdbc.queryForList("SELECT key FROM public.window_handled GROUP BY key HAVING count(*) > 1",
					String.class)).as("keys whose handling committed more than once").isEmpty();
		}
		finally {
			threads.shutdownNow();
			this.listeners.stop();
			this.jdbc.execute("DROP TABLE public.window_handled");
		}
		assertThat(idsByKey).hasSize(keys);
		idsByKey.forEach((k, ids) -> assertThat(ids).as("ids returned for %s", k).hasSize(1));
		assertThat(this.jdbc.queryForObject("SELECT count(*) FROM pgqueue.deduplication_key WHERE queue = 'tx-race' "
				+ "AND kept_until > now()", Long.class)).isEqualTo(keys);
	}

	/**
	 * On a schema of its own, whose key table no other test's statements read. A backend may hold
	 * its scan counts back for seconds while it is idle, and reports them when it ends at the
	 * latest: the set-up and the measured sends and acks each run on a pool of their own, closed,
	 * and the counter is read once that pool's backends have ended. The keys left are read (a scan)
	 * after that.
	 */
	@Test
	void expiredKeysAreDeletedByLaterCompletionsThroughTheIndex() {
		EmbeddedPostgres postgres = EmbeddedPostgres.get();
		try (HikariDataSource setUp = postgres.pool("key-expiry-set-up", 2)) {
			postgres.migrate(setUp, EXPIRY_SCHEMA, null);
			JdbcTemplate setUpJdbc = new JdbcTemplate(setUp);
			setUpJdbc.execute("TRUNCATE " + EXPIRY_SCHEMA + ".message, " + EXPIRY_SCHEMA + ".deduplication_key");
			QueueTemplate setUpTemplate = new QueueTemplate(
					QueueContext.builder(setUp).schema(EXPIRY_SCHEMA).build());
			new QueueAdmin(setUpTemplate.context())
				.declare(QueueDefinition.of("expiring").withDeduplicationWindow(Duration.ofHours(1)));
			for (int i = 0; i < 20; i++) {
				setUpTemplate.send("expiring", i, key("old-" + i));
			}
			ack(setUpTemplate, "expiring", 20);
			setUpJdbc.execute("UPDATE " + EXPIRY_SCHEMA + ".deduplication_key SET kept_until = now() - interval '1 second' "
					+ "WHERE kept_until IS NOT NULL");
		}
		long scansBefore = sequentialScansReportedBy("key-expiry-set-up");

		try (HikariDataSource measured = postgres.pool("key-expiry", 2)) {
			QueueTemplate measuredTemplate = new QueueTemplate(
					QueueContext.builder(measured).schema(EXPIRY_SCHEMA).build());
			for (int i = 0; i < 10; i++) {
				measuredTemplate.send("expiring", i, key("new-" + i));
			}
			ack(measuredTemplate, "expiring", 10);
		}

		assertThat(sequentialScansReportedBy("key-expiry")).as("no sequential scan of the kept keys")
			.isEqualTo(scansBefore);
		assertThat(this.jdbc.queryForList("SELECT key FROM " + EXPIRY_SCHEMA + ".deduplication_key ORDER BY key",
				String.class))
			.as("each completion deletes two expired keys").hasSize(10).allMatch((k) -> k.startsWith("new-"));
	}

	@Test
	void theWindowIsPartOfTheDefinitionAndCanBeRemoved() {
		window("listed", Duration.ofMinutes(5));
		assertThat(this.admin.list()).filteredOn((q) -> q.definition().name().equals("listed"))
			.singleElement()
			.satisfies((q) -> assertThat(q.definition().deduplicationWindow()).isEqualTo(Duration.ofMinutes(5)));
		long first = this.template.send("listed", "a", key("k"));
		this.admin.alter(QueueDefinition.of("listed"));
		ack("listed", 1);
		assertThat(this.template.send("listed", "b", key("k"))).as("no window any more").isNotEqualTo(first);
		assertThat(this.admin.list()).filteredOn((q) -> q.definition().name().equals("listed"))
			.singleElement()
			.satisfies((q) -> assertThat(q.definition().deduplicationWindow()).isNull());
	}

	@Test
	void aWindowShorterThanAMillisecondIsRefusedSayingSo() {
		assertThatIllegalArgumentException()
			.isThrownBy(() -> QueueDefinition.of("q").withDeduplicationWindow(Duration.ofNanos(10)))
			.withMessage("Queue 'q': deduplication window must be at least 1 ms, was PT0.00000001S; leave it null "
					+ "for none");
		assertThatIllegalArgumentException()
			.isThrownBy(() -> QueueDefinition.of("q").withDeduplicationWindow(Duration.ofMinutes(-5)))
			.withMessageContaining("was PT-5M");
	}

	/**
	 * Eight threads that, once {@code start} opens, each send keys k0 to k{keys - 1} five times over to
	 * {@code queue}, from a different key each, recording the ids the sends return by key.
	 */
	private List<Future<?>> eightSenders(ExecutorService threads, CountDownLatch start, String queue, int keys,
			Map<String, Set<Long>> idsByKey) {
		List<Future<?>> senders = new ArrayList<>();
		for (int t = 0; t < 8; t++) {
			int offset = t * 25;
			senders.add(threads.submit(() -> {
				start.await();
				for (int round = 0; round < 5; round++) {
					for (int i = 0; i < keys; i++) {
						String k = "k" + ((i + offset) % keys);
						long id = this.template.send(queue, k, key(k));
						idsByKey.computeIfAbsent(k, (x) -> ConcurrentHashMap.newKeySet()).add(id);
					}
				}
				return null;
			}));
		}
		return senders;
	}

	private void ack(String queue, int count) {
		ack(this.template, queue, count);
	}

	private static void ack(QueueTemplate template, String queue, int count) {
		try (ConsumerSession session = template.context().openSession()) {
			int acked = 0;
			while (acked < count) {
				List<Long> ids = session.claim(queue, count - acked).messages().stream().map((m) -> m.id()).toList();
				assertThat(ids).as("messages left to ack in %s", queue).isNotEmpty();
				session.ack(ids);
				acked += ids.size();
			}
		}
	}

	/**
	 * The key table's sequential scans once the backends of the closed pool {@code name} have ended.
	 * From PostgreSQL 15 a backend writes its counts as it ends, before it leaves
	 * {@code pg_stat_activity}; PostgreSQL 14 sends them to its collector, whose file readers may
	 * find half a second old: the count once two reads 600 ms apart agree.
	 */
	private long sequentialScansReportedBy(String name) {
		org.awaitility.Awaitility.await().atMost(Duration.ofSeconds(10)).until(() -> this.jdbc.queryForObject(
				"SELECT count(*) FROM pg_stat_activity WHERE application_name = ?", Long.class, name) == 0);
		long[] last = { -1 };
		return org.awaitility.Awaitility.await().atMost(Duration.ofSeconds(10)).pollInterval(Duration.ofMillis(600))
			.until(() -> {
				long scans = this.jdbc.queryForObject("SELECT seq_scan FROM pg_stat_user_tables WHERE relid = '"
						+ EXPIRY_SCHEMA + ".deduplication_key'::regclass", Long.class);
				boolean settled = scans == last[0];
				last[0] = scans;
				return settled ? scans : null;
			}, java.util.Objects::nonNull);
	}

}
