package io.github.pgqueue.reliability;

import com.zaxxer.hikari.HikariConfig;
import com.zaxxer.hikari.HikariDataSource;
import io.github.pgqueue.QueueMessage;

import org.springframework.beans.factory.DisposableBean;
import org.springframework.jdbc.core.JdbcTemplate;

/**
 * Writes what the handlers of this JVM saw into {@code chaos.delivery}, each row committed before
 * the handler goes on, and asks the database to record and inject session faults. Uses a pool of
 * its own, so that terminating the consumer's sessions never touches it.
 */
public class DeliveryRecorder implements DisposableBean {

	private final ChaosProperties properties;

	private final long jvmPid = ProcessHandle.current().pid();

	private final HikariDataSource pool;

	private final JdbcTemplate jdbc;

	public DeliveryRecorder(ChaosProperties properties) {
		this.properties = properties;
		HikariConfig config = new HikariConfig();
		config.setPoolName("chaos-recorder");
		config.setJdbcUrl(properties.recorderUrl());
		config.setUsername(properties.username());
		config.setMaximumPoolSize(8);
		config.setMinimumIdle(0);
		config.setAutoCommit(true);
		this.pool = new HikariDataSource(config);
		this.jdbc = new JdbcTemplate(this.pool);
	}

	/** Records one delivery; committed when this returns. */
	public void record(long key, QueueMessage<?> message, Fault fault, boolean listenerRunning) {
		Object payload = message.payload();
		this.jdbc.update("""
				INSERT INTO chaos.delivery (key, message_id, queue, attempt, consumer, jvm_pid, thread, fault,
				                            listener_running, payload_type, canaries)
				VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)""", key, message.id(), message.queue(), message.attempt(),
				this.properties.consumer(), this.jvmPid, Thread.currentThread().getName(),
				(fault != null) ? fault.name() : null, listenerRunning,
				(payload != null) ? payload.getClass().getName() : null, Canary.instances());
	}

	/**
	 * Records that the handler of {@code message} has ended its work, if this consumer was told to
	 * ({@code --chaos.record-ends=true}); committed when this returns, before the ack.
	 */
	public void recordEnd(QueueMessage<?> message) {
		if (this.properties.recordEnds()) {
			this.jdbc.update("UPDATE chaos.delivery SET ended_at = clock_timestamp() "
					+ "WHERE message_id = ? AND attempt = ? AND consumer = ?", message.id(), message.attempt(),
					this.properties.consumer());
		}
	}

	/**
	 * Records every claim held by the session that holds {@code messageId} as faulted, then
	 * terminates that session and waits until it is gone.
	 */
	public void terminateHolderOf(long messageId, Fault fault) {
		this.jdbc.queryForObject("SELECT chaos.fault_backends(chaos.holder_of(?), ?, true)", Integer.class, messageId,
				fault.name());
	}

	/** Records every claim held by the sessions of this consumer (all its pollers) as faulted. */
	public void faultConsumer(Fault fault) {
		this.jdbc.queryForObject("SELECT chaos.fault_backends(chaos.backends_of(?), ?, false)", Integer.class,
				this.properties.consumer(), fault.name());
	}

	/** Records the delivery of {@code message} as faulted: it ends without an ack, for {@code reason}. */
	public void faultDelivery(QueueMessage<?> message, String reason) {
		this.jdbc.update("INSERT INTO chaos.fault (message_id, attempt, reason) VALUES (?, ?, ?)", message.id(),
				message.attempt(), reason);
	}

	/** Tells the harness this consumer is up and polling. */
	public void registerConsumer() {
		this.jdbc.update("INSERT INTO chaos.consumer (name, jvm_pid) VALUES (?, ?)", this.properties.consumer(),
				this.jvmPid);
	}

	/** The recorder's connections, apart from the consumer's own sessions. */
	public JdbcTemplate jdbc() {
		return this.jdbc;
	}

	@Override
	public void destroy() {
		this.pool.close();
	}

}
