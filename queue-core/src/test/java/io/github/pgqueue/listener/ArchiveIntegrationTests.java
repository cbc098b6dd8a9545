package io.github.pgqueue.listener;

import java.sql.Timestamp;
import java.time.Duration;
import java.time.Instant;
import java.time.temporal.ChronoUnit;
import java.util.List;

import io.github.pgqueue.AckMode;
import io.github.pgqueue.ArchiveSearch;
import io.github.pgqueue.ArchivedMessage;
import io.github.pgqueue.ArchivedMessage.Outcome;
import io.github.pgqueue.CancelResult;
import io.github.pgqueue.ConsumptionMode;
import io.github.pgqueue.ContextInternals;
import io.github.pgqueue.MessageArchive;
import io.github.pgqueue.QueueAdmin;
import io.github.pgqueue.QueueDefinition;
import io.github.pgqueue.QueueTemplate;
import io.github.pgqueue.SendOptions;
import io.github.pgqueue.internal.ConsumerSession;
import io.github.pgqueue.testing.EmbeddedPostgres;
import io.github.pgqueue.testing.ListenerFixture;
import io.github.pgqueue.testing.PostgresExtension;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;
import org.junit.jupiter.api.extension.RegisterExtension;

import org.springframework.jdbc.core.JdbcTemplate;

import static io.github.pgqueue.testing.Db.count;
import static io.github.pgqueue.testing.ListenerFixture.properties;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatIllegalArgumentException;
import static org.awaitility.Awaitility.await;

/**
 * Retention: what completes in a queue that keeps messages is archived with its outcome, by every
 * way a message completes and in both consumption modes, only if the completion commits; the
 * archive is searched, resent from, and kept to a bounded set of day partitions.
 */
@ExtendWith(PostgresExtension.class)
class ArchiveIntegrationTests {

	private final JdbcTemplate jdbc = new JdbcTemplate(EmbeddedPostgres.get().dataSource());

	@RegisterExtension
	final ListenerFixture listeners = ListenerFixture.pools("archive-app", 6, "archive-consumers", 6);

	private final QueueTemplate template = this.listeners.template();

	private final QueueAdmin admin = this.listeners.admin();

	private final MessageArchive archive = new MessageArchive(this.template.context());

	private void keep(String queue) {
		this.admin.declare(QueueDefinition.of(queue).withRetention(Duration.ofDays(7)).withMaxAttempts(2)
			.withBackoff(Duration.ofMillis(1), 1.0, Duration.ofMillis(1)));
	}

	@Test
	void everyWayOfCompletingIsArchivedWithItsOutcome() {
		keep("kept");
		long acked = this.template.send("kept", "a", SendOptions.builder().header("order", "17").build());
		long deadLettered = this.template.send("kept", "b");
		try (ConsumerSession session = ContextInternals.openSession(this.template.context())) {
			List<Long> ids = session.claim("kept", 10).messages().stream().map((m) -> m.id()).toList();
			assertThat(ids).containsExactly(acked, deadLettered);
			session.ack(List.of(acked));
			session.deadLetter(List.of(new ConsumerSession.DeadLetter(deadLettered, "kept.dlq", "it broke")));
		}
		long cancelled = this.template.send("kept", "c");
		assertThat(this.template.cancel("kept", cancelled)).isEqualTo(CancelResult.REMOVED);
		long purged = this.template.send("kept", "d");
		assertThat(this.admin.purge("kept", QueueAdmin.Purge.ALL)).isEqualTo(1);

		List<ArchivedMessage> archived = this.archive.search(ArchiveSearch.all().inQueue("kept"));
		assertThat(archived).extracting(ArchivedMessage::id, ArchivedMessage::outcome, ArchivedMessage::attempts,
				ArchivedMessage::lastError)
			.containsExactlyInAnyOrder(org.assertj.core.groups.Tuple.tuple(acked, Outcome.ACKED, 1, null),
					org.assertj.core.groups.Tuple.tuple(deadLettered, Outcome.DEAD_LETTERED, 1, "it broke"),
					org.assertj.core.groups.Tuple.tuple(cancelled, Outcome.CANCELLED, 0, null),
					org.assertj.core.groups.Tuple.tuple(purged, Outcome.PURGED, 0, null));
		ArchivedMessage first = archived.stream().filter((m) -> m.id() == acked).findFirst().orElseThrow();
		assertThat(first.payload()).isEqualTo("\"a\"");
		assertThat(first.headers()).containsEntry("order", "17");
		assertThat(first.expiresAt()).isCloseTo(first.completedAt().plus(Duration.ofDays(7)),
				org.assertj.core.api.Assertions.within(1, ChronoUnit.SECONDS));
		assertThat(this.jdbc.queryForObject("SELECT count(*) FROM pgqueue.archive_default", Long.class))
			.as("each row in its day's partition").isZero();
		assertThat(count("kept.dlq")).as("the dead letter itself moved on").isEqualTo(1);
	}

	@Test
	void aQueueWithoutRetentionArchivesNothing() {
		this.admin.declare(QueueDefinition.of("forgotten"));
		this.template.send("forgotten", "a");
		try (ConsumerSession session = ContextInternals.openSession(this.template.context())) {
			session.ack(session.claim("forgotten", 10).messages().stream().map((m) -> m.id()).toList());
		}
		assertThat(count("forgotten")).isZero();
		assertThat(this.jdbc.queryForObject("SELECT count(*) FROM pgqueue.archive", Long.class)).isZero();
	}

	/**
	 * Transactional consumers archive in the handler's transaction: a run that fails archives
	 * nothing and is retried, the run that succeeds archives the message once, with both attempts.
	 */
	@Test
	void aTransactionalCompletionArchivesOnlyWhenItCommits() {
		keep("tx-kept");
		int total = 200;
		for (int i = 0; i < total; i++) {
			this.template.send("tx-kept", i);
		}
		QueueMessageListener listener = (message, ack) -> {
			if ((Integer) message.payload() % 10 == 0 && message.attempt() == 1) {
				throw new IllegalStateException("first run of a tenth message");
			}
		};
		this.listeners.start(ListenerFixture.endpoint("tx-kept", Integer.class, listener,
				properties("tx-kept").concurrency(2).ackMode(AckMode.AUTO).batchSize(10)
					.mode(ConsumptionMode.TRANSACTIONAL)));
		await().atMost(Duration.ofSeconds(30)).until(() -> count("tx-kept") == 0);

		List<ArchivedMessage> archived = this.archive.search(ArchiveSearch.all().inQueue("tx-kept").withLimit(1000));
		assertThat(archived).hasSize(total).allMatch((m) -> m.outcome() == Outcome.ACKED);
		assertThat(archived).filteredOn((m) -> Integer.parseInt(m.payload()) % 10 == 0)
			.hasSize(total / 10)
			.allMatch((m) -> m.attempts() == 2 && m.lastError().contains("first run of a tenth message"));
	}

	@Test
	void theArchiveIsSearchedByQueueIdHeaderAndTimeAndAMessageIsSentAgain() {
		keep("search");
		keep("other");
		long a = this.template.send("search", "a", SendOptions.builder().header("tenant", "acme").build());
		long b = this.template.send("search", "b", SendOptions.builder().header("tenant", "globex").build());
		long c = this.template.send("other", "c", SendOptions.builder().header("tenant", "acme").build());
		Instant before = Instant.now().minusSeconds(60);
		this.admin.purge("search", QueueAdmin.Purge.ALL);
		this.admin.purge("other", QueueAdmin.Purge.ALL);

		assertThat(this.archive.search(ArchiveSearch.all())).extracting(ArchivedMessage::id).containsExactlyInAnyOrder(a, b, c);
		assertThat(this.archive.search(ArchiveSearch.all().inQueue("search"))).extracting(ArchivedMessage::id)
			.containsExactlyInAnyOrder(a, b);
		assertThat(this.archive.search(ArchiveSearch.all().withId(b))).extracting(ArchivedMessage::id).containsExactly(b);
		assertThat(this.archive.search(ArchiveSearch.all().withHeader("tenant", "acme"))).extracting(ArchivedMessage::id)
			.containsExactlyInAnyOrder(a, c);
		assertThat(this.archive.search(ArchiveSearch.all().completedBetween(null, before))).isEmpty();
		assertThat(this.archive.search(ArchiveSearch.all().completedBetween(before, null))).hasSize(3);
		assertThat(this.archive.search(ArchiveSearch.all().withLimit(1))).hasSize(1);

		long again = this.archive.resend("search", a);
		assertThat(again).isNotEqualTo(a);
		assertThat(this.jdbc.queryForObject("SELECT payload #>> '{}' || ' ' || (headers ->> 'tenant') || ' ' "
				+ "|| (headers ->> 'pgqueue-resent-from') FROM pgqueue.message WHERE id = ?", String.class, again))
			.isEqualTo("a acme " + a);
		assertThatIllegalArgumentException().isThrownBy(() -> this.archive.resend("other", a))
			.withMessage("The archive of queue 'other' holds no message " + a + " (never archived there, or expired)");
		assertThatIllegalArgumentException().isThrownBy(() -> ArchiveSearch.all().withLimit(0))
			.withMessage("An archive search's limit must be 1 to 1000, was 0");
	}

	/**
	 * A week of simulated days beyond a 7-day retention: each day's upkeep creates the partitions
	 * ahead and drops the one that expired, so the archive stays at about eight days of rows in
	 * about nine partitions, however many days pass.
	 */
	@Test
	void aFortnightOfSimulatedDaysKeepsTheArchiveBounded() {
		keep("daily");
		Instant start = Instant.parse("2030-01-01T12:00:00Z");
		for (int day = 0; day < 14; day++) {
			Instant at = start.plus(Duration.ofDays(day));
			this.jdbc.queryForMap("SELECT * FROM pgqueue.archive_upkeep(?)", Timestamp.from(at));
			this.jdbc.update("INSERT INTO pgqueue.archive (id, queue, outcome, payload, headers, priority, attempts, "
					+ "created_at, completed_at, expires_at) SELECT i, 'daily', 'acked', '{}', '{}', 0, 1, ?, ?, ? "
					+ "FROM generate_series(1, 100) i", Timestamp.from(at), Timestamp.from(at),
					Timestamp.from(at.plus(Duration.ofDays(7))));
			assertThat(this.jdbc.queryForObject("SELECT count(*) FROM pgqueue.archive_default", Long.class))
				.as("day %d: every row in a day partition", day).isZero();
			assertThat(this.jdbc.queryForObject("SELECT count(*) FROM pgqueue.archive WHERE expires_at <= ?", Long.class,
					Timestamp.from(at.minus(Duration.ofDays(1))))).as("day %d: nothing expired a day ago is kept", day)
				.isZero();
			assertThat(partitions()).as("day %d", day).isBetween(9, 10);
			assertThat(this.jdbc.queryForObject("SELECT count(*) FROM pgqueue.archive", Long.class))
				.as("day %d: the last eight days' rows", day).isEqualTo(100L * Math.min(day + 1, 8));
		}
	}

	private int partitions() {
		return this.jdbc.queryForObject("SELECT count(*) FROM pg_inherits WHERE inhparent = 'pgqueue.archive'::regclass "
				+ "AND inhrelid::regclass::text <> 'pgqueue.archive_default'", Integer.class);
	}

}
