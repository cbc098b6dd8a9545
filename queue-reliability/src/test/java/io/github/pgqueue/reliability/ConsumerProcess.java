package io.github.pgqueue.reliability;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;

/**
 * One consumer JVM: the {@link ChaosConsumerApplication} started with the test JVM's java binary
 * and class path, its output in a log file of its own. Signals go through {@code kill}, so that
 * a test can stop, continue, kill and terminate it like an operator or an OOM killer would.
 */
final class ConsumerProcess {

	private static final List<String> JVM_OPTIONS = List.of("-Xmx192m", "-Xss512k", "-XX:+UseSerialGC",
			"-XX:TieredStopAtLevel=1", "-XX:-UsePerfData", "-Djava.awt.headless=true");

	private final String name;

	private final Process process;

	private final Path log;

	private ConsumerProcess(String name, Process process, Path log) {
		this.name = name;
		this.process = process;
		this.log = log;
	}

	/** Starts {@code name} with {@code arguments} (Spring Boot's {@code --key=value}), logging to {@code log}. */
	static ConsumerProcess start(String name, List<String> jvmOptions, List<String> arguments, Path log) {
		return start(name, List.of(), jvmOptions, arguments, log);
	}

	/**
	 * Starts {@code name} through {@code launcher} (a command that runs the JVM in place of itself,
	 * such as {@code ip netns exec <namespace>}: the process's pid stays the JVM's).
	 */
	static ConsumerProcess start(String name, List<String> launcher, List<String> jvmOptions, List<String> arguments,
			Path log) {
		List<String> command = new ArrayList<>(launcher);
		command.add(Path.of(System.getProperty("java.home"), "bin", "java").toString());
		command.addAll(JVM_OPTIONS);
		command.addAll(jvmOptions);
		command.add("-cp");
		command.add(System.getProperty("java.class.path"));
		command.add(ChaosConsumerApplication.class.getName());
		command.addAll(arguments);
		try {
			Files.createDirectories(log.getParent());
			ProcessBuilder builder = new ProcessBuilder(command).redirectErrorStream(true)
				.redirectOutput(log.toFile());
			return new ConsumerProcess(name, builder.start(), log);
		}
		catch (IOException ex) {
			throw new UncheckedIOException("Could not start consumer " + name, ex);
		}
	}

	String name() {
		return this.name;
	}

	long pid() {
		return this.process.pid();
	}

	boolean isAlive() {
		return this.process.isAlive();
	}

	/** Freezes the JVM (SIGSTOP): whatever it was doing stays half done until {@link #resume()}. */
	void pause() {
		signal("STOP");
	}

	void resume() {
		signal("CONT");
	}

	/** kill -9. */
	void kill() {
		signal("KILL");
		awaitExit(Duration.ofSeconds(30));
	}

	/** SIGTERM: the JVM runs its shutdown hooks, Spring closes the context. */
	void terminate() {
		signal("TERM");
	}

	/** Waits for the JVM to end and returns its exit code. */
	int awaitExit(Duration timeout) {
		try {
			if (!this.process.waitFor(timeout.toMillis(), TimeUnit.MILLISECONDS)) {
				throw new IllegalStateException("Consumer " + this.name + " (pid " + pid() + ") did not exit within "
						+ timeout + "; log: " + this.log);
			}
			return this.process.exitValue();
		}
		catch (InterruptedException ex) {
			Thread.currentThread().interrupt();
			throw new IllegalStateException("Interrupted waiting for consumer " + this.name, ex);
		}
	}

	/** CPU time the JVM has used so far. */
	Duration cpuTime() {
		return this.process.info().totalCpuDuration()
			.orElseThrow(() -> new IllegalStateException("No CPU time for pid " + pid()));
	}

	/** CPU time the JVM has used so far, or {@code last} once it is gone. */
	Duration cpuTimeOr(Duration last) {
		return this.process.info().totalCpuDuration().orElse(last);
	}

	/** Kills the JVM if it still runs; used on the way out of a scenario. */
	void destroy() {
		if (this.process.isAlive()) {
			this.process.destroyForcibly();
			try {
				this.process.waitFor(30, TimeUnit.SECONDS);
			}
			catch (InterruptedException ex) {
				Thread.currentThread().interrupt();
			}
		}
	}

	/** What the JVM printed so far. */
	String output() {
		try {
			return Files.readString(this.log, StandardCharsets.UTF_8);
		}
		catch (IOException ex) {
			throw new UncheckedIOException(ex);
		}
	}

	/** The last lines of the output, for failure messages. */
	String tail(int lines) {
		List<String> all = output().lines().toList();
		return String.join("\n", all.subList(Math.max(0, all.size() - lines), all.size()));
	}

	private void signal(String signal) {
		Signals.send(signal, pid());
	}

	@Override
	public String toString() {
		return this.name + " (pid " + pid() + ")";
	}

}
