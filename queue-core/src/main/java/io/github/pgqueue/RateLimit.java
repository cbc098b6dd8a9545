package io.github.pgqueue;

import java.time.Duration;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * The most messages of one queue that its consumers, in every JVM together, hand to handlers per
 * second or per minute: {@code 100/s}, {@code 6000/m}. Part of the queue's policy
 * ({@link QueueDefinition#rateLimit()}); enforced with a token bucket in the database that refills
 * at {@link #perSecond()} up to {@link #burst()}.
 * @param permits messages per period, at least 1
 * @param period one second or one minute
 */
public record RateLimit(int permits, Duration period) {

	private static final Pattern FORM = Pattern.compile("\\s*(-?\\d+)\\s*/\\s*([a-zA-Z]+)\\s*");

	private static final Duration SECOND = Duration.ofSeconds(1);

	private static final Duration MINUTE = Duration.ofMinutes(1);

	public RateLimit {
		if (period == null || !(period.equals(SECOND) || period.equals(MINUTE))) {
			throw new IllegalArgumentException("A rate limit is per second or per minute, not per " + period);
		}
		if (permits < 1) {
			throw new IllegalArgumentException("A rate limit must allow at least 1 message per "
					+ (period.equals(SECOND) ? "second" : "minute") + ", was " + permits);
		}
	}

	/** {@code permits} messages a second. */
	public static RateLimit perSecond(int permits) {
		return new RateLimit(permits, SECOND);
	}

	/** {@code permits} messages a minute. */
	public static RateLimit perMinute(int permits) {
		return new RateLimit(permits, MINUTE);
	}

	/**
	 * Reads {@code <permits>/s} or {@code <permits>/m}, such as {@code 100/s} or {@code 6000/m}.
	 * @throws IllegalArgumentException saying what is wrong, if {@code text} is not of that form or
	 * allows less than one message
	 */
	public static RateLimit parse(String text) {
		Matcher matcher = (text != null) ? FORM.matcher(text) : null;
		if (matcher == null || !matcher.matches()) {
			throw new IllegalArgumentException("Rate limit '" + text + "' is not of the form <messages>/s or "
					+ "<messages>/m, such as 100/s or 6000/m");
		}
		Duration period = switch (matcher.group(2)) {
			case "s" -> SECOND;
			case "m" -> MINUTE;
			default -> throw new IllegalArgumentException("Rate limit '" + text + "' has an unknown unit '"
					+ matcher.group(2) + "'; use s (per second) or m (per minute), such as 100/s or 6000/m");
		};
		int permits;
		try {
			permits = Integer.parseInt(matcher.group(1));
		}
		catch (NumberFormatException ex) {
			throw new IllegalArgumentException("Rate limit '" + text + "' allows more messages than "
					+ Integer.MAX_VALUE + " per period", ex);
		}
		return new RateLimit(permits, period);
	}

	/** The limit in messages a second. */
	public double perSecond() {
		return this.permits * 1000.0 / this.period.toMillis();
	}

	/**
	 * The most tokens the bucket holds: one second's worth of the limit, at least 1. Over any
	 * window of t seconds at most {@code perSecond() × t + burst()} messages are handed out.
	 */
	public int burst() {
		return (int) Math.max(1, Math.floor(perSecond()));
	}

	/** {@code 100/s} or {@code 6000/m}, as {@link #parse} reads it. */
	@Override
	public String toString() {
		return this.permits + (this.period.equals(SECOND) ? "/s" : "/m");
	}

}
