package io.github.pgqueue.benchmarks;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;

import javax.sql.DataSource;

import ru.yoomoney.tech.dbqueue.api.EnqueueParams;
import ru.yoomoney.tech.dbqueue.api.QueueConsumer;
import ru.yoomoney.tech.dbqueue.api.Task;
import ru.yoomoney.tech.dbqueue.api.TaskExecutionResult;
import ru.yoomoney.tech.dbqueue.api.TaskPayloadTransformer;
import ru.yoomoney.tech.dbqueue.api.impl.NoopPayloadTransformer;
import ru.yoomoney.tech.dbqueue.config.DatabaseDialect;
import ru.yoomoney.tech.dbqueue.config.QueueService;
import ru.yoomoney.tech.dbqueue.config.QueueShard;
import ru.yoomoney.tech.dbqueue.config.QueueShardId;
import ru.yoomoney.tech.dbqueue.config.QueueTableSchema;
import ru.yoomoney.tech.dbqueue.config.impl.NoopTaskLifecycleListener;
import ru.yoomoney.tech.dbqueue.config.impl.NoopThreadLifecycleListener;
import ru.yoomoney.tech.dbqueue.settings.ProcessingMode;
import ru.yoomoney.tech.dbqueue.settings.QueueConfig;
import ru.yoomoney.tech.dbqueue.settings.QueueId;
import ru.yoomoney.tech.dbqueue.settings.QueueLocation;
import ru.yoomoney.tech.dbqueue.settings.QueueSettings;
import ru.yoomoney.tech.dbqueue.settings.ReenqueueRetrySettings;
import ru.yoomoney.tech.dbqueue.settings.TaskRetryType;
import ru.yoomoney.tech.dbqueue.spring.dao.SpringDatabaseAccessLayer;

import org.springframework.jdbc.core.JdbcTemplate;
import org.springframework.jdbc.datasource.DataSourceTransactionManager;
import org.springframework.transaction.support.TransactionTemplate;

/**
 * db-queue (YooMoney): its table and index as its README gives them, with the README's fill factor
 * and autovacuum advice; one task picked and leased per transaction, deleted in a second one
 * (SEPARATE_TRANSACTIONS), no pause between tasks, and the in-process wake-up after each send.
 */
final class DbQueueSystem implements QueueSystem {

	private static final String TABLE = "queue_tasks";

	private static final QueueId QUEUE = new QueueId("bench");

	private static final QueueShardId SHARD = new QueueShardId("main");

	private final BenchDatabase database;

	private final SpringDatabaseAccessLayer producer;

	private volatile QueueService running;

	DbQueueSystem(BenchDatabase database) {
		this.database = database;
		database.execute("""
				CREATE TABLE queue_tasks (
				    id                BIGSERIAL PRIMARY KEY,
				    queue_name        TEXT NOT NULL,
				    payload           TEXT,
				    created_at        TIMESTAMP WITH TIME ZONE DEFAULT now(),
				    next_process_at   TIMESTAMP WITH TIME ZONE DEFAULT now(),
				    attempt           INTEGER DEFAULT 0,
				    reenqueue_attempt INTEGER DEFAULT 0,
				    total_attempt     INTEGER DEFAULT 0
				) WITH (fillfactor = 70, autovacuum_vacuum_cost_delay = 5, autovacuum_vacuum_cost_limit = 500,
				        autovacuum_vacuum_scale_factor = 0.0001)""");
		database.execute("""
				CREATE INDEX queue_tasks_name_time_desc_idx ON queue_tasks
				    USING btree (queue_name, next_process_at, id DESC) WITH (fillfactor = 70)""");
		this.producer = accessLayer(database.appPool());
	}

	private static SpringDatabaseAccessLayer accessLayer(DataSource dataSource) {
		return new SpringDatabaseAccessLayer(DatabaseDialect.POSTGRESQL, QueueTableSchema.builder().build(),
				new JdbcTemplate(dataSource), new TransactionTemplate(new DataSourceTransactionManager(dataSource)));
	}

	private static QueueLocation location(QueueId queue) {
		return QueueLocation.builder().withTableName(TABLE).withQueueId(queue).build();
	}

	@Override
	public String name() {
		return "db-queue";
	}

	@Override
	public boolean claimsInBatches() {
		return false;
	}

	@Override
	public void send(long sequence) {
		this.producer.transact(() -> this.producer.getQueueDao()
			.enqueue(location(QUEUE), EnqueueParams.create(Payloads.json(sequence))));
		wakeUp();
	}

	@Override
	public void sendBatch(long first, int count) {
		this.producer.transact(() -> {
			for (int i = 0; i < count; i++) {
				this.producer.getQueueDao().enqueue(location(QUEUE), EnqueueParams.create(Payloads.json(first + i)));
			}
		});
		wakeUp();
	}

	@Override
	public boolean sendsDelayed() {
		return true;
	}

	// As send: the in-process wake-up after each send, though the task is not due yet (db-queue has
	// nothing that wakes a sleeping thread when a delayed task falls due; it finds it at its next poll).
	@Override
	public void sendDelayed(long sequence, Duration delay) {
		this.producer.transact(() -> this.producer.getQueueDao()
			.enqueue(location(QUEUE), EnqueueParams.create(Payloads.json(sequence)).withExecutionDelay(delay)));
		wakeUp();
	}

	private void wakeUp() {
		wakeUp(QUEUE);
	}

	private void wakeUp(QueueId queue) {
		QueueService service = this.running;
		if (service != null) {
			service.wakeup(queue, SHARD);
		}
	}

	@Override
	public boolean hasQueues() {
		return true;
	}

	@Override
	public void send(String queue, long sequence) {
		QueueId id = new QueueId(queue);
		this.producer.transact(() -> this.producer.getQueueDao()
			.enqueue(location(id), EnqueueParams.create(Payloads.json(sequence))));
		wakeUp(id);
	}

	@Override
	public Consumers startQueueListeners(List<String> queues, int batchSize, MessageHandler handler) {
		return start(queues.stream().map(QueueId::new).toList(), 1, PgQueueSystem.POLL_INTERVAL, handler);
	}

	@Override
	public Consumers startConsumers(int concurrency, int batchSize, MessageHandler handler) {
		return start(List.of(QUEUE), concurrency, PgQueueSystem.POLL_INTERVAL, handler);
	}

	@Override
	public Consumers startDelayedConsumer(int batchSize, Duration pollInterval, MessageHandler handler) {
		return start(List.of(QUEUE), 1, pollInterval, handler);
	}

	@Override
	public Optional<Consumers> startIdleListeners(int listeners) {
		List<QueueId> queues = new ArrayList<>();
		for (int i = 0; i < listeners; i++) {
			queues.add(new QueueId("idle-" + i));
		}
		return Optional.of(start(queues, 1, PgQueueSystem.POLL_INTERVAL, (n) -> {
		}));
	}

	private Consumers start(List<QueueId> queues, int threads, Duration pollInterval, MessageHandler handler) {
		QueueShard<SpringDatabaseAccessLayer> shard = new QueueShard<>(SHARD, accessLayer(this.database.consumerPool()));
		QueueService service = new QueueService(List.of(shard), NoopThreadLifecycleListener.getInstance(),
				NoopTaskLifecycleListener.getInstance());
		for (QueueId queue : queues) {
			service.registerQueue(
					new Consumer(new QueueConfig(location(queue), settings(threads, pollInterval)), handler));
		}
		service.start();
		this.running = service;
		return () -> {
			this.running = null;
			service.shutdown();
			service.awaitTermination(Duration.ofSeconds(30));
		};
	}

	// No pause between tasks (the README names it the throughput limit); an idle thread polls once
	// per poll interval (pgqueue's default of 1 s unless a scenario sets it); failed tasks back off
	// geometrically.
	private static QueueSettings settings(int threads, Duration pollInterval) {
		return QueueSettings.builder()
			.withThreadCount(threads)
			.withBetweenTaskTimeout(Duration.ZERO)
			.withNoTaskTimeout(pollInterval)
			.withFatalCrashTimeout(Duration.ofSeconds(1))
			.withProcessingMode(ProcessingMode.SEPARATE_TRANSACTIONS)
			.withRetryType(TaskRetryType.GEOMETRIC_BACKOFF)
			.withRetryInterval(Duration.ofSeconds(1))
			.withReenqueueRetrySettings(ReenqueueRetrySettings.createDefault())
			.build();
	}

	@Override
	public void preload(int count, Duration delay) {
		this.database.admin().update("""
				INSERT INTO queue_tasks (queue_name, payload, next_process_at)
				SELECT ?, '{"n": -1}', now() + ? * interval '1 millisecond' FROM generate_series(1, ?)""",
				QUEUE.asString(), delay.toMillis(), count);
	}

	@Override
	public long pending() {
		return this.database.queryLong("SELECT count(*) FROM queue_tasks WHERE queue_name = ?", QUEUE.asString());
	}

	@Override
	public void clear() {
		this.database.execute("TRUNCATE queue_tasks");
	}

	@Override
	public String table() {
		return TABLE;
	}

	/** A no-op consumer that only reports the sequence number. */
	private static final class Consumer implements QueueConsumer<String> {

		private final QueueConfig config;

		private final MessageHandler handler;

		Consumer(QueueConfig config, MessageHandler handler) {
			this.config = config;
			this.handler = handler;
		}

		@Override
		public TaskExecutionResult execute(Task<String> task) {
			this.handler.onMessage(Payloads.sequence(task.getPayloadOrThrow()));
			return TaskExecutionResult.finish();
		}

		@Override
		public QueueConfig getQueueConfig() {
			return this.config;
		}

		@Override
		public TaskPayloadTransformer<String> getPayloadTransformer() {
			return NoopPayloadTransformer.getInstance();
		}

	}

}
