package io.github.pgqueue.testing;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.net.InetAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermissions;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;

import org.junit.jupiter.api.Assumptions;

import org.springframework.util.FileSystemUtils;

/**
 * A PgBouncer process of a test's own (the operating system's {@code /usr/sbin/pgbouncer}, Debian's
 * package), in front of a PostgreSQL on loopback: its ini and userlist are written to a temporary
 * directory, it listens on a free port of 127.0.0.1, and {@link #close()} stops it. It offers two
 * databases on that one server: {@code tx} (transaction pooling) and {@code session} (session
 * pooling). Without the binary the test is skipped, saying how to run it.
 */
public final class PgBouncer implements AutoCloseable {

	/** Whom PgBouncer runs as when the tests run as root, which it refuses. */
	private static final String RUN_AS = "postgres";

	/** The binary Debian's {@code pgbouncer} package installs. */
	public static final Path BINARY = Path.of("/usr/sbin/pgbouncer");

	private final Path directory;

	private final int port;

	private final int serverPort;

	private final int poolSize;

	private Process process;

	private PgBouncer(int serverPort, int poolSize) throws IOException {
		// Readable and writable by the user PgBouncer switches to when started as root.
		this.directory = Files.createTempDirectory("pgqueue-pgbouncer",
				PosixFilePermissions.asFileAttribute(PosixFilePermissions.fromString("rwxrwxrwx")));
		Files.setPosixFilePermissions(this.directory, PosixFilePermissions.fromString("rwxrwxrwx"));
		this.serverPort = serverPort;
		this.poolSize = poolSize;
		this.port = freePort();
		writeConfiguration();
		// A test JVM that ends without closing it (killed by the fork timeout) leaves no PgBouncer behind.
		Runtime.getRuntime().addShutdownHook(new Thread(() -> stopProcess(true), "pgbouncer-shutdown"));
	}

	/**
	 * Starts a PgBouncer in front of the PostgreSQL on {@code 127.0.0.1:serverPort} (database
	 * {@code postgres}, user {@code postgres}, trusted), with at most {@code poolSize} server
	 * connections per pool; skips the calling test when the binary is missing.
	 */
	public static PgBouncer start(int serverPort, int poolSize) {
		assumeInstalled();
		try {
			PgBouncer bouncer = new PgBouncer(serverPort, poolSize);
			bouncer.startProcess();
			return bouncer;
		}
		catch (IOException ex) {
			throw new UncheckedIOException("Could not start PgBouncer", ex);
		}
	}

	/** Whether {@link #BINARY} is there. */
	public static boolean isInstalled() {
		return Files.isExecutable(BINARY);
	}

	/** Skips the calling test, saying how to run it, when PgBouncer is not installed. */
	public static void assumeInstalled() {
		Assumptions.assumeTrue(isInstalled(), "PgBouncer is not installed (" + BINARY + "): this test needs "
				+ "Debian's package; run `apt-get install -y pgbouncer` (as .ci/run does) and run it again");
	}

	/** A JDBC URL of the transaction-pooled database, with {@code parameters} (e.g. {@code prepareThreshold=0}) appended. */
	public String transactionPoolUrl(String parameters) {
		return url("tx", parameters);
	}

	/** A JDBC URL of the session-pooled database, with {@code parameters} appended. */
	public String sessionPoolUrl(String parameters) {
		return url("session", parameters);
	}

	private String url(String database, String parameters) {
		return "jdbc:postgresql://127.0.0.1:" + this.port + "/" + database
				+ ((parameters == null || parameters.isEmpty()) ? "" : "?" + parameters);
	}

	public int port() {
		return this.port;
	}

	/** Kills the process (SIGKILL: every client and server connection is cut) and starts it again on the same port. */
	public synchronized void restart() {
		stopProcess(true);
		try {
			startProcess();
		}
		catch (IOException ex) {
			throw new UncheckedIOException("Could not restart PgBouncer", ex);
		}
	}

	private void writeConfiguration() throws IOException {
		String backend = "host=127.0.0.1 port=" + this.serverPort + " dbname=postgres user=postgres";
		String ini = String.join("\n",
				"[databases]",
				"tx = " + backend + " pool_mode=transaction",
				"session = " + backend + " pool_mode=session",
				"",
				"[pgbouncer]",
				"listen_addr = 127.0.0.1",
				"listen_port = " + this.port,
				"unix_socket_dir =",
				"auth_type = trust",
				"auth_file = " + this.directory.resolve("userlist.txt"),
				"pidfile = " + this.directory.resolve("pgbouncer.pid"),
				"logfile = " + this.directory.resolve("pgbouncer.log"),
				"pool_mode = transaction",
				"default_pool_size = " + this.poolSize,
				"min_pool_size = 0",
				"reserve_pool_size = 0",
				"max_client_conn = 500",
				"server_reset_query = DISCARD ALL",
				"server_check_delay = 0",
				"ignore_startup_parameters = extra_float_digits",
				"admin_users = postgres",
				"");
		Files.writeString(this.directory.resolve("pgbouncer.ini"), ini, StandardCharsets.UTF_8);
		Files.writeString(this.directory.resolve("userlist.txt"), "\"postgres\" \"\"\n", StandardCharsets.UTF_8);
	}

	private synchronized void startProcess() throws IOException {
		List<String> command = new ArrayList<>(List.of(BINARY.toString()));
		if ("root".equals(System.getProperty("user.name"))) {
			// PgBouncer refuses to run as root; it drops to this user itself (Debian's package has it).
			command.addAll(List.of("-u", RUN_AS));
		}
		command.add(this.directory.resolve("pgbouncer.ini").toString());
		this.process = new ProcessBuilder(command)
			.redirectErrorStream(true)
			.redirectOutput(this.directory.resolve("stdout.log").toFile())
			.start();
		long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(10);
		while (System.nanoTime() < deadline) {
			if (!this.process.isAlive()) {
				throw new IOException("PgBouncer exited with " + this.process.exitValue() + ": " + log());
			}
			try (Socket socket = new Socket(InetAddress.getLoopbackAddress(), this.port)) {
				return;
			}
			catch (IOException notYet) {
				try {
					Thread.sleep(20);
				}
				catch (InterruptedException ex) {
					Thread.currentThread().interrupt();
					throw new IOException("Interrupted while PgBouncer started", ex);
				}
			}
		}
		throw new IOException("PgBouncer did not listen on port " + this.port + " within 10 s: " + log());
	}

	/** PgBouncer's log so far, for failure messages. */
	public String log() {
		try {
			Path log = this.directory.resolve("pgbouncer.log");
			Path out = this.directory.resolve("stdout.log");
			return (Files.exists(log) ? Files.readString(log) : "") + (Files.exists(out) ? Files.readString(out) : "");
		}
		catch (IOException ex) {
			return "(could not read the log: " + ex + ")";
		}
	}

	private synchronized void stopProcess(boolean kill) {
		Process current = this.process;
		if (current == null) {
			return;
		}
		if (kill) {
			current.destroyForcibly();
		}
		else {
			current.destroy(); // SIGTERM: PgBouncer shuts down at once
		}
		try {
			if (!current.waitFor(10, TimeUnit.SECONDS)) {
				current.destroyForcibly();
				current.waitFor(10, TimeUnit.SECONDS);
			}
		}
		catch (InterruptedException ex) {
			Thread.currentThread().interrupt();
		}
		this.process = null;
	}

	/** Stops PgBouncer (SIGTERM) and deletes its directory. */
	@Override
	public void close() {
		stopProcess(false);
		FileSystemUtils.deleteRecursively(this.directory.toFile());
	}

	private static int freePort() throws IOException {
		try (ServerSocket socket = new ServerSocket(0, 1, InetAddress.getLoopbackAddress())) {
			return socket.getLocalPort();
		}
	}

}
