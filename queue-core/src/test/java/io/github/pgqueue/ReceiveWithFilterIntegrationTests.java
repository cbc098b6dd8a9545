package io.github.pgqueue;

import java.util.List;
import java.util.Map;
import java.util.Optional;

import io.github.pgqueue.testing.EmbeddedPostgres;
import io.github.pgqueue.testing.PostgresExtension;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;

import org.springframework.jdbc.core.JdbcTemplate;

import static io.github.pgqueue.testing.Db.count;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatIllegalArgumentException;

/** Pulling the next message whose headers match a filter; the others are left as they were. */
@ExtendWith(PostgresExtension.class)
class ReceiveWithFilterIntegrationTests {

	private final EmbeddedPostgres postgres = EmbeddedPostgres.get();

	private final JdbcTemplate jdbc = new JdbcTemplate(this.postgres.dataSource());

	private final QueueTemplate template = QueueTemplate.builder(this.postgres.dataSource()).build();

	@Test
	void equalitySetsAndConjunctionsSelectByHeaders() {
		send(1, Map.of("type", "welcome", "region", "eu"));
		send(2, Map.of("type", "welcome", "region", "us"));
		send(3, Map.of("type", "reset", "region", "us"));
		send(4, Map.of("type", "welcome", "region", "asia"));
		this.jdbc.update("INSERT INTO pgqueue.message (queue, payload, headers) VALUES ('rf', '5', '{\"n\": 7}')");

		assertThat(receiveAndAck("type = 'reset'")).contains(3);
		assertThat(receiveAndAck("type = 'welcome' and region in ('us', 'asia')")).contains(2);
		assertThat(receiveAndAck("region IN ('asia') AND type = 'welcome'")).contains(4);
		assertThat(receiveAndAck("n = 7")).as("a number matches a JSON number").contains(5);
		assertThat(receiveAndAck("region = 'us'")).isEmpty();
		assertThat(receiveAndAck("missing = 'x'")).isEmpty();
		assertThat(receiveAndAck("\"type\" = 'welcome'")).contains(1);
		assertThat(count("rf")).isZero();
	}

	@Test
	void aFilteredReceiveLocksAndCountsOnlyTheMessageItReturns() {
		// a set: the costlier the filter, the later PostgreSQL would test it in a WHERE clause with the lock
		for (int i = 0; i < 20; i++) {
			send(-i, Map.of("type", "other"));
		}
		send(1, Map.of("type", "it's"));
		try (Lease<Integer> lease = this.template.receive("rf", "type in ('it''s', 'x', 'y', 'z')",
				Integer.class).orElseThrow()) {
			assertThat(lease.message().payload()).isEqualTo(1);
			assertThat(lease.message().attempt()).isEqualTo(1);
			assertThat(this.jdbc.queryForObject("SELECT count(*) FROM pg_locks WHERE locktype = 'advisory'",
					Integer.class)).isEqualTo(1);
			assertThat(this.jdbc.queryForObject("SELECT sum(cardinality(ids)) FROM pgqueue.holding", Integer.class))
				.as("listed as held by the receiving session").isEqualTo(1);
			assertThat(this.jdbc.queryForObject(
					"SELECT count(*) FROM pgqueue.message WHERE queue = 'rf' AND (attempts <> 0 OR claim_open)",
					Integer.class)).as("nothing written on the messages").isZero();
			assertThat(this.template.receive("rf", "type = 'it''s'", Integer.class)).as("held").isEmpty();
			lease.ack();
		}
		assertThat(this.jdbc.queryForObject(
				"SELECT count(*) FROM pgqueue.message WHERE queue = 'rf' AND (attempts <> 0 OR claim_open)",
				Integer.class)).isZero();
		assertThat(count("rf")).isEqualTo(20);
	}

	@Test
	void anInvalidFilterIsRejectedSayingWhere() {
		assertThatIllegalArgumentException().isThrownBy(() -> this.template.receive("rf", "type = 'a' or b = 'c'",
				Integer.class)).withMessage("filter 'type = 'a' or b = 'c'': expected 'and' or the end of the filter at position 12");
		assertThatIllegalArgumentException().isThrownBy(() -> this.template.receive("rf", "a in ('x') and a = 'y'",
				Integer.class)).withMessage("filter 'a in ('x') and a = 'y'': header 'a' appears twice at position 16");
	}

	private Optional<Integer> receiveAndAck(String filter) {
		Optional<Lease<Integer>> lease = this.template.receive("rf", filter, Integer.class);
		lease.ifPresent(Lease::ack);
		return lease.map((l) -> l.message().payload());
	}

	private void send(int payload, Map<String, String> headers) {
		SendOptions.Builder options = SendOptions.builder();
		headers.forEach(options::header);
		this.template.send("rf", payload, options.build());
	}

}
