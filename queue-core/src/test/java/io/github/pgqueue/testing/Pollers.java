package io.github.pgqueue.testing;

import java.util.Map;
import java.util.regex.Pattern;
import java.util.stream.Stream;

/**
 * The poller threads of a running listener, as a test sees them from outside, to wait until they
 * are idle instead of sleeping for a time that is usually long enough: a test that proves a
 * notification wakes an idle listener must send only once the pollers' first, empty polls are
 * over, or the first poll finds the message and the test proves nothing.
 */
public final class Pollers {

	private Pollers() {
	}

	/**
	 * The number of poller threads of listener {@code id} (named {@code pgqueue-<id>-<n>} by its
	 * container) that wait, idle: parked in a timed wait, for a notification or the end of their
	 * poll interval, and not in the connection pool, where a poller waits for a connection before
	 * it claims. A poller that claims or handles reads a socket or runs, so it does not count.
	 */
	public static long waiting(String id) {
		return parked(id).filter((stack) -> !inConnectionPool(stack)).count();
	}

	/**
	 * The number of poller threads of listener {@code id} that wait for work: parked in a timed
	 * wait inside the poll loop's wait for a notification, a sibling or its next poll, not in a
	 * back-off after a failure or anywhere else.
	 */
	public static long awaitingWork(String id) {
		return parked(id).filter(Pollers::inWaitForWork).count();
	}

	/** The stacks of listener {@code id}'s poller threads that are parked in a timed wait. */
	private static Stream<StackTraceElement[]> parked(String id) {
		Pattern name = Pattern.compile("pgqueue-" + Pattern.quote(id) + "-\\d+");
		return Thread.getAllStackTraces().entrySet().stream()
			.filter((entry) -> name.matcher(entry.getKey().getName()).matches())
			.filter((entry) -> entry.getKey().getState() == Thread.State.TIMED_WAITING)
			.map(Map.Entry::getValue);
	}

	private static boolean inWaitForWork(StackTraceElement[] stack) {
		for (StackTraceElement frame : stack) {
			if (frame.getClassName().equals("io.github.pgqueue.listener.PollLoop")
					&& frame.getMethodName().equals("awaitWork")) {
				return true;
			}
		}
		return false;
	}

	private static boolean inConnectionPool(StackTraceElement[] stack) {
		for (StackTraceElement frame : stack) {
			if (frame.getClassName().startsWith("com.zaxxer.hikari.")) {
				return true;
			}
		}
		return false;
	}

}
