package io.github.pgqueue.reliability;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.util.concurrent.TimeUnit;

/** Sends POSIX signals with {@code kill}, which the JDK offers only as TERM and KILL. */
final class Signals {

	private Signals() {
	}

	/** Sends {@code signal} (STOP, CONT, KILL, TERM, QUIT) to {@code pid}. */
	static void send(String signal, long pid) {
		try {
			Process kill = new ProcessBuilder("kill", "-s", signal, Long.toString(pid)).redirectErrorStream(true)
				.start();
			String output = new String(kill.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
			if (!kill.waitFor(10, TimeUnit.SECONDS) || kill.exitValue() != 0) {
				throw new IllegalStateException("kill -s " + signal + " " + pid + " failed: " + output.strip());
			}
		}
		catch (IOException ex) {
			throw new UncheckedIOException("Could not run kill", ex);
		}
		catch (InterruptedException ex) {
			Thread.currentThread().interrupt();
			throw new IllegalStateException("Interrupted sending " + signal + " to " + pid, ex);
		}
	}

}
