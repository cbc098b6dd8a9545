package io.github.pgqueue.reliability;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.TimeUnit;

/**
 * A network namespace of the test's own, joined to the host's by two veth pairs: the queue link,
 * which the test cuts, and the record link, which stays up so that the harness's own record of
 * deliveries is never part of the fault. A process started with {@link #launcher()} sees only
 * these links; PostgreSQL listens on their host ends. The namespace, and with it both pairs, is
 * deleted on {@link #close()}.
 */
final class NetworkNamespace implements AutoCloseable {

	private final String name;

	private final String subnet;

	private final String queueLink;

	private final String recordLink;

	private NetworkNamespace(String name, String subnet) {
		this.name = name;
		this.subnet = subnet;
		String tag = name.substring(name.length() - 4);
		this.queueLink = "pgqq" + tag;
		this.recordLink = "pgqr" + tag;
	}

	/**
	 * Why a namespace cannot be made here (not root, no {@code ip}, no veth), or null if it can: a
	 * scenario that needs one skips with this reason.
	 */
	static String unavailableBecause() {
		if (!"root".equals(System.getProperty("user.name"))) {
			return "network namespaces need root (running as " + System.getProperty("user.name") + ")";
		}
		String probe = "pgqprobe" + ThreadLocalRandom.current().nextInt(1000, 10000);
		Result add = run("ip", "link", "add", probe, "type", "veth", "peer", "name", probe + "p");
		if (add.status() != 0) {
			return "cannot create a veth pair with ip(8): " + add.output();
		}
		run("ip", "link", "del", probe);
		Result namespace = run("ip", "netns", "add", probe);
		if (namespace.status() != 0) {
			return "cannot create a network namespace with ip(8): " + namespace.output();
		}
		run("ip", "netns", "del", probe);
		return null;
	}

	/** Creates a namespace with its two links, each a /30 of 10.213.x.0/24 with x chosen at random. */
	static NetworkNamespace create() {
		int x = ThreadLocalRandom.current().nextInt(16, 250);
		String name = "pgqueue-part-" + ThreadLocalRandom.current().nextInt(1000, 10000);
		NetworkNamespace namespace = new NetworkNamespace(name, "10.213." + x);
		try {
			namespace.build();
			// Also when the JVM is stopped before the test's own clean-up runs (a fork timeout).
			Runtime.getRuntime().addShutdownHook(new Thread(namespace::close, "delete-" + name));
			return namespace;
		}
		catch (RuntimeException ex) {
			namespace.close();
			throw ex;
		}
	}

	private void build() {
		check("ip", "netns", "add", this.name);
		check("ip", "netns", "exec", this.name, "ip", "link", "set", "lo", "up");
		link(this.queueLink, 0);
		link(this.recordLink, 4);
	}

	private void link(String link, int base) {
		check("ip", "link", "add", link, "type", "veth", "peer", "name", link + "n");
		check("ip", "link", "set", link + "n", "netns", this.name);
		check("ip", "addr", "add", this.subnet + "." + (base + 1) + "/30", "dev", link);
		check("ip", "link", "set", link, "up");
		check("ip", "netns", "exec", this.name, "ip", "addr", "add", this.subnet + "." + (base + 2) + "/30", "dev",
				link + "n");
		check("ip", "netns", "exec", this.name, "ip", "link", "set", link + "n", "up");
	}

	/** The host's end of the queue link: where the namespace's consumer reaches PostgreSQL for its queue. */
	String queueHost() {
		return this.subnet + ".1";
	}

	/** The host's end of the record link. */
	String recordHost() {
		return this.subnet + ".5";
	}

	/** The addresses both links come from, for {@code pg_hba.conf}. */
	String cidr() {
		return this.subnet + ".0/29";
	}

	/** The command prefix that runs a program inside the namespace. */
	List<String> launcher() {
		return List.of("ip", "netns", "exec", this.name);
	}

	/**
	 * Takes the namespace's end of the queue link down. Nothing is sent to either side: the host's
	 * end stays up without a carrier and drops what PostgreSQL sends, the namespace's routes over
	 * that link go, so its sockets hear nothing more.
	 */
	void cut() {
		check("ip", "netns", "exec", this.name, "ip", "link", "set", this.queueLink + "n", "down");
	}

	/** Brings the namespace's end of the queue link up again (its address and route come back). */
	void heal() {
		check("ip", "netns", "exec", this.name, "ip", "link", "set", this.queueLink + "n", "up");
	}

	@Override
	public void close() {
		// Deleting the namespace deletes the ends inside it, and with them their peers.
		run("ip", "netns", "del", this.name);
		run("ip", "link", "del", this.queueLink);
		run("ip", "link", "del", this.recordLink);
	}

	@Override
	public String toString() {
		return this.name;
	}

	private static void check(String... command) {
		Result result = run(command);
		if (result.status() != 0) {
			throw new IllegalStateException(String.join(" ", command) + " failed: " + result.output());
		}
	}

	private static Result run(String... command) {
		try {
			Process process = new ProcessBuilder(new ArrayList<>(List.of(command))).redirectErrorStream(true).start();
			String output = new String(process.getInputStream().readAllBytes(), StandardCharsets.UTF_8).strip();
			if (!process.waitFor(30, TimeUnit.SECONDS)) {
				process.destroyForcibly();
				return new Result(-1, "timed out");
			}
			return new Result(process.exitValue(), output);
		}
		catch (IOException ex) {
			return new Result(-1, ex.toString());
		}
		catch (InterruptedException ex) {
			Thread.currentThread().interrupt();
			return new Result(-1, "interrupted");
		}
	}

	private record Result(int status, String output) {
	}

}
