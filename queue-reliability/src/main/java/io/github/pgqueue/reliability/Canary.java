package io.github.pgqueue.reliability;

import java.util.concurrent.atomic.AtomicInteger;

/**
 * A class that payloads name to get it instantiated (polymorphic typing). It only counts its
 * instances: the suite checks that no payload ever gets one built.
 */
public class Canary {

	private static final AtomicInteger instances = new AtomicInteger();

	private String command;

	public Canary() {
		instances.incrementAndGet();
		System.err.println("CANARY INSTANTIATED by a payload");
	}

	/** How many canaries this JVM has built. */
	public static int instances() {
		return instances.get();
	}

	public String getCommand() {
		return this.command;
	}

	public void setCommand(String command) {
		instances.incrementAndGet();
		this.command = command;
	}

}
