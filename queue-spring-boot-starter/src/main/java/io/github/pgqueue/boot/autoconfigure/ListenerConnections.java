package io.github.pgqueue.boot.autoconfigure;

import java.io.PrintWriter;
import java.sql.Connection;
import java.sql.SQLException;
import java.sql.SQLFeatureNotSupportedException;
import java.util.logging.Logger;

import javax.sql.DataSource;

import com.zaxxer.hikari.HikariDataSource;
import org.slf4j.LoggerFactory;

import org.springframework.beans.factory.DisposableBean;
import org.springframework.jdbc.core.JdbcTemplate;
import org.springframework.jdbc.datasource.AbstractDriverBasedDataSource;

/**
 * Where listener pollers get their connections. Each poller keeps one for as long as it runs, and
 * the LISTEN connection one more, so they must never come out of the application's own pool
 * unsized: by default they get a pool of their own, built when the first poller needs it (an
 * application without listeners never builds one) and grown with the total concurrency.
 */
final class ListenerConnections implements DisposableBean {

	/** Shown as {@code application_name} by the listeners' sessions. */
	static final String APPLICATION_NAME = "pgqueue-listener";

	private static final org.slf4j.Logger logger = LoggerFactory.getLogger(ListenerConnections.class);

	private final DataSource applicationDataSource;

	private final boolean dedicatedPool;

	/** The listeners' own URL (pgqueue.listener.jdbc-url), or null for the application's. */
	private final String jdbcUrl;

	private volatile DataSource target;

	private final DataSource view = new View();

	private HikariDataSource dedicated;

	ListenerConnections(DataSource applicationDataSource, boolean dedicatedPool) {
		this(applicationDataSource, dedicatedPool, null);
	}

	ListenerConnections(DataSource applicationDataSource, boolean dedicatedPool, String jdbcUrl) {
		this.applicationDataSource = applicationDataSource;
		this.dedicatedPool = dedicatedPool;
		this.jdbcUrl = (jdbcUrl == null || jdbcUrl.isBlank()) ? null : jdbcUrl.strip();
		if (this.jdbcUrl != null && !dedicatedPool) {
			throw new IllegalStateException("pgqueue.listener.jdbc-url is set, but pgqueue.listener.dedicated-pool is "
					+ "false: the URL is that of the listeners' own pool; remove one of the two");
		}
	}

	/**
	 * Sizes the connections for {@code pollers} pollers plus the LISTEN connection, building the
	 * dedicated pool on first use, or fails with the numbers and what to configure.
	 */
	synchronized void prepare(int pollers) {
		if (pollers == 0) {
			return;
		}
		int needed = pollers + 1;
		HikariDataSource applicationPool = unwrapHikari(this.applicationDataSource);
		if (!this.dedicatedPool) {
			if (applicationPool != null && applicationPool.getMaximumPoolSize() < needed + 2) {
				throw new IllegalStateException("pgqueue listeners need " + needed + " connections (" + pollers
						+ " pollers + 1 LISTEN) from the application's pool and should leave it at least 2, but its "
						+ "maximum-pool-size is " + applicationPool.getMaximumPoolSize()
						+ "; raise spring.datasource.hikari.maximum-pool-size to at least " + (needed + 2)
						+ " or set pgqueue.listener.dedicated-pool=true");
			}
			this.target = this.applicationDataSource;
			return;
		}
		checkServerCapacity(needed - currentSize(), pollers);
		if (this.dedicated != null) {
			this.dedicated.setMaximumPoolSize(needed);
		}
		else if (applicationPool != null) {
			this.dedicated = dedicatedPool(applicationPool, needed, this.jdbcUrl);
			this.target = this.dedicated;
		}
		else if (this.jdbcUrl != null) {
			throw new IllegalStateException("pgqueue.listener.jdbc-url is set, but the application's DataSource is a "
					+ this.applicationDataSource.getClass().getName() + ", not a Hikari pool from which pgqueue can "
					+ "copy the credentials and settings of the listeners' pool; use HikariCP, or remove the URL");
		}
		else if (unwrap(this.applicationDataSource, AbstractDriverBasedDataSource.class) != null) {
			// SimpleDriverDataSource, DriverManagerDataSource: every connection is a new one, so the
			// listeners' cannot starve anybody's pool.
			logger.info("pgqueue listeners take their {} connections straight from the application's {}, which opens "
					+ "a new one each time", needed, this.applicationDataSource.getClass().getSimpleName());
			this.target = this.applicationDataSource;
		}
		else {
			throw new IllegalStateException("pgqueue cannot build its listener pool from the application's "
					+ this.applicationDataSource.getClass().getName() + ", which is neither a Hikari pool (nor wraps "
					+ "one) nor a driver-based DataSource; set pgqueue.listener.dedicated-pool=false and make that "
					+ "pool hold " + (needed + 2) + " connections or more, or use HikariCP");
		}
	}

	private int currentSize() {
		return (this.dedicated != null) ? this.dedicated.getMaximumPoolSize() : 0;
	}

	/**
	 * A pool configured as the application's (URL or data-source class, credentials, timeouts, init
	 * SQL), on {@code jdbcUrl} instead of the application's URL when that is not null.
	 */
	private static HikariDataSource dedicatedPool(HikariDataSource applicationPool, int size, String jdbcUrl) {
		HikariDataSource pool = new HikariDataSource();
		applicationPool.copyStateTo(pool);
		if (jdbcUrl != null) {
			if (pool.getDataSource() != null || pool.getDataSourceClassName() != null) {
				throw new IllegalStateException("pgqueue.listener.jdbc-url is set, but the application's pool is "
						+ "configured with a DataSource (class) rather than a JDBC URL; set "
						+ "spring.datasource.url instead, or remove pgqueue.listener.jdbc-url");
			}
			pool.setJdbcUrl(jdbcUrl);
		}
		// Metrics and health trackers are kept: they report this pool under its own name.
		pool.setPoolName("pgqueue-listeners");
		pool.addDataSourceProperty("ApplicationName", APPLICATION_NAME);
		pool.setMinimumIdle(0);
		pool.setMaximumPoolSize(size);
		pool.setAutoCommit(true);
		pool.setReadOnly(false);
		return pool;
	}

	private static HikariDataSource unwrapHikari(DataSource dataSource) {
		return unwrap(dataSource, HikariDataSource.class);
	}

	private static <T> T unwrap(DataSource dataSource, Class<T> type) {
		if (type.isInstance(dataSource)) {
			return type.cast(dataSource);
		}
		try {
			return dataSource.isWrapperFor(type) ? dataSource.unwrap(type) : null;
		}
		catch (SQLException ex) {
			return null;
		}
	}

	/** Fails with the numbers if PostgreSQL cannot open {@code more} connections for {@code pollers} pollers. */
	private void checkServerCapacity(int more, int pollers) {
		if (more <= 0) {
			return;
		}
		JdbcTemplate jdbc = new JdbcTemplate(this.applicationDataSource);
		Integer free = jdbc.queryForObject("SELECT current_setting('max_connections')::int "
				+ "- current_setting('superuser_reserved_connections')::int "
				+ "- (SELECT count(*) FROM pg_stat_activity WHERE backend_type = 'client backend')::int", Integer.class);
		if (free != null && free < more) {
			throw new IllegalStateException("pgqueue listeners need " + (pollers + 1) + " connections (" + pollers
					+ " pollers + 1 LISTEN), but PostgreSQL has only " + free + " connections left under max_connections"
					+ ((more < pollers + 1) ? " for the " + more + " they do not have yet" : "")
					+ "; lower the listeners' concurrency or raise max_connections");
		}
	}

	/** The connections pollers take: the application's DataSource or the dedicated pool, once prepared. */
	DataSource dataSource() {
		return this.view;
	}

	private DataSource target() throws SQLException {
		DataSource current = this.target;
		if (current == null) {
			throw new SQLException("pgqueue's listener connections are not prepared: no listener has been started");
		}
		return current;
	}

	/** Not a bean: a DataSource bean would make the application's DataSource ambiguous. */
	private final class View implements DataSource {

		@Override
		public Connection getConnection() throws SQLException {
			return target().getConnection();
		}

		@Override
		public Connection getConnection(String username, String password) throws SQLException {
			return target().getConnection(username, password);
		}

		@Override
		public <T> T unwrap(Class<T> iface) throws SQLException {
			return iface.isInstance(this) ? iface.cast(this) : target().unwrap(iface);
		}

		@Override
		public boolean isWrapperFor(Class<?> iface) throws SQLException {
			DataSource current = ListenerConnections.this.target;
			return iface.isInstance(this) || (current != null && current.isWrapperFor(iface));
		}

		@Override
		public PrintWriter getLogWriter() {
			return null;
		}

		@Override
		public void setLogWriter(PrintWriter out) {
			throw new UnsupportedOperationException("setLogWriter");
		}

		@Override
		public void setLoginTimeout(int seconds) {
			throw new UnsupportedOperationException("setLoginTimeout");
		}

		@Override
		public int getLoginTimeout() {
			return 0;
		}

		@Override
		public Logger getParentLogger() throws SQLFeatureNotSupportedException {
			throw new SQLFeatureNotSupportedException();
		}

	}

	@Override
	public synchronized void destroy() {
		if (this.dedicated != null) {
			this.dedicated.close();
		}
	}

}
