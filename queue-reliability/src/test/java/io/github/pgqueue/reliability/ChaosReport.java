package io.github.pgqueue.reliability;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.StandardOpenOption;
import java.util.List;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * The count of one scenario. It passes when nothing is lost, nothing unexpected arrived, every
 * duplicate follows a delivery hit by a fault, and no advisory lock is left.
 * @param scenario the scenario's name
 * @param sent keys the producer knows were sent
 * @param delivered sent keys a handler saw at least once
 * @param lost sent keys that did not end as expected (not delivered, not acked, not dead-lettered)
 * @param unexpected deliveries and rows of keys never sent, or of keys that must not be delivered
 * @param duplicates deliveries beyond the first of a key, retries after a handler failure excepted
 * @param faulted deliveries of a claim that a fault ended before its ack
 * @param locksLeft pgqueue advisory locks held once the queue was drained
 * @param unexplained deliveries followed by another delivery of the same key although neither a
 * fault nor a handler failure ended them (each one is a duplicate without a cause)
 * @param problems what went wrong, key by key, for the failure message
 */
record ChaosReport(String scenario, long sent, long delivered, long lost, long unexpected, long duplicates,
		long faulted, long locksLeft, long unexplained, List<String> problems) {

	/** The line the checker prints. */
	String line() {
		return "CHAOS scenario=%s sent=%d delivered=%d lost=%d unexpected=%d duplicates=%d faulted=%d locks_left=%d"
			.formatted(this.scenario, this.sent, this.delivered, this.lost, this.unexpected, this.duplicates,
					this.faulted, this.locksLeft);
	}

	boolean passes() {
		return this.lost == 0 && this.unexpected == 0 && this.duplicates <= this.faulted && this.locksLeft == 0
				&& this.unexplained == 0;
	}

	/** Prints the line (and the problems, if any) and appends them to {@code report.txt}. */
	ChaosReport print() {
		StringBuilder text = new StringBuilder(line()).append('\n');
		this.problems.forEach((problem) -> text.append("  ").append(problem).append('\n'));
		System.out.print(text);
		System.out.flush();
		try {
			Files.createDirectories(ChaosSettings.workDirectory());
			Files.writeString(ChaosSettings.workDirectory().resolve("report.txt"), text, StandardCharsets.UTF_8,
					StandardOpenOption.CREATE, StandardOpenOption.APPEND);
		}
		catch (IOException ex) {
			throw new UncheckedIOException(ex);
		}
		return this;
	}

	void assertPasses() {
		String detail = line() + "\n" + String.join("\n", this.problems);
		assertThat(this.lost).as("lost\n%s", detail).isZero();
		assertThat(this.unexpected).as("unexpected\n%s", detail).isZero();
		assertThat(this.unexplained).as("duplicates without a fault\n%s", detail).isZero();
		assertThat(this.duplicates).as("duplicates\n%s", detail).isLessThanOrEqualTo(this.faulted);
		assertThat(this.locksLeft).as("locks left\n%s", detail).isZero();
	}

}
