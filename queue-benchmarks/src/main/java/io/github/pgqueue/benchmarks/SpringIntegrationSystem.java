package io.github.pgqueue.benchmarks;

import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.PreparedStatement;
import java.sql.SQLException;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import java.util.UUID;
import java.util.concurrent.ArrayBlockingQueue;
import java.util.concurrent.ThreadPoolExecutor;
import java.util.concurrent.TimeUnit;

import org.postgresql.jdbc.PgConnection;

import org.springframework.beans.factory.support.DefaultListableBeanFactory;
import org.springframework.core.io.ClassPathResource;
import org.springframework.core.serializer.support.SerializingConverter;
import org.springframework.integration.jdbc.channel.PostgresChannelMessageTableSubscriber;
import org.springframework.integration.jdbc.channel.PostgresSubscribableChannel;
import org.springframework.integration.jdbc.store.JdbcChannelMessageStore;
import org.springframework.integration.jdbc.store.channel.PostgresChannelMessageStoreQueryProvider;
import org.springframework.integration.support.MessageBuilder;
import org.springframework.jdbc.datasource.DataSourceTransactionManager;
import org.springframework.jdbc.datasource.init.ResourceDatabasePopulator;
import org.springframework.messaging.Message;
import org.springframework.transaction.support.TransactionTemplate;

/**
 * Spring Integration's Postgres queue: a {@link JdbcChannelMessageStore} with the Postgres query
 * provider (one {@code DELETE … FOR UPDATE SKIP LOCKED} per message), consumed by a
 * {@link PostgresSubscribableChannel} woken by LISTEN/NOTIFY, each message polled and handled in
 * a transaction of its own, as its reference documentation describes.
 */
final class SpringIntegrationSystem implements QueueSystem {

	private static final String GROUP = "bench";

	private static final String TABLE = "int_channel_message";

	private final BenchDatabase database;

	private final JdbcChannelMessageStore producerStore;

	private final JdbcChannelMessageStore consumerStore;

	private final TransactionTemplate producerTransactions;

	private final DataSourceTransactionManager consumerTransactions;

	private final SerializingConverter serializer = new SerializingConverter();

	private final String groupKey;

	private final DefaultListableBeanFactory beanFactory = new DefaultListableBeanFactory();

	SpringIntegrationSystem(BenchDatabase database) {
		this.database = database;
		createSchema(database);
		this.producerStore = store(database.appPool());
		this.consumerStore = store(database.consumerPool());
		this.producerTransactions = new TransactionTemplate(new DataSourceTransactionManager(database.appPool()));
		this.consumerTransactions = new DataSourceTransactionManager(database.consumerPool());
		this.producerStore.addMessageToGroup(GROUP, MessageBuilder.withPayload(Payloads.json(-1)).build());
		this.groupKey = database.admin().queryForObject("SELECT group_key FROM int_channel_message LIMIT 1",
				String.class);
		clear();
	}

	private static void createSchema(BenchDatabase database) {
		// The schema script shipped in the jar; its LISTEN/NOTIFY trigger is commented out there, so
		// the subscriber's trigger is created here: one notification per row, "<region> <group key>".
		new ResourceDatabasePopulator(new ClassPathResource("org/springframework/integration/jdbc/schema-postgresql.sql"))
			.execute(database.adminPool());
		database.execute("""
				CREATE FUNCTION int_channel_message_notify_fct() RETURNS trigger LANGUAGE plpgsql AS $$
				BEGIN
				    PERFORM pg_notify('int_channel_message_notify', NEW.region || ' ' || NEW.group_key);
				    RETURN NEW;
				END $$""");
		database.execute("""
				CREATE TRIGGER int_channel_message_notify_trg AFTER INSERT ON int_channel_message
				FOR EACH ROW EXECUTE FUNCTION int_channel_message_notify_fct()""");
	}

	private static JdbcChannelMessageStore store(javax.sql.DataSource dataSource) {
		JdbcChannelMessageStore store = new JdbcChannelMessageStore(dataSource);
		store.setChannelMessageStoreQueryProvider(new PostgresChannelMessageStoreQueryProvider());
		store.afterPropertiesSet();
		store.start();
		return store;
	}

	@Override
	public String name() {
		return "spring-integration-jdbc";
	}

	@Override
	public boolean claimsInBatches() {
		return false;
	}

	@Override
	public void send(long sequence) {
		this.producerStore.addMessageToGroup(GROUP, message(sequence));
	}

	@Override
	public void sendBatch(long first, int count) {
		this.producerTransactions.executeWithoutResult((status) -> {
			for (int i = 0; i < count; i++) {
				this.producerStore.addMessageToGroup(GROUP, message(first + i));
			}
		});
	}

	@Override
	public boolean hasQueues() {
		return true;
	}

	/** Into the message group named {@code queue}: one channel per group. */
	@Override
	public void send(String queue, long sequence) {
		this.producerStore.addMessageToGroup(queue, message(sequence));
	}

	@Override
	public Consumers startQueueListeners(List<String> queues, int batchSize, MessageHandler handler) {
		return start(queues, 1, handler);
	}

	private static Message<String> message(long sequence) {
		return MessageBuilder.withPayload(Payloads.json(sequence)).build();
	}

	@Override
	public Consumers startConsumers(int concurrency, int batchSize, MessageHandler handler) {
		return start(List.of(GROUP), concurrency, handler);
	}

	@Override
	public Optional<Consumers> startIdleListeners(int listeners) {
		List<String> groups = new ArrayList<>();
		for (int i = 0; i < listeners; i++) {
			groups.add("idle-" + i);
		}
		return Optional.of(start(groups, 1, (n) -> {
		}));
	}

	private Consumers start(List<String> groups, int concurrency, MessageHandler handler) {
		PostgresChannelMessageTableSubscriber subscriber = new PostgresChannelMessageTableSubscriber(
				() -> DriverManager.getConnection(this.database.jdbcUrl(), this.database.username(), "")
					.unwrap(PgConnection.class));
		List<PostgresSubscribableChannel> channels = new ArrayList<>();
		List<ThreadPoolExecutor> executors = new ArrayList<>();
		for (String group : groups) {
			// At most `concurrency` dispatch loops run; a wake-up beyond those finds them busy.
			ThreadPoolExecutor executor = new ThreadPoolExecutor(concurrency, concurrency, 0, TimeUnit.SECONDS,
					new ArrayBlockingQueue<>(concurrency), new ThreadPoolExecutor.DiscardPolicy());
			PostgresSubscribableChannel channel = new PostgresSubscribableChannel(this.consumerStore, group, subscriber);
			channel.setBeanName("si-" + group);
			// Outside an application context: an empty bean factory gives Spring Integration's defaults.
			channel.setBeanFactory(this.beanFactory);
			channel.setTransactionManager(this.consumerTransactions);
			channel.setDispatcherExecutor(executor);
			channel.subscribe((message) -> handler.onMessage(Payloads.sequence((String) message.getPayload())));
			channel.afterPropertiesSet();
			subscriber.subscribe(channel);
			channels.add(channel);
			executors.add(executor);
		}
		subscriber.start();
		for (PostgresSubscribableChannel channel : channels) {
			for (int i = 0; i < concurrency; i++) {
				channel.notifyUpdate();
			}
		}
		return () -> {
			subscriber.stop();
			channels.forEach(subscriber::unsubscribe);
			for (ThreadPoolExecutor executor : executors) {
				executor.shutdown();
				try {
					executor.awaitTermination(30, TimeUnit.SECONDS);
				}
				catch (InterruptedException ex) {
					Thread.currentThread().interrupt();
				}
			}
		};
	}

	@Override
	public void preload(int count, Duration delay) {
		if (!delay.isZero()) {
			throw new UnsupportedOperationException("The channel message store has no delayed messages");
		}
		String sql = """
				INSERT INTO int_channel_message (message_id, group_key, region, created_date, message_priority, message_content)
				VALUES (?, ?, ?, ?, NULL, ?)""";
		try (Connection connection = this.database.adminPool().getConnection();
				PreparedStatement ps = connection.prepareStatement(sql)) {
			connection.setAutoCommit(false);
			long now = System.currentTimeMillis();
			for (int i = 0; i < count; i++) {
				Message<String> message = message(Payloads.UNTRACKED);
				UUID id = message.getHeaders().getId();
				ps.setString(1, String.valueOf(id));
				ps.setString(2, this.groupKey);
				ps.setString(3, JdbcChannelMessageStore.DEFAULT_REGION);
				ps.setLong(4, now);
				ps.setBytes(5, this.serializer.convert(message));
				ps.addBatch();
				if (i % 1000 == 999) {
					ps.executeBatch();
				}
			}
			ps.executeBatch();
			connection.commit();
			connection.setAutoCommit(true);
		}
		catch (SQLException ex) {
			throw new IllegalStateException("Could not load the Spring Integration backlog", ex);
		}
	}

	@Override
	public long pending() {
		return this.database.queryLong("SELECT count(*) FROM int_channel_message");
	}

	@Override
	public void clear() {
		this.database.execute("TRUNCATE int_channel_message");
	}

	@Override
	public String table() {
		return TABLE;
	}

}
