package io.github.pgqueue.testing;

import java.lang.reflect.Type;
import java.time.Duration;
import java.util.List;
import java.util.function.Function;

import javax.sql.DataSource;

import com.zaxxer.hikari.HikariDataSource;
import io.github.pgqueue.QueueAdmin;
import io.github.pgqueue.QueueTemplate;
import io.github.pgqueue.listener.ContainerProperties;
import io.github.pgqueue.listener.QueueBatchListener;
import io.github.pgqueue.listener.QueueListenerEndpoint;
import io.github.pgqueue.listener.QueueListenerEndpointRegistry;
import io.github.pgqueue.listener.QueueMessageListener;
import org.junit.jupiter.api.extension.AfterEachCallback;
import org.junit.jupiter.api.extension.ExtensionContext;

/**
 * What a listener integration test sets up around the shared {@link EmbeddedPostgres}: an
 * application pool with the {@link QueueTemplate} and {@link QueueAdmin} on it, a consumer pool,
 * and a {@link QueueListenerEndpointRegistry} whose pollers take their sessions from that pool.
 * Register it on an instance field with {@code @RegisterExtension}, next to
 * {@code @ExtendWith(PostgresExtension.class)}, which empties the tables before each test.
 * <p>
 * Everything is built on first use, so a test that never starts a listener opens no consumer
 * pool, and a test that changes a database default first gets sessions that see it; after each test the registry is stopped, and the pools the fixture opened are closed, so
 * no poller or session of one test lives on into the next. The stop runs after the test class's
 * own {@code @AfterEach} methods.
 * <p>
 * The pools keep the names the tests gave them: each session shows its pool's name as
 * {@code application_name}, which a test may use to find or terminate the sessions of one pool.
 * The pools' sizes are the tests' own, because some of them bound how many pollers and handlers
 * can run at once.
 */
public final class ListenerFixture implements AfterEachCallback {

	/**
	 * The poll interval of {@link #properties}: short, so that a test never waits long for a
	 * poller that missed a notification, or for a message whose delay is over.
	 */
	public static final Duration POLL_INTERVAL = Duration.ofMillis(50);

	/**
	 * How long running handlers may take to finish when {@link #registry()} stops: long enough for
	 * a handler that is about to end, short enough that a test whose handler hangs fails soon.
	 */
	public static final Duration SHUTDOWN_TIMEOUT = Duration.ofSeconds(5);

	private final String appName;

	private final int appSize;

	private final String consumerName;

	private final int consumerSize;

	private Function<DataSource, QueueTemplate> templateFactory = (app) -> QueueTemplate.builder(app).build();

	private HikariDataSource app;

	private HikariDataSource consumerPool;

	private QueueTemplate template;

	private QueueAdmin admin;

	private QueueListenerEndpointRegistry registry;

	private ListenerFixture(String appName, int appSize, String consumerName, int consumerSize) {
		this.appName = appName;
		this.appSize = appSize;
		this.consumerName = consumerName;
		this.consumerSize = consumerSize;
	}

	/**
	 * A fixture whose template works on a pool of its own, {@code appName} of at most
	 * {@code appSize} connections, and whose pollers take theirs from {@code consumerName}, of at
	 * most {@code consumerSize}: for tests whose handlers write through the application's data
	 * source, which must not take connections from the shared pool the test checks with.
	 */
	public static ListenerFixture pools(String appName, int appSize, String consumerName, int consumerSize) {
		return new ListenerFixture(appName, appSize, consumerName, consumerSize);
	}

	/**
	 * A fixture whose template works on the shared data source and whose pollers take their
	 * sessions from a pool {@code consumerName} of at most {@code consumerSize} connections.
	 */
	public static ListenerFixture consumers(String consumerName, int consumerSize) {
		return new ListenerFixture(null, 0, consumerName, consumerSize);
	}

	/**
	 * Builds the {@link #template()} with {@code factory} from {@link #app()}, for a test that
	 * needs a context of its own (a meter registry, an observation registry); the admin and the
	 * registry work in that template's context.
	 */
	public ListenerFixture withTemplate(Function<DataSource, QueueTemplate> factory) {
		this.templateFactory = factory;
		return this;
	}

	/** The data source the template works on: the application's pool, or the shared one. */
	public DataSource app() {
		if (this.appName == null) {
			return EmbeddedPostgres.get().dataSource();
		}
		if (this.app == null) {
			this.app = EmbeddedPostgres.get().pool(this.appName, this.appSize);
		}
		return this.app;
	}

	/** The pool the registry's pollers and its LISTEN connection take their sessions from. */
	public HikariDataSource consumerPool() {
		if (this.consumerPool == null) {
			this.consumerPool = EmbeddedPostgres.get().pool(this.consumerName, this.consumerSize);
		}
		return this.consumerPool;
	}

	/** A template on {@link #app()}: with default settings, unless {@link #withTemplate} says otherwise. */
	public QueueTemplate template() {
		if (this.template == null) {
			this.template = this.templateFactory.apply(app());
		}
		return this.template;
	}

	/** An admin in the {@link #template()}'s context. */
	public QueueAdmin admin() {
		if (this.admin == null) {
			this.admin = new QueueAdmin(template().context());
		}
		return this.admin;
	}

	/**
	 * The registry of this test, built on first use in the template's context, on the consumer
	 * pool, with {@link #SHUTDOWN_TIMEOUT}.
	 */
	public QueueListenerEndpointRegistry registry() {
		return registry(SHUTDOWN_TIMEOUT);
	}

	/**
	 * The registry of this test, built on first use with {@code shutdownTimeout}; a registry built
	 * already keeps the timeout it was built with, so a test that wants another one calls
	 * {@link #stop()} first.
	 */
	public QueueListenerEndpointRegistry registry(Duration shutdownTimeout) {
		if (this.registry == null) {
			this.registry = new QueueListenerEndpointRegistry(template().context(), consumerPool(), shutdownTimeout);
		}
		return this.registry;
	}

	/** Registers {@code endpoints} with the {@link #registry()} and starts it. */
	public QueueListenerEndpointRegistry start(QueueListenerEndpoint... endpoints) {
		QueueListenerEndpointRegistry registry = registry();
		for (QueueListenerEndpoint endpoint : endpoints) {
			registry.registerListenerEndpoint(endpoint);
		}
		registry.start();
		return registry;
	}

	/**
	 * Stops the registry, if one was built, and forgets it: the next {@link #registry()} builds a
	 * new one. For a test that looks at what a stop leaves behind, or starts its listeners again.
	 */
	public void stop() {
		if (this.registry != null) {
			this.registry.stop();
			this.registry = null;
		}
	}

	/**
	 * Stops the registry, then closes the pools this fixture opened, consumers first: the pollers
	 * give their sessions back on stop, and handlers may write through the application's pool
	 * until then.
	 */
	@Override
	public void afterEach(ExtensionContext context) {
		try {
			stop();
		}
		finally {
			if (this.consumerPool != null) {
				this.consumerPool.close();
				this.consumerPool = null;
			}
			if (this.app != null) {
				this.app.close();
				this.app = null;
			}
			this.template = null;
			this.admin = null;
		}
	}

	/**
	 * Container properties for {@code queues} with the tests' usual {@link #POLL_INTERVAL}; a test
	 * adds its own settings (concurrency, mode, batch size, a longer poll interval) to the builder.
	 */
	public static ContainerProperties.Builder properties(String... queues) {
		return properties(List.of(queues));
	}

	/** Container properties for {@code queues} with the tests' usual {@link #POLL_INTERVAL}. */
	public static ContainerProperties.Builder properties(List<String> queues) {
		return ContainerProperties.builder(queues).pollInterval(POLL_INTERVAL);
	}

	/** An endpoint {@code id} whose {@code listener} takes payloads of {@code payloadType}. */
	public static QueueListenerEndpoint endpoint(String id, Type payloadType, QueueMessageListener listener,
			ContainerProperties.Builder properties) {
		return QueueListenerEndpoint.builder(id)
			.listener(payloadType, listener)
			.containerProperties(properties.build())
			.build();
	}

	/** An endpoint {@code id} whose batch {@code listener} takes payloads of {@code payloadType}. */
	public static QueueListenerEndpoint batchEndpoint(String id, Type payloadType, QueueBatchListener listener,
			ContainerProperties.Builder properties) {
		return QueueListenerEndpoint.builder(id)
			.batchListener(payloadType, listener)
			.containerProperties(properties.build())
			.build();
	}

}
