package io.github.pgqueue.listener;

import java.time.Duration;
import java.util.Collection;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Set;
import java.util.function.Supplier;

import javax.sql.DataSource;

import io.github.pgqueue.internal.QueueSql;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import org.springframework.dao.DataAccessException;
import org.springframework.jdbc.core.JdbcTemplate;
import org.springframework.jdbc.support.JdbcTransactionManager;
import org.springframework.transaction.TransactionException;
import org.springframework.transaction.support.TransactionTemplate;

/**
 * The registry's one poll for all its listeners: once a poll interval (the shortest of the running
 * listeners') it asks, in one statement, which of their queues hold a message visible now, and
 * wakes an idle poller of each ({@code queues_with_visible_messages}). With notifications for
 * what is sent and each poller's own knowledge of when its next delayed message is due, this finds
 * the rest — messages freed because their consumer died, a FIFO group's next message — so idle
 * pollers need not poll each on their own: 500 quiet listeners cost one statement a poll interval
 * instead of 500. It runs on the application's data source (the template's), in a short read-only
 * transaction, not on the pollers' pool, which has a connection per poller and one to LISTEN.
 * <p>
 * While a sweep fails, pollers poll on their own again: the first failure wakes them all (they
 * then wait one poll interval at a time), and the sweep retries every interval, logging once per
 * outage.
 * <p>
 * The same thread keeps the archive ({@link io.github.pgqueue.MessageArchive#upkeep()}): at start
 * and then once an hour it creates the day partitions ahead and drops the expired ones; a failed
 * upkeep is logged and tried again a minute later.
 */
final class VisibleMessageSweep implements Runnable {

	private static final Logger logger = LoggerFactory.getLogger(VisibleMessageSweep.class);

	private static final Duration DEFAULT_INTERVAL = Duration.ofSeconds(1);

	private static final String INDEX_PLANS = "SET LOCAL enable_seqscan = off; SET LOCAL plan_cache_mode = force_generic_plan";

	private final JdbcTemplate jdbc;

	private final TransactionTemplate transactions;

	private final QueueSql sql;

	private final Supplier<Collection<QueueListenerContainer>> containers;

	private final Runnable wakeAll;

	private static final Duration UPKEEP_INTERVAL = Duration.ofHours(1);

	private static final Duration UPKEEP_RETRY = Duration.ofMinutes(1);

	private final Runnable archiveUpkeep;

	/** When the next archive upkeep is due, in {@link System#nanoTime()}. */
	private long upkeepDue = System.nanoTime();

	private volatile boolean running = true;

	private volatile boolean working;

	private volatile Thread thread;

	VisibleMessageSweep(DataSource dataSource, QueueSql sql, Supplier<Collection<QueueListenerContainer>> containers,
			Runnable wakeAll, Runnable archiveUpkeep) {
		this.archiveUpkeep = archiveUpkeep;
		this.jdbc = new JdbcTemplate(dataSource);
		this.transactions = new TransactionTemplate(new JdbcTransactionManager(dataSource));
		this.transactions.setReadOnly(true);
		this.sql = sql;
		this.containers = containers;
		this.wakeAll = wakeAll;
	}

	/** Whether the last sweep succeeded. */
	boolean isWorking() {
		return this.working;
	}

	void stop() {
		this.running = false;
		Thread current = this.thread;
		if (current != null) {
			current.interrupt();
		}
	}

	@Override
	public void run() {
		this.thread = Thread.currentThread();
		try {
			while (this.running) {
				Collection<QueueListenerContainer> active = this.containers.get().stream()
					.filter((container) -> container.isRunning() && !container.isPaused())
					.toList();
				Thread.sleep(interval(active).toMillis());
				if (this.running && !active.isEmpty()) {
					sweep(active);
				}
				if (this.running && System.nanoTime() - this.upkeepDue >= 0) {
					upkeepArchive();
				}
			}
		}
		catch (InterruptedException ex) {
			Thread.currentThread().interrupt();
		}
		finally {
			this.working = false;
			this.thread = null;
		}
	}

	private static Duration interval(Collection<QueueListenerContainer> active) {
		return active.stream()
			.map((container) -> container.endpoint().containerProperties().pollInterval())
			.min(Duration::compareTo)
			.orElse(DEFAULT_INTERVAL);
	}

	private void upkeepArchive() {
		try {
			this.archiveUpkeep.run();
			this.upkeepDue = System.nanoTime() + UPKEEP_INTERVAL.toNanos();
		}
		catch (DataAccessException ex) {
			logger.warn("Could not create the archive's partitions ahead or drop the expired ones; archived messages "
					+ "go to its default partition and expired ones stay until it works, tried again in {}",
					UPKEEP_RETRY, ex);
			this.upkeepDue = System.nanoTime() + UPKEEP_RETRY.toNanos();
		}
	}

	/** Runs one sweep of the queues of {@code active} and wakes an idle poller of each queue found. */
	void sweep(Collection<QueueListenerContainer> active) {
		Set<String> queues = new LinkedHashSet<>();
		active.forEach((container) -> queues.addAll(container.endpoint().containerProperties().queues()));
		try {
			List<String> visible = this.transactions.execute((status) -> {
				// Planned as the claims are (no statement of a consumer needs a sequential scan),
				// for this transaction only: the connection goes back to a pool.
				this.jdbc.execute(INDEX_PLANS);
				return this.jdbc.query(
						this.sql.queuesWithVisibleMessages.with(new QueueSql.Queues(queues.toArray(String[]::new))),
						(rs, row) -> rs.getString("queue"));
			});
			if (!this.working) {
				logger.debug("Sweeping {} queue(s) for visible messages", queues.size());
				this.working = true;
			}
			for (String queue : visible) {
				active.forEach((container) -> container.wakeIdle(queue));
			}
		}
		catch (DataAccessException | TransactionException ex) {
			// A database that is down fails the transaction's start, not a statement: either way the
			// sweep goes on, and pollers poll on their own meanwhile.
			if (this.working) {
				logger.warn("Could not sweep the listeners' queues for visible messages; idle pollers poll on their "
						+ "own every poll interval until it works again", ex);
				this.working = false;
				this.wakeAll.run();
			}
			else {
				logger.debug("The sweep of the listeners' queues still fails: {}", ex.toString());
			}
		}
	}

}
