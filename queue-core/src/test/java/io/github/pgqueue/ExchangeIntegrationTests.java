package io.github.pgqueue;

import java.util.ArrayList;
import java.util.List;

import javax.sql.DataSource;

import io.github.pgqueue.ExchangeDefinition.Binding;
import io.github.pgqueue.ExchangeDefinition.Type;
import io.github.pgqueue.testing.EmbeddedPostgres;
import io.github.pgqueue.testing.PostgresExtension;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;

import org.springframework.jdbc.core.JdbcTemplate;
import org.springframework.jdbc.datasource.DataSourceTransactionManager;
import org.springframework.transaction.support.TransactionTemplate;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatIllegalArgumentException;

@ExtendWith(PostgresExtension.class)
class ExchangeIntegrationTests {

	private final DataSource dataSource = EmbeddedPostgres.get().dataSource();

	private final JdbcTemplate jdbc = new JdbcTemplate(this.dataSource);

	private final QueueTemplate template = QueueTemplate.builder(this.dataSource).build();

	private final QueueAdmin admin = new QueueAdmin(this.template.context());

	@BeforeEach
	void clearExchanges() {
		this.jdbc.execute("DELETE FROM pgqueue.exchange");
	}

	@Test
	void fanoutSendsToEveryBoundQueue() {
		this.admin.declare(new ExchangeDefinition("orders", Type.FANOUT,
				List.of(new Binding("billing", null), new Binding("emails", "ignored"))));
		assertThat(this.template.publish("orders", "anything", "o-1")).isEqualTo(2);
		assertThat(queuesOf("o-1")).containsExactlyInAnyOrder("billing", "emails");
	}

	@Test
	void directMatchesTheWholeKeyLiterally() {
		this.admin.declare(new ExchangeDefinition("events", Type.DIRECT,
				List.of(new Binding("created", "order.created"), new Binding("any-dot", "order.*"))));
		assertThat(this.template.publish("events", "order.created", "e-1")).isEqualTo(1);
		assertThat(this.template.publish("events", "orderXcreated", "e-2")).isZero();
		assertThat(this.template.publish("events", "order.shipped", "e-3")).isZero();
		assertThat(queuesOf("e-1")).containsExactly("created");
	}

	@Test
	void topicMatchesStarAsOneWordAndHashAsAnyNumberOfWords() {
		this.admin.declare(new ExchangeDefinition("topics", Type.TOPIC,
				List.of(new Binding("star", "order.*"), new Binding("hash", "order.#"), new Binding("all", "#"),
						new Binding("created", "#.created"), new Binding("exact", "order.eu.created"))));
		this.template.publish("topics", "order.created", "a");
		this.template.publish("topics", "order", "b");
		this.template.publish("topics", "order.eu.created", "c");
		this.template.publish("topics", "invoice.created", "d");
		this.template.publish("topics", "orderXcreated", "e");
		assertThat(queuesOf("a")).containsExactlyInAnyOrder("star", "hash", "all", "created");
		assertThat(queuesOf("b")).containsExactlyInAnyOrder("hash", "all");
		assertThat(queuesOf("c")).containsExactlyInAnyOrder("hash", "all", "created", "exact");
		assertThat(queuesOf("d")).containsExactlyInAnyOrder("all", "created");
		assertThat(queuesOf("e")).containsExactlyInAnyOrder("all");
	}

	@Test
	void topicRoutingFollowsAmqpForEveryPatternAndKeyOnPostgres() {
		List<String> patterns = List.of("#", "*", "a", "a.*", "a.#", "#.a", "*.a", "a.*.b", "a.#.b", "#.#", "*.#",
				"#.*", "*.*", "a.b.c", "#.b.#", "*.b.*", "lazy.#", "*.orange.*", "*.*.rabbit");
		List<String> keys = List.of("", "a", "b", "a.b", "a.b.c", "a..b", "a.", ".a", ".", "a.x.b", "a.x.y.b",
				"quick.orange.rabbit", "lazy.orange.elephant", "quick.orange.fox", "lazy.brown.fox", "lazy",
				"quick.brown.fox", "quick.orange.male.rabbit", "lazy.orange.male.rabbit", "x.b.y", "b",
				"a+b", "a(b", "a\\b", "a$b", "a.b$", "\uD83D\uDE80.a");
		List<Binding> bindings = new ArrayList<>();
		for (int i = 0; i < patterns.size(); i++) {
			bindings.add(new Binding("p" + i, patterns.get(i)));
		}
		this.admin.declare(new ExchangeDefinition("amqp", Type.TOPIC, bindings));
		List<String> mismatches = new ArrayList<>();
		for (String key : keys) {
			this.jdbc.update("DELETE FROM pgqueue.message");
			this.template.publish("amqp", key, "m");
			List<String> routed = this.jdbc.queryForList("SELECT queue FROM pgqueue.message", String.class);
			for (int i = 0; i < patterns.size(); i++) {
				boolean expected = amqpTopicMatches(patterns.get(i), key);
				if (routed.contains("p" + i) != expected) {
					mismatches.add("pattern '" + patterns.get(i) + "' key '" + key + "': expected " + expected);
				}
			}
		}
		assertThat(mismatches).isEmpty();
		// The examples of the AMQP topic tutorial, stated by hand.
		assertThat(amqpTopicMatches("*.orange.*", "quick.orange.rabbit")).isTrue();
		assertThat(amqpTopicMatches("*.*.rabbit", "quick.orange.male.rabbit")).isFalse();
		assertThat(amqpTopicMatches("lazy.#", "lazy")).isTrue();
		assertThat(amqpTopicMatches("#", "")).isTrue();
		assertThat(amqpTopicMatches("*", "")).isFalse();
		assertThat(amqpTopicMatches("a.#", "a..b")).isTrue();
	}

	@Test
	void directRoutingMatchesAnyUnicodeKeyExactly() {
		List<String> keys = List.of("", "order", "order.created", "\uD83D\uDE80", "caf\u00E9", "a+b(c)\\d$", "[x]");
		List<Binding> bindings = new ArrayList<>();
		for (int i = 0; i < keys.size(); i++) {
			bindings.add(new Binding("d" + i, keys.get(i)));
		}
		this.admin.declare(new ExchangeDefinition("exact", Type.DIRECT, bindings));
		for (int i = 0; i < keys.size(); i++) {
			this.jdbc.update("DELETE FROM pgqueue.message");
			assertThat(this.template.publish("exact", keys.get(i), "m")).as("key '%s'", keys.get(i)).isEqualTo(1);
			assertThat(this.jdbc.queryForList("SELECT queue FROM pgqueue.message", String.class))
				.containsExactly("d" + i);
		}
	}

	/** AMQP 0-9-1 topic matching on words: the empty key has none; '*' is one word, '#' any number. */
	private static boolean amqpTopicMatches(String pattern, String key) {
		List<String> words = key.isEmpty() ? List.of() : List.of(key.split("\\.", -1));
		return matches(List.of(pattern.split("\\.", -1)), 0, words, 0);
	}

	private static boolean matches(List<String> pattern, int p, List<String> words, int w) {
		if (p == pattern.size()) {
			return w == words.size();
		}
		return switch (pattern.get(p)) {
			case "#" -> matches(pattern, p + 1, words, w) || (w < words.size() && matches(pattern, p, words, w + 1));
			case "*" -> w < words.size() && matches(pattern, p + 1, words, w + 1);
			default -> w < words.size() && pattern.get(p).equals(words.get(w)) && matches(pattern, p + 1, words, w + 1);
		};
	}

	@Test
	void publishedMessagesCarryTheExchangeAndKeyAndAreReceivedLikeAnyOther() {
		this.admin.declare(new ExchangeDefinition("orders", Type.TOPIC, List.of(new Binding("billing", "order.*"))));
		this.template.publish("orders", "order.created", "o-1", SendOptions.builder().header("tenant", "acme").build());
		try (Lease<String> lease = this.template.receive("billing", String.class).orElseThrow()) {
			assertThat(lease.message().headers()).containsEntry("pgqueue-exchange", "orders")
				.containsEntry("pgqueue-routing-key", "order.created")
				.containsEntry("tenant", "acme");
			lease.ack();
		}
	}

	@Test
	void redeclaringReplacesTheBindings() {
		this.admin.declare(new ExchangeDefinition("orders", Type.FANOUT,
				List.of(new Binding("billing", ""), new Binding("emails", ""))));
		this.admin.declare(new ExchangeDefinition("orders", Type.FANOUT, List.of(new Binding("audit", ""))));
		assertThat(this.template.publish("orders", "", "x")).isEqualTo(1);
		assertThat(queuesOf("x")).containsExactly("audit");
	}

	@Test
	void bindAddsOneBindingDeclaringATopicExchangeAndKeepsTheOthers() {
		assertThat(this.admin.bind("orders", new Binding("billing", "order.*"))).isEqualTo(Type.TOPIC);
		assertThat(this.admin.bind("orders", new Binding("audit", "#"))).isEqualTo(Type.TOPIC);
		assertThat(this.template.publish("orders", "order.created", "x")).isEqualTo(2);
		assertThat(queuesOf("x")).containsExactlyInAnyOrder("billing", "audit");

		assertThat(this.admin.unbind("orders", new Binding("billing", "order.*"))).isTrue();
		assertThat(this.admin.unbind("orders", new Binding("billing", "order.*"))).as("gone already").isFalse();
		assertThat(this.template.publish("orders", "order.created", "y")).isEqualTo(1);
		assertThat(queuesOf("y")).containsExactly("audit");
	}

	@Test
	void bindKeepsTheTypeOfADeclaredExchange() {
		this.admin.declare(new ExchangeDefinition("events", Type.FANOUT, List.of(new Binding("billing", ""))));
		assertThat(this.admin.bind("events", new Binding("audit", "ignored"))).isEqualTo(Type.FANOUT);
		assertThat(this.template.publish("events", "any", "z")).isEqualTo(2);
		assertThatIllegalArgumentException().isThrownBy(() -> this.admin.bind("bad name", new Binding("q", "#")))
			.withMessageContaining("bad name");
		assertThat(this.admin.declareIfAbsent("events")).isEqualTo(Type.FANOUT);
		assertThat(this.template.publish("events", "any", "w")).as("bindings kept").isEqualTo(2);
		assertThat(this.admin.declareIfAbsent("fresh")).isEqualTo(Type.TOPIC);
		assertThat(this.template.publish("fresh", "any", "v")).as("declared, bound to nothing").isZero();
	}

	@Test
	void publishInARolledBackTransactionSendsNothing() {
		this.admin.declare(new ExchangeDefinition("orders", Type.FANOUT, List.of(new Binding("billing", ""))));
		new TransactionTemplate(new DataSourceTransactionManager(this.dataSource)).executeWithoutResult((status) -> {
			assertThat(this.template.publish("orders", "", "rolled back")).isEqualTo(1);
			status.setRollbackOnly();
		});
		assertThat(this.jdbc.queryForObject("SELECT count(*) FROM pgqueue.message", Long.class)).isZero();
	}

	@Test
	void anUnroutablePublishIsDroppedOrFailsAsTheExchangeSaysAndIsCounted() {
		io.micrometer.core.instrument.simple.SimpleMeterRegistry meters = new io.micrometer.core.instrument.simple.SimpleMeterRegistry();
		QueueTemplate metered = new QueueTemplate(QueueContext.builder(this.dataSource).meterRegistry(meters).build());
		new QueueAdmin(metered.context()).declare(new ExchangeDefinition("lenient", Type.DIRECT, List.of(new Binding("billing", "paid"))));
		new QueueAdmin(metered.context()).declare(new ExchangeDefinition("strict", Type.DIRECT, List.of(new Binding("billing", "paid")),
				ExchangeDefinition.Unroutable.FAIL));
		assertThat(metered.publish("lenient", "refunded", "x")).isZero();
		org.assertj.core.api.Assertions.assertThatExceptionOfType(UnroutableMessageException.class)
			.isThrownBy(() -> metered.publish("strict", "refunded", "x"))
			.withMessage("No binding of exchange 'strict' matches routing key 'refunded'; nothing was sent (the "
					+ "exchange is declared with unroutable: fail)");
		assertThat(metered.publish("strict", "paid", "y")).isEqualTo(1);
		assertThat(meters.get("pgqueue.messages.unroutable").tag("exchange", "lenient").counter().count()).isEqualTo(1);
		assertThat(meters.get("pgqueue.messages.unroutable").tag("exchange", "strict").counter().count()).isEqualTo(1);
		assertThat(queuesOf("x")).isEmpty();

		new QueueAdmin(metered.context()).declare(new ExchangeDefinition("strict", Type.DIRECT, List.of(new Binding("billing", "paid"))));
		assertThat(metered.publish("strict", "refunded", "z")).as("redeclared: drop again").isZero();
	}

	@Test
	void publishToAnUndeclaredExchangeFailsAndWritesNothing() {
		assertThatIllegalArgumentException().isThrownBy(() -> this.template.publish("nowhere", "k", "x"))
			.withMessageContaining("Exchange 'nowhere' is not declared");
		assertThatIllegalArgumentException().isThrownBy(() -> this.template.publish("bad;name", "k", "x"))
			.withMessageContaining("Invalid queue name 'bad;name'");
	}

	@Test
	void invalidTopicPatternsAreRejectedNamingExchangeAndPattern() {
		assertThatIllegalArgumentException()
			.isThrownBy(() -> new ExchangeDefinition("t", Type.TOPIC, List.of(new Binding("q", "order..x"))))
			.withMessageContaining("Topic pattern 'order..x' of exchange 't'");
		assertThatIllegalArgumentException()
			.isThrownBy(() -> new ExchangeDefinition("t", Type.TOPIC, List.of(new Binding("q", "a.b*"))));
		assertThatIllegalArgumentException()
			.isThrownBy(() -> new ExchangeDefinition("t", Type.TOPIC, List.of(new Binding("q';--", "a"))));
	}

	private List<String> queuesOf(String payload) {
		return new ArrayList<>(this.jdbc.queryForList("SELECT queue FROM pgqueue.message WHERE payload = to_jsonb(?::text)",
				String.class, payload));
	}

}
