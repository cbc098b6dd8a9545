package io.github.pgqueue.reliability;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.sql.Connection;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.time.Duration;
import java.time.Instant;
import java.util.Map;
import java.util.Set;

import static org.awaitility.Awaitility.await;

/**
 * A primary and a streaming standby in synchronous replication, both started here on the embedded
 * binaries. The standby is made from a base backup taken with the server's low-level API
 * ({@code pg_backup_start}, a copy of the data directory, {@code pg_backup_stop}, whose label is
 * written as {@code backup_label}), since the embedded binaries have no {@code pg_basebackup}; it
 * streams from a physical replication slot created before the backup, so the WAL it needs is
 * kept. Synchronous replication is switched on once the standby streams: from then on a commit
 * returns only when the standby has flushed it.
 */
final class ReplicatedPair implements AutoCloseable {

	/** The standby's {@code application_name}, which {@code synchronous_standby_names} names. */
	private static final String STANDBY = "pgqueue_standby";

	/** What a base backup leaves out: the server's runtime files, the WAL (streamed), the slots. */
	private static final Set<String> LEFT_OUT = Set.of("postmaster.pid", "postmaster.opts", "epg-lock",
			"backup_label", "tablespace_map", "standby.signal", "recovery.signal");

	private static final Set<String> EMPTIED = Set.of("pg_wal", "pg_replslot", "pg_stat_tmp", "pg_dynshmem",
			"pg_notify", "pg_serial", "pg_snapshots", "pg_subtrans");

	private final ScenarioServer primary;

	private ScenarioServer standby;

	private ReplicatedPair(ScenarioServer primary) {
		this.primary = primary;
	}

	/** Starts the primary with pgqueue's migrations, then builds the standby and waits until it is synchronous. */
	static ReplicatedPair start() {
		ReplicatedPair pair = new ReplicatedPair(ScenarioServer.initialize("primary",
				Map.of("wal_level", "replica", "max_wal_senders", "4", "max_replication_slots", "4",
						"wal_keep_size", "256MB")));
		try {
			pair.primary.migrate();
			pair.startStandby();
			return pair;
		}
		catch (RuntimeException | Error ex) {
			pair.close();
			throw ex;
		}
	}

	ScenarioServer primary() {
		return this.primary;
	}

	ScenarioServer standby() {
		return this.standby;
	}

	/**
	 * A URL naming both servers, primary first, that connects only to the one that takes writes;
	 * the driver's other settings are its defaults but for a 5 s connect timeout.
	 */
	String multiHostUrl() {
		return "jdbc:postgresql://localhost:" + this.primary.port() + ",localhost:" + this.standby.port()
				+ "/postgres?targetServerType=primary&connectTimeout=5";
	}

	private void startStandby() {
		Path copy;
		try {
			copy = Files.createTempDirectory("pgqueue-standby");
		}
		catch (IOException ex) {
			throw new UncheckedIOException(ex);
		}
		this.primary.execute("SELECT pg_create_physical_replication_slot('" + STANDBY + "', true)");
		try (Connection backup = this.primary.connect(); Statement statement = backup.createStatement()) {
			// The backup lasts as long as this session; fast = an immediate checkpoint.
			statement.execute("SELECT pg_backup_start('pgqueue-standby', true)");
			ScenarioServer.copyTree(this.primary.dataDirectory(), copy, ReplicatedPair::leftOut);
			try (ResultSet stop = statement.executeQuery("SELECT labelfile, spcmapfile FROM pg_backup_stop(true)")) {
				stop.next();
				Files.writeString(copy.resolve("backup_label"), stop.getString(1), StandardCharsets.UTF_8);
			}
			Files.writeString(copy.resolve("standby.signal"), "");
			Files.writeString(copy.resolve("postgresql.auto.conf"), """
					primary_conninfo = 'host=localhost port=%d user=%s application_name=%s'
					primary_slot_name = '%s'
					""".formatted(this.primary.port(), this.primary.username(), STANDBY, STANDBY),
					StandardCharsets.UTF_8, StandardOpenOption.APPEND);
		}
		catch (SQLException ex) {
			throw new IllegalStateException("The base backup of the primary failed", ex);
		}
		catch (IOException ex) {
			throw new UncheckedIOException("Could not copy the primary's data directory", ex);
		}
		this.standby = ScenarioServer.onDataDirectory("standby", copy, Map.of("hot_standby", "on"));
		await().atMost(Duration.ofSeconds(60)).pollInterval(Duration.ofMillis(100))
			.until(() -> streaming("streaming"));
		this.primary.execute("ALTER SYSTEM SET synchronous_standby_names = '" + STANDBY + "'");
		this.primary.execute("SELECT pg_reload_conf()");
		await().atMost(Duration.ofSeconds(30)).pollInterval(Duration.ofMillis(100)).until(this::synchronous);
	}

	private boolean streaming(String state) throws SQLException {
		try (Connection connection = this.primary.connect(); Statement statement = connection.createStatement();
				ResultSet rs = statement.executeQuery("SELECT count(*) FROM pg_stat_replication "
						+ "WHERE application_name = '" + STANDBY + "' AND state = '" + state + "'")) {
			rs.next();
			return rs.getLong(1) > 0;
		}
	}

	/** Whether the standby is the synchronous one: a commit on the primary waits for its flush. */
	boolean synchronous() throws SQLException {
		try (Connection connection = this.primary.connect(); Statement statement = connection.createStatement();
				ResultSet rs = statement.executeQuery("SELECT count(*) FROM pg_stat_replication "
						+ "WHERE application_name = '" + STANDBY + "' AND sync_state = 'sync'")) {
			rs.next();
			return rs.getLong(1) > 0;
		}
	}

	/** Promotes the standby, waits until it takes writes, and returns its clock at that moment. */
	Instant promote() {
		try (Connection connection = this.standby.connect(); Statement statement = connection.createStatement()) {
			statement.execute("SELECT pg_promote(true, 60)");
		}
		catch (SQLException ex) {
			throw new IllegalStateException("Could not promote the standby", ex);
		}
		await().atMost(Duration.ofSeconds(60)).pollInterval(Duration.ofMillis(50)).until(() -> {
			try (Connection connection = this.standby.connect(); Statement statement = connection.createStatement();
					ResultSet rs = statement.executeQuery("SELECT pg_is_in_recovery()")) {
				rs.next();
				return !rs.getBoolean(1);
			}
		});
		try (Connection connection = this.standby.connect(); Statement statement = connection.createStatement();
				ResultSet rs = statement.executeQuery("SELECT clock_timestamp()")) {
			rs.next();
			return rs.getTimestamp(1).toInstant();
		}
		catch (SQLException ex) {
			throw new IllegalStateException("The promoted standby does not answer", ex);
		}
	}

	private static boolean leftOut(Path relative) {
		if (relative.getNameCount() == 1) {
			return LEFT_OUT.contains(relative.toString());
		}
		// The folders stay, empty: the standby makes what it needs in them (pg_wal/archive_status too).
		return EMPTIED.contains(relative.getName(0).toString());
	}

	@Override
	public void close() {
		if (this.standby != null) {
			this.standby.close();
		}
		this.primary.close();
	}

}
