package io.github.pgqueue.benchmarks;

import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStreamReader;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;

/**
 * {@code memory}: heap (after GC) and RSS of a JVM of its own ({@link MemoryProbe}, -Xmx256m) with
 * no listener, with 10 idle listeners, and draining 200 000 messages with one 4-thread listener.
 * Heap per idle listener is the difference between the first two over 10.
 */
final class MemoryScenario {

	private final BenchContext context;

	MemoryScenario(BenchContext context) {
		this.context = context;
	}

	void run() {
		QueueSystem system = this.context.system("pgqueue");
		system.clear();
		Map<String, Long> none = probe("none", 0);
		Map<String, Long> idle = probe("idle", 0);
		int backlog = this.context.options().drainBacklog();
		Drain.prepare(this.context, system, backlog);
		Map<String, Long> drain = probe("drain", backlog);
		system.clear();
		add("none", 0, none);
		add("idle", 10, idle);
		add("drain", 4, drain);
		double perListenerKb = (idle.get("heap_after_gc") - none.get("heap_after_gc")) / 10.0 / 1024;
		this.context.results()
			.add(new BenchRow("memory", "pgqueue", 10, "-", 0, null, null, null, Map.of())
				.with("mode", "idle-per-listener")
				.with("heap_kb_per_listener", perListenerKb)
				.with("rss_kb_per_listener", (idle.get("rss_kb") - none.get("rss_kb")) / 10.0));
	}

	private void add(String mode, int consumers, Map<String, Long> probe) {
		this.context.results()
			.add(new BenchRow("memory", "pgqueue", consumers, "-", probe.get("handled"), null, null, null, Map.of())
				.with("mode", mode)
				.with("heap_after_gc_mb", probe.get("heap_after_gc") / 1048576.0)
				.with("heap_peak_mb", probe.get("heap_peak") / 1048576.0)
				.with("rss_mb", probe.get("rss_kb") / 1024.0)
				.with("rss_peak_mb", probe.get("rss_peak_kb") / 1024.0));
	}

	private Map<String, Long> probe(String mode, long expected) {
		String java = ProcessHandle.current().info().command().orElse("java");
		List<String> command = new ArrayList<>(List.of(java, "-Xms64m", "-Xmx256m", "-cp",
				System.getProperty("java.class.path"), MemoryProbe.class.getName(), this.context.database().jdbcUrl(),
				mode, String.valueOf(expected)));
		try {
			Process process = new ProcessBuilder(command).redirectErrorStream(true).start();
			Map<String, Long> values = new HashMap<>();
			try (BufferedReader reader = new BufferedReader(
					new InputStreamReader(process.getInputStream(), StandardCharsets.UTF_8))) {
				String line;
				while ((line = reader.readLine()) != null) {
					if (line.startsWith("PROBE ")) {
						for (String pair : line.substring(6).split(" ")) {
							String[] kv = pair.split("=", 2);
							if (!kv[0].equals("mode")) {
								values.put(kv[0], Long.parseLong(kv[1]));
							}
						}
					}
				}
			}
			int exit = process.waitFor();
			if (exit != 0 || values.isEmpty()) {
				throw new IllegalStateException("Memory probe '" + mode + "' failed with exit code " + exit);
			}
			return values;
		}
		catch (IOException ex) {
			throw new UncheckedIOException(ex);
		}
		catch (InterruptedException ex) {
			Thread.currentThread().interrupt();
			throw new IllegalStateException("Interrupted", ex);
		}
	}

}
