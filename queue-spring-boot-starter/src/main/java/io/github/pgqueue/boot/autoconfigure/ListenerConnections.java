package io.github.pgqueue.boot.autoconfigure;

import java.sql.SQLException;

import javax.sql.DataSource;

import com.zaxxer.hikari.HikariDataSource;

import org.springframework.beans.factory.DisposableBean;
import org.springframework.jdbc.core.JdbcTemplate;

/**
 * Where listener pollers get their connections. Each poller keeps one for as long as it runs, and
 * the LISTEN connection one more, so they must never come out of the application's own pool
 * unsized: by default they get a pool of their own, sized at startup from the total concurrency.
 */
final class ListenerConnections implements DisposableBean {

	/** Shown as {@code application_name} by the listeners' sessions. */
	static final String APPLICATION_NAME = "pgqueue-listener";

	private final DataSource applicationDataSource;

	private final HikariDataSource dedicated;

	ListenerConnections(DataSource applicationDataSource, boolean dedicatedPool) {
		this.applicationDataSource = applicationDataSource;
		this.dedicated = dedicatedPool ? dedicatedPool(applicationDataSource) : null;
	}

	private static HikariDataSource dedicatedPool(DataSource applicationDataSource) {
		HikariDataSource source = unwrapHikari(applicationDataSource);
		if (source == null || source.getJdbcUrl() == null) {
			throw new IllegalStateException("pgqueue cannot build its listener pool from the application's "
					+ applicationDataSource.getClass().getName() + ": it needs a Hikari pool configured with a JDBC "
					+ "URL (spring.datasource.url). Either configure that, or set pgqueue.listener.dedicated-pool=false "
					+ "and size your pool for the listeners");
		}
		HikariDataSource pool = new HikariDataSource();
		pool.setPoolName("pgqueue-listeners");
		pool.setJdbcUrl(source.getJdbcUrl());
		pool.setUsername(source.getUsername());
		pool.setPassword(source.getPassword());
		if (source.getDriverClassName() != null) {
			pool.setDriverClassName(source.getDriverClassName());
		}
		pool.setDataSourceProperties(source.getDataSourceProperties());
		pool.addDataSourceProperty("ApplicationName", APPLICATION_NAME);
		pool.setMinimumIdle(0);
		pool.setAutoCommit(true);
		return pool;
	}

	private static HikariDataSource unwrapHikari(DataSource dataSource) {
		try {
			return dataSource.isWrapperFor(HikariDataSource.class) ? dataSource.unwrap(HikariDataSource.class) : null;
		}
		catch (SQLException ex) {
			return null;
		}
	}

	DataSource dataSource() {
		return (this.dedicated != null) ? this.dedicated : this.applicationDataSource;
	}

	/**
	 * Sizes the connections for {@code pollers} pollers plus the LISTEN connection, or fails with
	 * the numbers when that cannot work.
	 */
	void prepare(int pollers) {
		if (pollers == 0) {
			return;
		}
		int needed = pollers + 1;
		if (this.dedicated != null) {
			this.dedicated.setMaximumPoolSize(needed);
			checkServerCapacity(needed);
			return;
		}
		HikariDataSource shared = unwrapHikari(this.applicationDataSource);
		if (shared != null && shared.getMaximumPoolSize() < needed + 2) {
			throw new IllegalStateException("pgqueue listeners need " + needed + " connections (" + pollers
					+ " pollers + 1 LISTEN) from the application's pool and should leave it at least 2, but its "
					+ "maximum-pool-size is " + shared.getMaximumPoolSize()
					+ "; raise spring.datasource.hikari.maximum-pool-size to at least "
					+ (needed + 2) + " or set pgqueue.listener.dedicated-pool=true");
		}
	}

	private void checkServerCapacity(int needed) {
		JdbcTemplate jdbc = new JdbcTemplate(this.applicationDataSource);
		Integer free = jdbc.queryForObject("SELECT current_setting('max_connections')::int "
				+ "- current_setting('superuser_reserved_connections')::int "
				+ "- (SELECT count(*) FROM pg_stat_activity WHERE backend_type = 'client backend')::int", Integer.class);
		if (free != null && free < needed) {
			throw new IllegalStateException("pgqueue listeners need " + needed + " connections (" + (needed - 1)
					+ " pollers + 1 LISTEN), but PostgreSQL has only " + free
					+ " connections left under max_connections; lower the listeners' concurrency or raise "
					+ "max_connections");
		}
	}

	@Override
	public void destroy() {
		if (this.dedicated != null) {
			this.dedicated.close();
		}
	}

}
