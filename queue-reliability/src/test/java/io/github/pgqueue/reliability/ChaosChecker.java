package io.github.pgqueue.reliability;

import java.util.ArrayList;
import java.util.Comparator;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;

import io.github.pgqueue.QueueNames;

/**
 * Counts a drained scenario from the database: the deliveries handlers recorded, the claims
 * faults ended, and the rows left in the queue and its dead-letter queue.
 */
final class ChaosChecker {

	private static final int SHOWN = 10;

	private final ChaosDatabase database;

	/** The only queue (with its dead-letter queue) whose deliveries and rows count, or null for all. */
	private final String queue;

	ChaosChecker(ChaosDatabase database) {
		this(database, null);
	}

	/** A checker that counts {@code queue} alone, for scenarios that run several queues at once. */
	ChaosChecker(ChaosDatabase database, String queue) {
		this.database = database;
		this.queue = queue;
	}

	/**
	 * @param expected how each sent key must end
	 * @param deadLetterQueue where dead keys must be
	 * @param locksLeft advisory locks measured after the drain
	 */
	ChaosReport check(String scenario, Map<Long, Outcome> expected, String deadLetterQueue, long locksLeft) {
		Map<Long, List<Delivery>> deliveries = deliveries();
		Ends ends = ends(expected, deliveries, rows(), deadLetterQueue);
		Repeats repeats = repeats(deliveries, faultedClaims());
		List<String> shown = new ArrayList<>(firstFew(ends.problems()));
		shown.addAll(firstFew(repeats.problems()));
		return new ChaosReport(scenario, expected.size(), ends.delivered(), ends.lost(), ends.unexpected(),
				repeats.duplicates(), repeats.faulted(), locksLeft, repeats.unexplained(), shown);
	}

	/** How every key ended, against how it was expected to. */
	private static Ends ends(Map<Long, Outcome> expected, Map<Long, List<Delivery>> deliveries,
			Map<Long, List<Row>> rows, String deadLetterQueue) {
		List<String> problems = new ArrayList<>();
		long delivered = 0;
		long lost = 0;
		long unexpected = 0;
		for (Map.Entry<Long, Outcome> entry : expected.entrySet()) {
			long key = entry.getKey();
			List<Delivery> seen = deliveries.getOrDefault(key, List.of());
			List<Row> left = rows.getOrDefault(key, List.of());
			delivered += seen.isEmpty() ? 0 : 1;
			Verdict verdict = verdict(entry.getValue(), seen, left, deadLetterQueue);
			if (verdict != null) {
				lost += verdict.lost() ? 1 : 0;
				unexpected += verdict.lost() ? 0 : seen.size();
				problems.add("key " + key + " (expected " + entry.getValue() + "): " + verdict.why() + "; deliveries "
						+ seen + ", rows " + left);
			}
		}
		for (Map.Entry<Long, List<Delivery>> entry : deliveries.entrySet()) {
			if (!expected.containsKey(entry.getKey())) {
				unexpected += entry.getValue().size();
				problems.add("key " + entry.getKey() + " was never sent but delivered: " + entry.getValue());
			}
		}
		for (Map.Entry<Long, List<Row>> entry : rows.entrySet()) {
			if (!expected.containsKey(entry.getKey())) {
				unexpected += entry.getValue().size();
				problems.add("key " + entry.getKey() + " was never sent but is in the table: " + entry.getValue());
			}
		}
		return new Ends(delivered, lost, unexpected, problems);
	}

	/**
	 * The deliveries beyond the first of each key, and whether a cause explains each: every
	 * delivery but the last (by attempt) must have been ended by a fault or by its handler
	 * throwing.
	 */
	private static Repeats repeats(Map<Long, List<Delivery>> deliveries, Set<Claim> faultedClaims) {
		List<String> problems = new ArrayList<>();
		long duplicates = 0;
		long faulted = 0;
		long unexplained = 0;
		for (Map.Entry<Long, List<Delivery>> entry : deliveries.entrySet()) {
			List<Delivery> seen = new ArrayList<>(entry.getValue());
			seen.sort(Comparator.comparingInt(Delivery::attempt));
			int failedBeforeLast = 0;
			for (int i = 0; i < seen.size(); i++) {
				Delivery delivery = seen.get(i);
				boolean hit = faultedClaims.contains(delivery.claim());
				faulted += hit ? 1 : 0;
				if (i < seen.size() - 1) {
					failedBeforeLast += delivery.threw() ? 1 : 0;
					if (!hit && !delivery.threw()) {
						unexplained++;
						problems.add("key " + entry.getKey() + " was delivered again after " + delivery
								+ ", which no fault and no handler failure ended: " + seen);
					}
				}
			}
			duplicates += Math.max(0, seen.size() - 1 - failedBeforeLast);
		}
		return new Repeats(duplicates, faulted, unexplained, problems);
	}

	/** What is wrong with how a key ended, or null if it ended as expected. */
	private static Verdict verdict(Outcome outcome, List<Delivery> seen, List<Row> left, String deadLetterQueue) {
		boolean dead = left.size() == 1 && left.get(0).queue().equals(deadLetterQueue);
		return switch (outcome) {
			case ACKED -> seen.isEmpty() ? Verdict.lost("never delivered")
					: !left.isEmpty() ? Verdict.lost("delivered but not acked") : null;
			case DEAD -> dead ? null : Verdict.lost("not dead-lettered");
			case DEAD_UNDELIVERED -> !seen.isEmpty() ? Verdict.unexpected("delivered although it cannot be converted")
					: dead ? null : Verdict.lost("not dead-lettered");
			case UNTOUCHED -> !seen.isEmpty() ? Verdict.unexpected("delivered although no consumer should have run")
					: (left.size() == 1 && left.get(0).attempts() == 0 && !dead) ? null : Verdict.lost("touched");
			case REMOVED -> !seen.isEmpty() ? Verdict.unexpected("delivered although removed")
					: !left.isEmpty() ? Verdict.lost("not removed") : null;
		};
	}

	private static List<String> firstFew(List<String> problems) {
		if (problems.size() <= SHOWN) {
			return problems;
		}
		List<String> few = new ArrayList<>(problems.subList(0, SHOWN));
		few.add("... and " + (problems.size() - SHOWN) + " more");
		return few;
	}

	private Map<Long, List<Delivery>> deliveries() {
		Map<Long, List<Delivery>> byKey = new HashMap<>();
		String sql = "SELECT key, message_id, attempt, consumer, thread, fault FROM chaos.delivery"
				+ " WHERE queue = coalesce(?, queue)";
		this.database.jdbc().query(sql, (rs) -> {
			Delivery delivery = new Delivery(rs.getLong(2), rs.getInt(3), rs.getString(4), rs.getString(5),
					rs.getString(6));
			byKey.computeIfAbsent(rs.getLong(1), (k) -> new ArrayList<>()).add(delivery);
		}, this.queue);
		return byKey;
	}

	private Map<Long, List<Row>> rows() {
		Map<Long, List<Row>> byKey = new HashMap<>();
		String sql = "SELECT chaos.key_of(payload, headers), id, queue, attempts FROM pgqueue.message"
				+ " WHERE ?::text IS NULL OR queue IN (?, ?)";
		String deadLetters = (this.queue != null) ? QueueNames.defaultDeadLetterQueue(this.queue) : null;
		this.database.jdbc().query(sql,
				(rs) -> {
					long key = rs.getLong(1);
					if (rs.wasNull()) {
						// No key at all: a row nobody sent; keyed apart from every real key.
						key = -rs.getLong(2);
					}
					byKey.computeIfAbsent(key, (k) -> new ArrayList<>())
						.add(new Row(rs.getLong(2), rs.getString(3), rs.getInt(4)));
				}, this.queue, this.queue, deadLetters);
		return byKey;
	}

	private Set<Claim> faultedClaims() {
		Set<Claim> claims = new HashSet<>();
		this.database.jdbc().query("SELECT DISTINCT message_id, attempt FROM chaos.fault",
				(rs) -> {
					claims.add(new Claim(rs.getLong(1), rs.getInt(2)));
				});
		return claims;
	}

	private record Ends(long delivered, long lost, long unexpected, List<String> problems) {
	}

	private record Repeats(long duplicates, long faulted, long unexplained, List<String> problems) {
	}

	/** A key that did not end as expected: lost, or delivered when it must not be. */
	private record Verdict(boolean lost, String why) {

		static Verdict lost(String why) {
			return new Verdict(true, why);
		}

		static Verdict unexpected(String why) {
			return new Verdict(false, why);
		}

	}

	/** One claim of a message: the re-check numbers them. */
	private record Claim(long messageId, int attempt) {
	}

	private record Delivery(long messageId, int attempt, String consumer, String thread, String fault) {

		Claim claim() {
			return new Claim(this.messageId, this.attempt);
		}

		boolean threw() {
			return Fault.THROW.name().equals(this.fault) || Fault.THROW_ONCE.name().equals(this.fault)
					|| Fault.ERROR.name().equals(this.fault);
		}

		@Override
		public String toString() {
			return "#" + this.messageId + "/attempt " + this.attempt + " by " + this.consumer + "/" + this.thread
					+ ((this.fault != null) ? " (" + this.fault + ")" : "");
		}

	}

	private record Row(long id, String queue, int attempts) {

		@Override
		public String toString() {
			return "#" + this.id + " in " + this.queue + " after " + this.attempts + " attempts";
		}

	}

}
