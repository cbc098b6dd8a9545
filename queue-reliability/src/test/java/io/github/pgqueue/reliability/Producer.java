package io.github.pgqueue.reliability;

import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.LongFunction;

import com.zaxxer.hikari.HikariDataSource;
import io.github.pgqueue.QueueTemplate;
import io.github.pgqueue.SendOptions;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Sends {@link Job jobs} with unique keys, up front or at a steady rate from a thread of its own,
 * and keeps the set of keys it knows were sent. A send that fails (the database went away) has an
 * unknown outcome: once the database answers again, the keys that reached it count as sent and
 * the others are sent again.
 */
final class Producer implements AutoCloseable {

	private static final Logger logger = LoggerFactory.getLogger(Producer.class);

	private final ChaosDatabase database;

	private final String queue;

	private final LongFunction<Job> jobs;

	private final HikariDataSource pool;

	private final QueueTemplate template;

	private final AtomicLong nextKey = new AtomicLong(1);

	private final Set<Long> sent = Collections.synchronizedSet(new LinkedHashSet<>());

	private final List<Long> messageIds = Collections.synchronizedList(new ArrayList<>());

	private volatile int failedSends;

	/** The first failures of sends, as the caller of {@code send} saw them. */
	private final List<RuntimeException> failures = Collections.synchronizedList(new ArrayList<>());

	/** When a send last returned, or null before the first. */
	private volatile Instant lastSent;

	private volatile boolean sending;

	private Thread thread;

	/** The FIFO group of each key, or null for none. */
	private LongFunction<String> groups;

	/** How long each key's message is delayed. */
	private LongFunction<Duration> delays = (key) -> Duration.ZERO;

	/** The header each key's message carries, with {@link #headerValues}, or null for none. */
	private String header;

	private LongFunction<String> headerValues;

	Producer(ChaosDatabase database, String queue, LongFunction<Job> jobs) {
		this.database = database;
		this.queue = queue;
		this.jobs = jobs;
		this.pool = database.pool("chaos-producer", 4);
		this.template = QueueTemplate.builder(this.pool).build();
	}

	/**
	 * Sends each job to the FIFO group {@code groups} names for its key, one send per job, so that
	 * the keys of a group are sent (and committed) in ascending order.
	 */
	Producer inGroups(LongFunction<String> groups) {
		this.groups = groups;
		return this;
	}

	/** Numbers the keys from {@code first} on, so that two producers of one scenario never share a key. */
	Producer keysFrom(long first) {
		this.nextKey.set(first);
		return this;
	}

	/** Delays each job's message by what {@code delays} says for its key (sends in groups only). */
	Producer delayed(LongFunction<Duration> delays) {
		this.delays = delays;
		return this;
	}

	/**
	 * Sends each job with header {@code name} set to what {@code values} says for its key: a batch
	 * is sent as one batch per value (all messages of a batch share its headers); sends in groups
	 * carry it too.
	 */
	Producer withHeader(String name, LongFunction<String> values) {
		this.header = name;
		this.headerValues = values;
		return this;
	}

	/** Sends {@code count} jobs now, in batches. */
	void send(int count) {
		for (int done = 0; done < count; done += 200) {
			sendBatch(Math.min(200, count - done));
		}
	}

	/** Starts sending {@code perSecond} jobs a second from a thread of its own, until {@link #stopSending()}. */
	void startSending(int perSecond) {
		int perTick = Math.max(1, perSecond / 10);
		this.sending = true;
		this.thread = new Thread(() -> {
			long tick = System.nanoTime();
			while (this.sending) {
				sendBatch(perTick);
				tick += 100_000_000L;
				long wait = tick - System.nanoTime();
				if (wait > 0) {
					ChaosDatabase.pause(Duration.ofNanos(wait));
				}
			}
		}, "chaos-producer");
		this.thread.start();
	}

	/** Stops the sending thread once its current batch is sent (or found out). */
	void stopSending() {
		this.sending = false;
		if (this.thread != null) {
			try {
				this.thread.join(Duration.ofMinutes(3).toMillis());
			}
			catch (InterruptedException ex) {
				Thread.currentThread().interrupt();
				throw new IllegalStateException("Interrupted", ex);
			}
			if (this.thread.isAlive()) {
				throw new IllegalStateException("The producer did not stop within 3 minutes");
			}
		}
	}

	/** The keys known to be in the queue's hands. */
	Set<Long> sent() {
		synchronized (this.sent) {
			return new LinkedHashSet<>(this.sent);
		}
	}

	/** The message ids the sends returned (not those of sends whose outcome had to be found out). */
	List<Long> messageIds() {
		synchronized (this.messageIds) {
			return new ArrayList<>(this.messageIds);
		}
	}

	/** Sends that failed and were resolved afterwards. */
	int failedSends() {
		return this.failedSends;
	}

	private void sendBatch(int size) {
		List<Job> batch = new ArrayList<>(size);
		for (int i = 0; i < size; i++) {
			batch.add(this.jobs.apply(this.nextKey.getAndIncrement()));
		}
		if (this.groups != null) {
			for (Job job : batch) {
				sendInGroup(job);
			}
			return;
		}
		if (this.header != null) {
			Map<String, List<Job>> byValue = new LinkedHashMap<>();
			batch.forEach((job) -> byValue.computeIfAbsent(this.headerValues.apply(job.key()), (value) -> new ArrayList<>())
				.add(job));
			byValue.forEach((value, jobs) -> sendAll(jobs, SendOptions.builder().header(this.header, value).build()));
			return;
		}
		sendAll(batch, SendOptions.DEFAULTS);
	}

	/** Sends {@code batch} with {@code options}; after a failure, sends again the jobs that did not arrive. */
	private void sendAll(List<Job> batch, SendOptions options) {
		while (!batch.isEmpty()) {
			try {
				this.messageIds.addAll(this.template.sendBatch(this.queue, batch, options));
				batch.forEach((job) -> this.sent.add(job.key()));
				this.lastSent = Instant.now();
				return;
			}
			catch (RuntimeException ex) {
				this.failedSends++;
				failed(ex);
				logger.info("A send of {} jobs failed ({}); finding out which reached the database", batch.size(),
						ex.toString());
				batch = unsent(batch);
			}
		}
	}

	private void sendInGroup(Job job) {
		List<Job> unsent = List.of(job);
		while (!unsent.isEmpty()) {
			try {
				SendOptions.Builder options = SendOptions.builder()
					.group(this.groups.apply(job.key()))
					.delay(this.delays.apply(job.key()));
				if (this.header != null) {
					options.header(this.header, this.headerValues.apply(job.key()));
				}
				this.messageIds.add(this.template.send(this.queue, job, options.build()));
				this.sent.add(job.key());
				this.lastSent = Instant.now();
				return;
			}
			catch (RuntimeException ex) {
				this.failedSends++;
				failed(ex);
				unsent = unsent(unsent);
			}
		}
	}

	/** The first 100 exceptions sends threw. */
	List<RuntimeException> failures() {
		synchronized (this.failures) {
			return new ArrayList<>(this.failures);
		}
	}

	/** When a send last returned, or null if none has. */
	Instant lastSent() {
		return this.lastSent;
	}

	private void failed(RuntimeException ex) {
		synchronized (this.failures) {
			if (this.failures.size() < 100) {
				this.failures.add(ex);
			}
		}
	}

	private List<Job> unsent(List<Job> batch) {
		long deadline = System.nanoTime() + Duration.ofMinutes(2).toNanos();
		RuntimeException last = null;
		while (System.nanoTime() < deadline) {
			ChaosDatabase.pause(Duration.ofMillis(200));
			try {
				Set<Long> present = this.database.keysPresent(batch.stream().map(Job::key).toList());
				present.forEach(this.sent::add);
				return batch.stream().filter((job) -> !present.contains(job.key())).toList();
			}
			catch (RuntimeException ex) {
				last = ex;
			}
		}
		throw new IllegalStateException("The database did not answer for 2 minutes after a failed send", last);
	}

	@Override
	public void close() {
		this.sending = false;
		if (this.thread != null) {
			this.thread.interrupt();
		}
		this.pool.close();
	}

}
