package io.github.pgqueue.reliability;

/**
 * The payload the chaos producer sends: a unique key, how long the handler works on it, and the
 * fault the handler injects, if any.
 * @param key unique across a scenario
 * @param workMillis how long the handler sleeps, so that faults land in the middle of handlers
 * @param fault null, or one of the constants of {@link Fault}
 */
public record Job(long key, int workMillis, String fault) {

	/** A job without a fault. */
	public static Job of(long key, int workMillis) {
		return new Job(key, workMillis, null);
	}

	/** The fault this job asks for; {@link Fault#NONE} when it asks for none. */
	public Fault faultOrNone() {
		return (this.fault != null) ? Fault.valueOf(this.fault) : Fault.NONE;
	}

}
