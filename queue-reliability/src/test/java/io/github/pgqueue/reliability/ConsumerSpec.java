package io.github.pgqueue.reliability;

import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * How to start the consumers of a scenario: the queue and its policy, the listener, and any
 * further {@code --key=value} the scenario needs.
 */
final class ConsumerSpec {

	private final String queue;

	private final Map<String, String> properties = new LinkedHashMap<>();

	private final List<String> jvmOptions = new ArrayList<>();

	private List<String> launcher = List.of();

	/** Hosts that replace {@code localhost} in the consumer's URL and in its recorder's, or null. */
	private String queueHost;

	private String recorderHost;

	/** The URL of consumer {@code name}'s application DataSource when it goes through a pooler, or null. */
	private java.util.function.Function<String, String> pooledUrl;

	private ConsumerSpec(String queue) {
		this.queue = queue;
		property("chaos.queue", queue);
		property("chaos.concurrency", "2");
		property("pgqueue.listener.poll-interval", "500ms");
		property("pgqueue.queues." + queue + ".max-attempts", "20");
		property("pgqueue.queues." + queue + ".backoff.initial", "100ms");
	}

	/** Consumers of {@code queue}: two pollers each, 20 attempts, 100 ms back-off. */
	static ConsumerSpec of(String queue) {
		return new ConsumerSpec(queue);
	}

	String queue() {
		return this.queue;
	}

	ConsumerSpec property(String name, String value) {
		this.properties.put(name, value);
		return this;
	}

	ConsumerSpec concurrency(int pollers) {
		return property("chaos.concurrency", Integer.toString(pollers));
	}

	ConsumerSpec batchSize(int size) {
		return property("pgqueue.listener.batch-size", Integer.toString(size));
	}

	ConsumerSpec maxAttempts(int attempts) {
		return property("pgqueue.queues." + this.queue + ".max-attempts", Integer.toString(attempts));
	}

	ConsumerSpec jvmOption(String option) {
		this.jvmOptions.add(option);
		return this;
	}

	List<String> jvmOptions() {
		return List.copyOf(this.jvmOptions);
	}

	/**
	 * Consumers run inside {@code namespace}, reaching PostgreSQL on the host ends of its links:
	 * the queue's sessions on the queue link, the recorder on the record link.
	 */
	ConsumerSpec inside(NetworkNamespace namespace) {
		this.launcher = namespace.launcher();
		this.queueHost = namespace.queueHost();
		this.recorderHost = namespace.recordHost();
		return this;
	}

	/**
	 * Consumers whose application DataSource (sends, transactional listeners' transactions) takes
	 * {@code url} of their name, a pooler's; their listeners' own pool (LISTEN, sessions) and their
	 * recorder stay on a direct connection.
	 */
	ConsumerSpec throughPooler(java.util.function.Function<String, String> url) {
		this.pooledUrl = url;
		return this;
	}

	List<String> launcher() {
		return this.launcher;
	}

	/** The command line of consumer {@code name}: its sessions show {@code name} as application name. */
	List<String> arguments(String name, ChaosDatabase database) {
		Map<String, String> all = new LinkedHashMap<>();
		all.put("spring.datasource.url", onHost(database.jdbcUrl(name), this.queueHost));
		all.put("spring.datasource.username", database.username());
		all.put("spring.datasource.hikari.maximum-pool-size", "4");
		all.put("spring.datasource.hikari.minimum-idle", "0");
		all.put("chaos.consumer", name);
		all.put("chaos.recorder-url", onHost(database.jdbcUrl("rec-" + name), this.recorderHost));
		if (this.pooledUrl != null) {
			all.put("spring.datasource.url", this.pooledUrl.apply(name));
			all.put("pgqueue.listener.jdbc-url", database.jdbcUrl(name));
		}
		all.putAll(this.properties);
		List<String> arguments = new ArrayList<>();
		all.forEach((key, value) -> arguments.add("--" + key + "=" + value));
		return arguments;
	}

	private static String onHost(String url, String host) {
		return (host != null) ? url.replace("//localhost:", "//" + host + ":") : url;
	}

}
