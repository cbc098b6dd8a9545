package io.github.pgqueue;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;
import java.util.stream.IntStream;

import javax.sql.DataSource;

import io.github.pgqueue.internal.ClaimedMessage;
import io.github.pgqueue.internal.ConsumerSession;
import io.github.pgqueue.testing.EmbeddedPostgres;
import io.github.pgqueue.testing.PostgresExtension;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import org.springframework.jdbc.core.JdbcTemplate;

import static io.github.pgqueue.testing.Db.advisoryLocks;
import static io.github.pgqueue.testing.Db.count;
import static io.github.pgqueue.testing.Db.queryForLong;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/**
 * The session-mode protocol under concurrency, on a real PostgreSQL: every delivery is counted by
 * id, and every test ends by checking that no advisory lock is left.
 */
@ExtendWith(PostgresExtension.class)
class DeliveryProtocolIntegrationTests {

	private static final Logger logger = LoggerFactory.getLogger(DeliveryProtocolIntegrationTests.class);

	private final DataSource dataSource = EmbeddedPostgres.get().dataSource();

	private final JdbcTemplate jdbc = new JdbcTemplate(this.dataSource);

	private final QueueTemplate template = QueueTemplate.builder(this.dataSource).build();

	private final QueueAdmin admin = new QueueAdmin(this.template.context());

	@Test
	void eightConsumersDrainTwentyThousandMessagesDeliveringEachExactlyOnce() throws Exception {
		List<Long> sent = sendMany("drain", 20_000);
		long started = System.nanoTime();
		Map<Long, AtomicInteger> deliveries = drain("drain", 8, 10, sent.size());
		double seconds = (System.nanoTime() - started) / 1e9;
		logger.info("8 consumers, batch 10: drained {} messages in {} s ({} msgs/s)", sent.size(),
				String.format("%.2f", seconds), String.format("%.0f", sent.size() / seconds));
		assertEachDeliveredOnce(deliveries, sent);
	}

	@Test
	void manyConsumersWithTinyBatchesAndInstantAcksNeverShareAMessage() throws Exception {
		// The snapshot race: a claim's snapshot still shows rows another consumer has just acked
		// and unlocked, so the lock succeeds on a deleted row. Only the re-check stops it.
		List<Long> sent = sendMany("race", 6_000);
		Map<Long, AtomicInteger> deliveries = drain("race", 16, 1, sent.size());
		assertEachDeliveredOnce(deliveries, sent);
	}

	@Test
	void cancelRacingFourConsumersEitherRemovesAMessageOrLeavesItToExactlyOneConsumer() throws Exception {
		List<Long> sent = sendMany("cancel-race", 3_000);
		Map<Long, CancelResult> cancelled = new ConcurrentHashMap<>();
		List<Long> order = new ArrayList<>(sent);
		java.util.Collections.shuffle(order, new java.util.Random(42));
		Thread canceller = new Thread(() -> order.forEach((id) -> cancelled.put(id, this.template.cancel("cancel-race", id))));
		canceller.start();
		Map<Long, AtomicInteger> deliveries = drain("cancel-race", 4, 5,
				() -> !canceller.isAlive() && count() == 0);
		canceller.join();
		List<Long> removed = cancelled.entrySet().stream().filter((e) -> e.getValue() == CancelResult.REMOVED)
			.map(Map.Entry::getKey).toList();
		assertThat(removed).as("some cancels won the race").isNotEmpty();
		assertThat(deliveries.keySet()).as("a removed message is never delivered").doesNotContainAnyElementsOf(removed);
		List<Long> notRemoved = sent.stream().filter((id) -> !removed.contains(id)).toList();
		assertThat(deliveries.keySet()).as("every other message is delivered").containsExactlyInAnyOrderElementsOf(notRemoved);
		assertThat(deliveries.values()).as("exactly once").allMatch((n) -> n.get() == 1);
		assertThat(advisoryLocks()).isZero();
	}

	@Test
	void redriveRacingDeadLetterConsumersDeliversEveryMessageExactlyOnce() throws Exception {
		List<Long> sent = sendMany("r.dlq", 2_000);
		// As if dead-lettered from "r": a redrive moves only what came from the queue it is asked for.
		this.jdbc.update("UPDATE pgqueue.message SET headers = '{\"pgqueue-dead-lettered-from\": \"r\"}'");
		java.util.concurrent.atomic.AtomicBoolean redriving = new java.util.concurrent.atomic.AtomicBoolean(true);
		Thread redriver = new Thread(() -> {
			while (count("r.dlq") > 0) {
				this.admin.redrive("r", 25);
			}
			redriving.set(false);
		});
		redriver.start();
		java.util.function.BooleanSupplier done = () -> !redriving.get()
				&& count() == 0;
		var fromMain = java.util.concurrent.CompletableFuture.supplyAsync(() -> {
			try {
				return drain("r", 2, 10, done);
			}
			catch (Exception ex) {
				throw new IllegalStateException(ex);
			}
		});
		Map<Long, AtomicInteger> fromDeadLetters = drain("r.dlq", 2, 10, done);
		redriver.join();
		Map<Long, AtomicInteger> all = new java.util.HashMap<>(fromDeadLetters);
		fromMain.get(180, TimeUnit.SECONDS).forEach((id, n) -> all.merge(id, n,
				(a, b) -> new AtomicInteger(a.get() + b.get())));
		assertThat(fromMain.get()).as("the redrive moved some").isNotEmpty();
		assertThat(fromDeadLetters).as("the consumers took some").isNotEmpty();
		assertEachDeliveredOnce(all, sent);
	}

	@Test
	void claimingOneOfTenThousandLocksExactlyOne() {
		sendMany("big", 10_000);
		try (ConsumerSession session = this.template.context().openSession()) {
			List<ClaimedMessage> claimed = session.claim("big", 1).messages();
			assertThat(claimed).hasSize(1);
			assertThat(this.jdbc.queryForObject(
					"SELECT count(*) FROM pg_locks WHERE locktype = 'advisory' AND pid = ?", Long.class,
					session.backendPid())).isEqualTo(1);
			session.ack(List.of(claimed.get(0).id()));
		}
		assertThat(advisoryLocks()).isZero();
	}

	@Test
	void lockKeysUseTheNamespaceStoredInTheSchemaWithTheFoldedId() {
		long id = this.template.send("keys", "x");
		long oid = this.jdbc.queryForObject("SELECT 'pgqueue.message'::regclass::oid::bigint", Long.class);
		assertThat(this.template.context().lockNamespace()).as("by default the message table's oid, stored at migration")
			.isEqualTo((int) oid);
		assertThat(this.jdbc.queryForObject("SELECT lock_namespace FROM pgqueue.setting", Integer.class))
			.isEqualTo((int) oid);
		QueueTemplate disagreeing = new QueueTemplate(QueueContext.builder(this.dataSource).lockNamespace(4242).build());
		assertThatThrownBy(disagreeing.context()::lockNamespace).isInstanceOf(IllegalStateException.class)
			.hasMessageContaining("4242").hasMessageContaining(String.valueOf(oid));

		EmbeddedPostgres.get().migrate("pgqueue_ns", 4242);
		QueueTemplate custom = new QueueTemplate(QueueContext.builder(this.dataSource).schema("pgqueue_ns").build());
		long other = custom.send("keys", "y");
		try (ConsumerSession session = custom.context().openSession()) {
			assertThat(session.claim("keys", 1).messages()).hasSize(1);
			assertThat(this.jdbc.queryForList("SELECT classid::bigint || '/' || objid::bigint FROM pg_locks "
					+ "WHERE locktype = 'advisory' AND objsubid = 2", String.class)).containsExactly("4242/" + other);
			assertThat(this.template.stats("keys").inFlight()).as("another namespace is invisible").isZero();
			assertThat(custom.stats("keys").inFlight()).isEqualTo(1);
		}
		assertThat(id).isPositive();
	}

	@Test
	void claimInPriorityOrderLocksOnlyTheRowsItReturns() {
		for (int priority = 5; priority >= 0; priority--) {
			this.template.sendBatch("prio", List.of("a", "b", "c"), SendOptions.builder().priority(priority).build());
		}
		try (ConsumerSession session = this.template.context().openSession()) {
			List<ClaimedMessage> claimed = session.claim("prio", 4).messages();
			assertThat(claimed).extracting(ClaimedMessage::priority).containsExactly(0, 0, 0, 1);
			assertThat(this.jdbc.queryForObject(
					"SELECT count(*) FROM pg_locks WHERE locktype = 'advisory' AND pid = ?", Long.class,
					session.backendPid())).isEqualTo(4);
		}
		assertThat(advisoryLocks()).isZero();
	}

	@Test
	void messagesOfATerminatedSessionGoToAnotherConsumerAndTheOldLeaseCannotAck() {
		long id = this.template.send("orders", "o-1");
		Lease<String> lease = this.template.receive("orders", String.class).orElseThrow();
		assertThat(this.template.receive("orders", String.class)).as("held").isEmpty();

		terminateSessionsHoldingLocks();

		try (Lease<String> again = this.template.receive("orders", String.class).orElseThrow()) {
			assertThat(again.message().id()).isEqualTo(id);
			assertThat(again.message().attempt()).isEqualTo(2);
			assertThatThrownBy(lease::ack).isInstanceOf(LeaseLostException.class)
				.hasMessageContaining("has ended")
				.hasMessageContaining("will be delivered again");
			again.ack();
		}
		assertThat(count()).isZero();
		assertThat(advisoryLocks()).isZero();
	}

	@Test
	void aBatchOfATerminatedSessionIsRedeliveredInTurnAndTheSessionRefusesToAck() {
		List<Long> sent = sendMany("batch", 5);
		this.template.send("batch", "not held");
		ConsumerSession dying = this.template.context().openSession();
		List<ClaimedMessage> first = dying.claim("batch", 5).messages();
		assertThat(first).hasSize(5);
		terminateSessionsHoldingLocks();
		List<Long> redelivered = new ArrayList<>();
		try (ConsumerSession other = this.template.context().openSession()) {
			ConsumerSession.Claim orphans = other.claim("batch", 10);
			assertThat(orphans.inTurn()).as("messages whose consumer died are handed out in turn").isTrue();
			assertThat(orphans.messages()).as("without the message nobody held").hasSize(5)
				.allMatch((message) -> message.attempt() == 2);
			for (ClaimedMessage orphan : orphans.messages()) {
				redelivered.add(orphan.id());
				other.ack(List.of(orphan.id()));
			}
			assertThat(other.claim("batch", 10).inTurn()).isFalse();
			assertThatThrownBy(() -> dying.ack(sent)).isInstanceOf(LeaseLostException.class);
			assertThat(dying.isLost()).isTrue();
			assertThatThrownBy(() -> dying.claim("batch", 1)).isInstanceOf(LeaseLostException.class);
		}
		assertThat(redelivered).containsExactlyElementsOf(sent);
		dying.close();
		assertThat(advisoryLocks()).isZero();
	}

	@Test
	void aClaimWritesNoMessageRowOnlyItsSessionsHoldingRowWhichOutlivesASessionThatDies() {
		List<Long> sent = sendMany("quiet", 10);
		String versions = "SELECT string_agg(ctid::text || xmin::text, ',' ORDER BY id) FROM pgqueue.message WHERE queue = 'quiet'";
		String before = this.jdbc.queryForObject(versions, String.class);
		ConsumerSession dying = this.template.context().openSession();
		List<ClaimedMessage> batch = dying.claim("quiet", 4).messages();
		assertThat(batch).extracting(ClaimedMessage::attempt).containsOnly(1);
		assertThat(this.jdbc.queryForObject(versions, String.class)).as("no row version written by the claim")
			.isEqualTo(before);
		assertThat(heldBy(dying)).containsExactlyElementsOf(sent.subList(0, 4));
		dying.ack(List.of(sent.get(0)));
		assertThat(heldBy(dying)).containsExactlyElementsOf(sent.subList(1, 4));

		terminateSessionsHoldingLocks();
		try (ConsumerSession other = this.template.context().openSession()) {
			assertThat(heldBy(dying))
				.as("the dead session's row stays while its messages are left to be counted")
				.containsExactlyElementsOf(sent.subList(1, 4));
			ConsumerSession.Claim orphans = other.claim("quiet", 10);
			assertThat(orphans.messages()).as("the held messages of the dead session come first, on their own")
				.extracting(ClaimedMessage::id, ClaimedMessage::attempt)
				.containsExactly(org.assertj.core.groups.Tuple.tuple(sent.get(1), 2),
						org.assertj.core.groups.Tuple.tuple(sent.get(2), 2),
						org.assertj.core.groups.Tuple.tuple(sent.get(3), 2));
			assertThat(orphans.inTurn()).isTrue();
			assertThat(heldBy(dying)).as("their lost attempts counted, the dead session lists them no more").isEmpty();
			assertThat(heldBy(other)).as("listed in the order they are handed out")
				.containsExactlyElementsOf(sent.subList(1, 4));
			other.retry(List.of(new ConsumerSession.Retry(sent.get(1), Duration.ofDays(1), "later")));
			assertThat(this.jdbc.queryForObject("SELECT attempts FROM pgqueue.message WHERE id = ?", Integer.class,
					sent.get(1))).as("the lost attempt and the failed one").isEqualTo(2);
			assertThat(heldBy(other)).containsExactlyElementsOf(sent.subList(2, 4));
			for (int i = 2; i < 4; i++) {
				other.ack(List.of(sent.get(i)));
			}
			List<ClaimedMessage> rest = other.claim("quiet", 10).messages();
			assertThat(rest).extracting(ClaimedMessage::id).containsExactlyElementsOf(sent.subList(4, 10));
			other.ack(rest.stream().map(ClaimedMessage::id).toList());
		}
		dying.close();
		try (ConsumerSession next = this.template.context().openSession()) {
			assertThat(queryForLong("SELECT count(*) FROM pgqueue.holding")).as("only the open session's row is left")
				.isEqualTo(1);
		}
		assertThat(queryForLong("SELECT count(*) FROM pgqueue.holding")).as("a session that ends deletes its row").isZero();
		assertThat(advisoryLocks()).isZero();
	}

	/**
	 * A completion gives up its session lock in its statement but keeps the message's key until it
	 * commits: a claim made in between passes over the message as held, at once, and does not lock
	 * it (with the key released before the commit, the claim locked it and then waited in its
	 * re-check on the uncommitted delete). The commit is held open by a deferred trigger that waits
	 * for a lock the test holds.
	 */
	@Test
	void aMessageBeingAckedStaysTakenUntilItsAckCommits() throws Exception {
		List<Long> sent = sendMany("handover", 2);
		this.jdbc.execute("""
				CREATE FUNCTION public.handover_commit_gate() RETURNS trigger LANGUAGE plpgsql AS $$
				BEGIN PERFORM pg_advisory_lock(4242); PERFORM pg_advisory_unlock(4242); RETURN NULL; END $$""");
		this.jdbc.execute("""
				CREATE CONSTRAINT TRIGGER handover_commit_gate AFTER DELETE ON pgqueue.message
				DEFERRABLE INITIALLY DEFERRED FOR EACH ROW EXECUTE FUNCTION public.handover_commit_gate()""");
		ExecutorService pool = Executors.newFixedThreadPool(2);
		try (java.sql.Connection gate = this.dataSource.getConnection();
				ConsumerSession acking = this.template.context().openSession();
				ConsumerSession claiming = this.template.context().openSession()) {
			gate.createStatement().execute("SELECT pg_advisory_lock(4242)");
			long first = acking.claim("handover", 1).messages().get(0).id();
			assertThat(first).isEqualTo(sent.get(0));
			Future<?> ack = pool.submit(() -> acking.ack(List.of(first)));
			String ackWaiting = "SELECT count(*) FROM pg_locks WHERE locktype = 'advisory' AND objid = 4242 AND NOT granted";
			org.awaitility.Awaitility.await().atMost(Duration.ofSeconds(30)).pollInterval(Duration.ofMillis(10))
				.until(() -> queryForLong(ackWaiting) > 0);
			assertThat(queryForLong(ackWaiting)).as("the ack has deleted and waits to commit").isEqualTo(1);

			Future<ConsumerSession.Claim> claim = pool.submit(() -> claiming.claim("handover", 10));
			ConsumerSession.Claim taken;
			try {
				taken = claim.get(5, TimeUnit.SECONDS);
			}
			finally {
				gate.createStatement().execute("SELECT pg_advisory_unlock(4242)");
			}
			assertThat(taken.messages()).extracting(ClaimedMessage::id).containsExactly(sent.get(1));
			assertThat(taken.raced()).as("the message being acked was not locked").isZero();
			ack.get(10, TimeUnit.SECONDS);
			claiming.ack(List.of(sent.get(1)));
		}
		finally {
			pool.shutdownNow();
			this.jdbc.execute("DROP TRIGGER IF EXISTS handover_commit_gate ON pgqueue.message");
			this.jdbc.execute("DROP FUNCTION IF EXISTS public.handover_commit_gate()");
		}
		assertThat(count("handover")).isZero();
		assertThat(advisoryLocks()).isZero();
	}

	@Test
	void messagesHeldBySessionsWhenTheServerRestartedAreClaimedInBatchesNotAsSuspects() {
		List<Long> sent = sendMany("held-at-restart", 40);
		List<ConsumerSession> holders = new ArrayList<>();
		for (int i = 0; i < 4; i++) {
			ConsumerSession holder = this.template.context().openSession();
			assertThat(holder.claim("held-at-restart", 10).messages()).hasSize(10);
			holders.add(holder);
		}
		EmbeddedPostgres.get().restart();
		holders.forEach(ConsumerSession::close);
		List<Long> claimed = new ArrayList<>();
		try (ConsumerSession session = this.template.context().openSession()) {
			for (int i = 0; i < 4; i++) {
				List<ClaimedMessage> batch = session.claim("held-at-restart", 10).messages();
				assertThat(batch).as("a full batch: the restart, not the messages, ended those sessions").hasSize(10);
				assertThat(batch).allMatch((message) -> message.attempt() == 1);
				batch.forEach((message) -> claimed.add(message.id()));
				session.ack(batch.stream().map(ClaimedMessage::id).toList());
			}
		}
		assertThat(claimed).containsExactlyInAnyOrderElementsOf(sent);
		assertThat(queryForLong("SELECT count(*) FROM pgqueue.holding")).isZero();
		assertThat(advisoryLocks()).isZero();
	}

	@Test
	void retriesRacingClaimsOfOtherConsumersCountOnlyTheFailedAttempts() throws Exception {
		List<Long> sent = sendMany("retried", 2_000);
		Map<Long, List<Integer>> attempts = new ConcurrentHashMap<>();
		AtomicLong acked = new AtomicLong();
		ExecutorService pool = Executors.newFixedThreadPool(4);
		try {
			List<Future<?>> futures = new ArrayList<>();
			for (int i = 0; i < 4; i++) {
				futures.add(pool.submit(() -> {
					long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(60);
					try (ConsumerSession session = this.template.context().openSession()) {
						while (acked.get() < sent.size() && System.nanoTime() < deadline) {
							List<ClaimedMessage> claimed = session.claim("retried", 5).messages();
							List<Long> done = new ArrayList<>();
							List<ConsumerSession.Retry> failed = new ArrayList<>();
							for (ClaimedMessage message : claimed) {
								attempts.computeIfAbsent(message.id(), (id) -> new java.util.concurrent.CopyOnWriteArrayList<>())
									.add(message.attempt());
								if (message.attempt() == 1) {
									failed.add(new ConsumerSession.Retry(message.id(), Duration.ZERO, "first"));
								}
								else {
									done.add(message.id());
								}
							}
							session.retry(failed);
							session.ack(done);
							acked.addAndGet(done.size());
						}
					}
					return null;
				}));
			}
			for (Future<?> future : futures) {
				future.get(90, TimeUnit.SECONDS);
			}
		}
		finally {
			pool.shutdownNow();
		}
		assertThat(attempts.keySet()).containsExactlyInAnyOrderElementsOf(sent);
		assertThat(attempts.values()).as("a retry made visible at once is claimed by others as it commits")
			.allMatch((seen) -> seen.equals(List.of(1, 2)));
		assertThat(advisoryLocks()).isZero();
	}

	@Test
	void aMessageThatKillsItsConsumerBurnsOnlyItsOwnAttempts() {
		this.admin.declare(QueueDefinition.of("mixed").withMaxAttempts(2));
		List<Long> sent = sendMany("mixed", 6);
		long poison = sent.get(2);
		Map<Long, Integer> acked = new java.util.HashMap<>();
		for (int round = 0; round < 20 && acked.size() < 5; round++) {
			ConsumerSession session = this.template.context().openSession();
			ConsumerSession.Claim claim = session.claim("mixed", 10);
			List<Long> done = new ArrayList<>();
			boolean died = false;
			for (ClaimedMessage message : claim.messages()) {
				if (message.id() == poison) {
					terminateSessionsHoldingLocks(); // the handler kills its consumer
					died = true;
					break;
				}
				acked.put(message.id(), message.attempt());
				if (claim.inTurn()) {
					session.ack(List.of(message.id())); // each before the next is handed out
				}
				else {
					done.add(message.id());
				}
			}
			if (!died) {
				session.ack(done);
			}
			session.close();
		}
		assertThat(acked.keySet()).containsExactlyInAnyOrderElementsOf(sent.stream().filter((id) -> id != poison).toList());
		assertThat(acked.values()).as("one attempt lost with the first crash at most").allMatch((attempt) -> attempt <= 2);
		try (ConsumerSession session = this.template.context().openSession()) {
			session.claim("mixed", 10); // dead-letters the poison if no claim in the loop did yet
		}
		assertThat(this.jdbc.queryForObject("SELECT queue FROM pgqueue.message WHERE id = ?", String.class, poison))
			.isEqualTo("mixed.dlq");
		assertThat(advisoryLocks()).isZero();
	}

	/**
	 * A consumer that dies while it runs one of the messages it was handing out in turn costs that
	 * one message an attempt: the ones it completed are gone, and the ones it had not handed out
	 * yet come back at the attempt they were claimed at.
	 */
	@Test
	void aConsumerThatDiesRunningAnOrphanHandedOutInTurnCostsOnlyThatOneAnAttempt() {
		List<Long> sent = sendMany("in-turn", 10);
		ConsumerSession first = this.template.context().openSession();
		assertThat(first.claim("in-turn", 10).messages()).hasSize(10);
		terminateSessionsHoldingLocks();
		first.close();
		ConsumerSession second = this.template.context().openSession();
		ConsumerSession.Claim orphans = second.claim("in-turn", 10);
		assertThat(orphans.inTurn()).isTrue();
		assertThat(orphans.messages()).extracting(ClaimedMessage::id).containsExactlyElementsOf(sent);
		assertThat(orphans.messages()).as("the first consumer's lost attempt counted once")
			.allMatch((message) -> message.attempt() == 2);
		for (int i = 0; i < 3; i++) {
			second.ack(List.of(sent.get(i)));
		}
		terminateSessionsHoldingLocks(); // the handler of the fourth kills its consumer
		second.close();
		try (ConsumerSession third = this.template.context().openSession()) {
			ConsumerSession.Claim killer = third.claim("in-turn", 10);
			assertThat(killer.messages()).as("the one the second consumer was running, counted again, on its own")
				.extracting(ClaimedMessage::id, ClaimedMessage::attempt)
				.containsExactly(org.assertj.core.groups.Tuple.tuple(sent.get(3), 3));
			third.ack(List.of(sent.get(3)));
			ConsumerSession.Claim rest = third.claim("in-turn", 10);
			assertThat(rest.inTurn()).as("never handed out: not suspects").isFalse();
			assertThat(rest.messages()).as("never handed out by the second consumer: no attempt counted for it")
				.extracting(ClaimedMessage::id, ClaimedMessage::attempt)
				.containsExactlyElementsOf(sent.subList(4, 10).stream()
					.map((id) -> org.assertj.core.groups.Tuple.tuple(id, 2)).toList());
			third.ack(sent.subList(4, 10));
		}
		assertThat(count()).isZero();
		assertThat(advisoryLocks()).isZero();
	}

	@Test
	void messagesInFlightWhenTheServerRestartedAreClaimedInBatchesNotAsSuspects() {
		int inFlight = Integer.getInteger("recovery.in-flight", 2_000);
		List<Long> sent = sendMany("restart", inFlight);
		// As the claims of consumers that were working when the server went away left them.
		this.jdbc.update("UPDATE pgqueue.message SET attempts = 1, claim_open = true, claimed_at = now()");
		EmbeddedPostgres.get().restart();
		long started = System.nanoTime();
		List<Integer> batchSizes = new ArrayList<>();
		try (ConsumerSession session = this.template.context().openSession()) {
			for (List<ClaimedMessage> batch = session.claim("restart", 10).messages(); !batch.isEmpty();
					batch = session.claim("restart", 10).messages()) {
				batchSizes.add(batch.size());
				assertThat(batch).allMatch((message) -> message.attempt() == 2);
				session.ack(batch.stream().map(ClaimedMessage::id).toList());
			}
		}
		logger.info("{} messages in flight at a server restart recovered by one consumer in {} ms", inFlight,
				(System.nanoTime() - started) / 1_000_000);
		assertThat(batchSizes.stream().mapToInt(Integer::intValue).sum()).isEqualTo(sent.size());
		assertThat(batchSizes).as("full batches: the restart, not the messages, ended those claims")
			.hasSize(inFlight / 10);
		assertThat(advisoryLocks()).isZero();
	}

	/**
	 * Messages whose consumers died while the server ran (here half held by sessions that were
	 * terminated, half with the open claim a consumer that died running such a message leaves) are
	 * claimed a batch at a time, each batch handed out in turn: each message is completed before
	 * the next is handed over, so one claim serves a batch and each message costs its own ack.
	 */
	@Test
	void orphansOfConsumersThatDiedWhileTheServerRanAreClaimedInBatchesAndHandedOutInTurn() {
		int orphans = Integer.getInteger("recovery.died", 2_000) / 200 * 200;
		List<Long> sent = sendMany("died", orphans);
		for (int i = 0; i < orphans / 200; i++) {
			// Past the orphans of the sessions terminated before: a claim looks at 1 000 held rows at most.
			ConsumerSession dying = this.template.context().openSession();
			assertThat(dying.claim("died", 100, false).messages()).hasSize(100);
			terminateSessionsHoldingLocks();
			dying.close();
		}
		// As a claim of a message whose consumer died leaves it (that attempt counted) when its own
		// consumer dies too.
		List<Long> reopened = this.jdbc.queryForList("UPDATE pgqueue.message SET attempts = 1, claim_open = true, "
				+ "claimed_at = now() WHERE id NOT IN (SELECT unnest(ids) FROM pgqueue.holding) RETURNING id", Long.class);
		assertThat(reopened).hasSize(orphans / 2);
		Map<Long, List<Integer>> delivered = new java.util.LinkedHashMap<>();
		int claims = 0;
		long started = System.nanoTime();
		try (ConsumerSession session = this.template.context().openSession()) {
			for (List<ClaimedMessage> batch = session.claim("died", 10).messages(); !batch.isEmpty();
					batch = session.claim("died", 10).messages()) {
				claims++;
				for (ClaimedMessage message : batch) {
					delivered.computeIfAbsent(message.id(), (id) -> new ArrayList<>()).add(message.attempt());
					session.ack(List.of(message.id()));
				}
			}
		}
		long millis = Math.max(1, (System.nanoTime() - started) / 1_000_000);
		logger.info("{} messages whose consumers died recovered by one consumer in {} ms ({} msg/s) with {} claims",
				orphans, millis, orphans * 1000L / millis, claims);
		assertThat(delivered.keySet()).containsExactlyInAnyOrderElementsOf(sent);
		assertThat(delivered).as("each once, at the attempt after the ones its consumers lost")
			.allSatisfy((id, attempts) -> assertThat(attempts).containsExactly(reopened.contains(id) ? 3 : 2));
		assertThat(claims).as("claims of batches of 10, not of one message each").isLessThanOrEqualTo(orphans / 10 + 2);
		assertThat(queryForLong("SELECT count(*) FROM pgqueue.holding WHERE cardinality(ids) > 0"))
			.as("nothing left listed by the sessions that died").isZero();
		assertThat(advisoryLocks()).isZero();
	}

	@Test
	void aMessageWhoseConsumerDiesEveryTimeIsDeadLetteredAfterMaxAttempts() {
		this.admin.declare(QueueDefinition.of("poison").withMaxAttempts(3));
		long poison = this.template.send("poison", "kills its consumer");
		for (int attempt = 1; attempt <= 3; attempt++) {
			ConsumerSession session = this.template.context().openSession();
			List<ClaimedMessage> claimed = session.claim("poison", 1).messages();
			assertThat(claimed).extracting(ClaimedMessage::attempt).containsExactly(attempt);
			terminateSessionsHoldingLocks();
			session.close();
		}
		long healthy = this.template.send("poison", "fine");
		try (ConsumerSession session = this.template.context().openSession()) {
			ConsumerSession.Claim claim = session.claim("poison", 10);
			assertThat(claim.deadLettered()).as("the suspect is claimed alone, and is exhausted").isEqualTo(1);
			assertThat(claim.messages()).isEmpty();
			claim = session.claim("poison", 10);
			assertThat(claim.messages()).extracting(ClaimedMessage::id).containsExactly(healthy);
			session.ack(List.of(healthy));
		}
		assertThat(this.jdbc.queryForObject("SELECT queue FROM pgqueue.message WHERE id = ?", String.class, poison))
			.isEqualTo("poison.dlq");
		assertThat(this.jdbc.queryForObject("SELECT last_error FROM pgqueue.message WHERE id = ?", String.class,
				poison)).contains("after 3 attempts").contains("without an ack");
		assertThat(advisoryLocks()).isZero();
	}

	@Test
	void idsPastTwoToTheThirtyTwoFoldIntoLockKeysWithoutDoubleDelivery() throws Exception {
		// 7 and 7 + 2^32 share a lock key; 2^31 - 1 .. 2^31 + 1 cross the int4 sign boundary.
		this.jdbc.update("INSERT INTO pgqueue.message (id, queue, payload) VALUES (7, 'fold', '1'), (4294967303, 'fold', '2')");
		this.jdbc.execute("ALTER TABLE pgqueue.message ALTER COLUMN id RESTART WITH 2147483600");
		List<Long> sent = new ArrayList<>(List.of(7L, 4294967303L));
		sent.addAll(sendMany("fold", 200));
		this.jdbc.execute("ALTER TABLE pgqueue.message ALTER COLUMN id RESTART WITH 4294967350");
		sent.addAll(sendMany("fold", 200));
		assertThat(sent).anyMatch((id) -> id > 4294967296L);

		try (ConsumerSession a = this.template.context().openSession(); ConsumerSession b = this.template.context().openSession()) {
			List<ClaimedMessage> byA = a.claim("fold", 1).messages();
			assertThat(byA).extracting(ClaimedMessage::id).containsExactly(7L);
			List<ClaimedMessage> byB = b.claim("fold", 1).messages();
			assertThat(byB).extracting(ClaimedMessage::id).as("same lock key as 7, held by A").doesNotContain(4294967303L);
			a.release(List.of(7L), true);
			b.release(byB.stream().map(ClaimedMessage::id).toList(), true);
		}
		Map<Long, AtomicInteger> deliveries = drain("fold", 4, 10, sent.size());
		assertEachDeliveredOnce(deliveries, sent);
	}

	@Test
	void aRowDeletedUnderTheLockIsUnlockedByTheAck() {
		List<Long> sent = sendMany("vanish", 3);
		try (ConsumerSession session = this.template.context().openSession()) {
			assertThat(session.claim("vanish", 3).messages()).hasSize(3);
			this.jdbc.update("DELETE FROM pgqueue.message WHERE id = ?", sent.get(1));
			session.ack(sent);
			assertThat(session.heldCount()).isZero();
			assertThat(advisoryLocks()).isZero();
		}
	}

	@Test
	void claimingWhileHoldingMessagesIsRefused() {
		sendMany("reentrant", 2);
		try (ConsumerSession session = this.template.context().openSession()) {
			session.claim("reentrant", 1);
			assertThatThrownBy(() -> session.claim("reentrant", 1)).isInstanceOf(IllegalStateException.class)
				.hasMessageContaining("still holds");
		}
		assertThat(advisoryLocks()).isZero();
	}

	@Test
	void aClaimGoingOnFromItsLastFullBatchStillTakesALowerPriorityFirst() {
		this.template.sendBatch("cursor-prio", IntStream.range(0, 30).boxed().toList(),
				SendOptions.builder().priority(5).build());
		try (ConsumerSession session = this.template.context().openSession()) {
			List<ClaimedMessage> first = session.claim("cursor-prio", 10).messages(); // full: a cursor
			session.ack(first.stream().map(ClaimedMessage::id).toList());
			long urgent = this.template.send("cursor-prio", "urgent", SendOptions.builder().priority(0).build());
			List<ClaimedMessage> next = session.claim("cursor-prio", 10).messages();
			assertThat(next.get(0).id()).as("the lower priority, sent after the cursor was taken").isEqualTo(urgent);
			assertThat(next).extracting(ClaimedMessage::priority).containsExactly(0, 5, 5, 5, 5, 5, 5, 5, 5, 5);
		}
		assertThat(advisoryLocks()).isZero();
	}

	@Test
	void messagesReleasedBehindTheCursorsOfBusyConsumersAreClaimedAgain() throws Exception {
		// Every fifth batch is released instead of acked: its rows are behind the cursors of the
		// consumers that go on claiming full batches, and only a claim from the head finds them.
		// Released batches are often claimed again together, and released again: enough attempts that
		// none is dead-lettered on the way.
		this.admin.declare(QueueDefinition.of("cursor-release").withMaxAttempts(1_000));
		List<Long> sent = sendMany("cursor-release", 6_000);
		Map<Long, AtomicInteger> acked = new ConcurrentHashMap<>();
		Map<Long, Long> holders = new ConcurrentHashMap<>();
		AtomicInteger overlaps = new AtomicInteger();
		AtomicInteger released = new AtomicInteger();
		ExecutorService pool = Executors.newFixedThreadPool(4);
		try {
			List<Future<?>> futures = new ArrayList<>();
			for (int i = 0; i < 4; i++) {
				futures.add(pool.submit(() -> {
					long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(60);
					int claims = 0;
					try (ConsumerSession session = this.template.context().openSession()) {
						while (acked.size() < sent.size() && System.nanoTime() < deadline) {
							List<Long> ids = session.claim("cursor-release", 20).messages().stream()
								.map(ClaimedMessage::id).toList();
							if (ids.isEmpty()) {
								Thread.sleep(2);
								continue;
							}
							for (long id : ids) {
								if (holders.putIfAbsent(id, Thread.currentThread().getId()) != null) {
									overlaps.incrementAndGet();
								}
							}
							if (++claims % 5 == 0) {
								ids.forEach(holders::remove);
								session.release(ids, true);
								released.addAndGet(ids.size());
							}
							else {
								ids.forEach((id) -> acked.computeIfAbsent(id, (k) -> new AtomicInteger()).incrementAndGet());
								ids.forEach(holders::remove);
								session.ack(ids);
							}
						}
					}
					return null;
				}));
			}
			for (Future<?> future : futures) {
				future.get(90, TimeUnit.SECONDS);
			}
		}
		finally {
			pool.shutdownNow();
		}
		assertThat(released.get()).as("batches released behind the cursors").isPositive();
		assertThat(overlaps.get()).as("messages held by two consumers at once").isZero();
		assertEachDeliveredOnce(acked, sent);
	}

	private Map<Long, AtomicInteger> drain(String queue, int consumers, int batch, int expected) throws Exception {
		AtomicLong delivered = new AtomicLong();
		return drain(queue, consumers, batch, delivered, () -> delivered.get() >= expected);
	}

	private Map<Long, AtomicInteger> drain(String queue, int consumers, int batch,
			java.util.function.BooleanSupplier done) throws Exception {
		return drain(queue, consumers, batch, new AtomicLong(), done);
	}

	private Map<Long, AtomicInteger> drain(String queue, int consumers, int batch, AtomicLong delivered,
			java.util.function.BooleanSupplier done) throws Exception {
		Map<Long, AtomicInteger> deliveries = new ConcurrentHashMap<>();
		CountDownLatch start = new CountDownLatch(1);
		ExecutorService pool = Executors.newFixedThreadPool(consumers);
		try {
			List<Future<?>> futures = new ArrayList<>();
			for (int i = 0; i < consumers; i++) {
				futures.add(pool.submit(() -> {
					start.await();
					long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(120);
					try (ConsumerSession session = this.template.context().openSession()) {
						while (!done.getAsBoolean() && System.nanoTime() < deadline) {
							List<ClaimedMessage> claimed = session.claim(queue, batch).messages();
							if (claimed.isEmpty()) {
								Thread.sleep(2);
								continue;
							}
							List<Long> ids = new ArrayList<>(claimed.size());
							for (ClaimedMessage message : claimed) {
								deliveries.computeIfAbsent(message.id(), (id) -> new AtomicInteger()).incrementAndGet();
								ids.add(message.id());
							}
							delivered.addAndGet(claimed.size());
							session.ack(ids);
						}
					}
					return null;
				}));
			}
			start.countDown();
			for (Future<?> future : futures) {
				future.get(180, TimeUnit.SECONDS);
			}
		}
		finally {
			pool.shutdownNow();
		}
		return deliveries;
	}

	private void assertEachDeliveredOnce(Map<Long, AtomicInteger> deliveries, List<Long> sent) {
		List<Long> duplicated = deliveries.entrySet().stream().filter((e) -> e.getValue().get() > 1)
			.map(Map.Entry::getKey).toList();
		List<Long> lost = sent.stream().filter((id) -> !deliveries.containsKey(id)).toList();
		assertThat(duplicated).as("delivered more than once").isEmpty();
		assertThat(lost).as("never delivered").isEmpty();
		assertThat(deliveries.keySet()).containsExactlyInAnyOrderElementsOf(sent);
		assertThat(count()).as("left in the table").isZero();
		assertThat(advisoryLocks()).as("advisory locks left").isZero();
	}

	private List<Long> sendMany(String queue, int n) {
		List<Long> ids = new ArrayList<>(n);
		for (int from = 0; from < n; from += 1000) {
			List<Integer> payloads = IntStream.range(from, Math.min(n, from + 1000)).boxed().toList();
			ids.addAll(this.template.sendBatch(queue, payloads));
		}
		return ids;
	}

	/** Terminates every backend holding an advisory lock and waits until they are gone. */
	private void terminateSessionsHoldingLocks() {
		List<Integer> pids = this.jdbc.queryForList(
				"SELECT DISTINCT pid FROM pg_locks WHERE locktype = 'advisory'", Integer.class);
		assertThat(pids).as("sessions holding locks").isNotEmpty();
		pids.forEach((pid) -> this.jdbc.queryForObject("SELECT pg_terminate_backend(?)", Boolean.class, pid));
		org.awaitility.Awaitility.await().atMost(Duration.ofSeconds(10)).pollInterval(Duration.ofMillis(10))
			.until(() -> advisoryLocks() == 0);
	}

	/** The ids listed in the holding row of {@code session}. */
	private List<Long> heldBy(ConsumerSession session) {
		return this.jdbc.queryForObject("SELECT ids FROM pgqueue.holding WHERE pid = ?",
				(rs, n) -> List.of((Long[]) rs.getArray(1).getArray()), session.backendPid());
	}

}
