package io.github.pgqueue.internal;

import java.io.IOException;
import java.io.InputStream;
import java.lang.reflect.Field;
import java.lang.reflect.Method;
import java.lang.reflect.Modifier;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Set;
import java.util.TreeSet;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

import org.junit.jupiter.api.Test;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/**
 * The statement resources and their tests agree: every {@code -- name:} of the five
 * {@code .sql} resources has a test method of that name in camel case in the resource's test class
 * ({@code session.sql}: {@link SessionStatementsIntegrationTests}, and so on), so that a statement
 * added to a resource without a test fails the build here, naming it. And every
 * {@link NamedStatement} field of {@link QueueSql} loads (its resource has the statement, its
 * record has every parameter), with every parameter bound and the schema replaced, and every
 * statement of the resources is one of those fields: none is left unused under a name nothing
 * loads.
 */
class StatementResourcesTests {

	private static final List<String> FILES = List.of("session", "transactional", "send", "admin", "schedule", "limits");

	private static final Pattern NAME = Pattern.compile("^-- name: (\\S+)\\s*$", Pattern.MULTILINE);

	/** A parameter left unbound: a colon before a name, not the second one of a cast. */
	private static final Pattern PARAMETER = Pattern.compile("(?<![:\\w]):[a-z]");

	@Test
	void everyStatementHasATestOfItsNameInItsResourcesTestClass() throws Exception {
		Map<String, List<String>> missing = new LinkedHashMap<>();
		for (String file : FILES) {
			Class<?> tests = Class.forName(NamedStatement.class.getPackageName() + "." + capitalized(file)
					+ "StatementsIntegrationTests");
			Set<String> methods = new TreeSet<>();
			for (Method method : tests.getDeclaredMethods()) {
				if (method.isAnnotationPresent(Test.class)) {
					methods.add(method.getName());
				}
			}
			List<String> untested = names(file).stream().map(StatementResourcesTests::camelCase)
				.filter((name) -> !methods.contains(name))
				.toList();
			if (!untested.isEmpty()) {
				missing.put(tests.getSimpleName(), untested);
			}
		}
		assertThat(missing).as("statements without a test method of their name").isEmpty();
	}

	/**
	 * The claims' window is written into their text ({@code {batch} + 1000}); the poller's rules
	 * (QueueSql.SCARCE_GROUPS) and tests derive from {@link QueueSql#CLAIM_WINDOW}: they must agree.
	 */
	@Test
	void theClaimsWindowIsTheClaimWindowConstant() {
		QueueSql sql = QueueSql.of("pgqueue");
		List<NamedStatement<?>> claims = List.of(sql.claimWalk, sql.claimWalkAfter, sql.claimScanningHeads,
				sql.transactionalClaimWalk, sql.transactionalClaimWalkAfter, sql.transactionalClaimScanningHeads,
				sql.transactionalClaimScanningHeadsAfter);
		for (NamedStatement<?> claim : claims) {
			String text = claim.variant(7, false).sql();
			assertThat(text).as(claim.name()).contains("LIMIT 7 + " + QueueSql.CLAIM_WINDOW)
				.doesNotContainPattern("\\+ (?!" + QueueSql.CLAIM_WINDOW + "\\b)\\d{3,}");
		}
	}

	/** A record that does not fit its statement is refused when the statement loads, saying why. */
	@Test
	void aRecordThatDoesNotFitItsStatementIsRefusedWhenItLoads() {
		assertThatThrownBy(() -> NamedStatement.load("pgqueue", "admin", "exists", DateId.class))
			.isInstanceOf(IllegalStateException.class)
			.hasMessageContaining("Parameter id of DateId is a java.util.Date");
		assertThatThrownBy(() -> NamedStatement.load("pgqueue", "admin", "exists", QueueSql.Queue.class))
			.isInstanceOf(IllegalStateException.class)
			.hasMessageContaining("has parameter :id, which its record Queue does not have");
	}

	private record DateId(java.util.Date id, String queue) {
	}

	@Test
	void namesAreUniquePerResource() {
		for (String file : FILES) {
			List<String> names = names(file);
			assertThat(names).as(file + ".sql").doesNotHaveDuplicates().isNotEmpty();
		}
	}

	/**
	 * A statement between others is made once for each pair: TokenBucket asks for the key take
	 * between its planner settings on every take, and making it parses the text again (70 µs).
	 */
	@Test
	void aStatementBetweenOthersIsMadeOncePerPair() {
		QueueSql sql = QueueSql.of("stmt_schema");
		NamedStatement<QueueSql.TakeKeyTokens> planned = sql.takeKeyTokens.between(TokenBucket.KEY_PLANS, "");
		assertThat(sql.takeKeyTokens.between(TokenBucket.KEY_PLANS, "")).isSameAs(planned);
		assertThat(planned.sql()).startsWith(TokenBucket.KEY_PLANS + ";\n").endsWith(sql.takeKeyTokens.sql());
		assertThat(sql.takeKeyTokens.between("", "COMMIT")).isNotSameAs(planned)
			.satisfies((other) -> assertThat(other.sql()).isEqualTo(sql.takeKeyTokens.sql() + ";\nCOMMIT"));
	}

	@Test
	void everyQueueSqlStatementLoadsAndEveryResourceStatementIsOne() throws Exception {
		// Another schema than the default, so that a table left unqualified by the replacement shows.
		QueueSql sql = QueueSql.of("stmt_schema");
		Set<String> loaded = new LinkedHashSet<>();
		for (Field field : QueueSql.class.getDeclaredFields()) {
			if (field.getType() != NamedStatement.class || Modifier.isStatic(field.getModifiers())) {
				continue;
			}
			NamedStatement<?> statement = (NamedStatement<?>) field.get(sql);
			assertThat(statement).as(field.getName()).isNotNull();
			assertThat(loaded.add(statement.name())).as("%s loads %s, which another field loads too", field.getName(),
					statement.name()).isTrue();
			for (String text : texts(statement)) {
				assertThat(text).as(statement.name()).isNotBlank()
					.doesNotContain("{batch}", "-- if filtered", "pgqueue.")
					.doesNotContainPattern(PARAMETER);
				assertThat(text.lines()).as(statement.name() + ": comment lines are not sent")
					.noneMatch((line) -> line.strip().startsWith("--"));
			}
		}
		List<String> inResources = new ArrayList<>();
		FILES.forEach((file) -> names(file).forEach((name) -> inResources.add(file + "." + name)));
		assertThat(loaded).as("the statements of the resources, each loaded by one field of QueueSql")
			.containsExactlyInAnyOrderElementsOf(inResources);
	}

	/**
	 * The JDBC text of {@code statement}; of a claim, which takes a batch size, the variants with
	 * and without a filter, which differ by the filter's lines only.
	 */
	private static List<String> texts(NamedStatement<?> statement) {
		try {
			return List.of(statement.sql());
		}
		catch (IllegalStateException ex) {
			String unfiltered = statement.variant(7, false).sql();
			String filtered = statement.variant(7, true).sql();
			assertThat(unfiltered).as(statement.name()).contains("LIMIT 7").doesNotContain("@> ANY");
			assertThat(filtered).as(statement.name()).contains("@> ANY");
			assertThat(filtered.length()).isGreaterThan(unfiltered.length());
			return List.of(unfiltered, filtered);
		}
	}

	/** The statement names of resource {@code file}, in their order. */
	private static List<String> names(String file) {
		String resource = NamedStatement.FOLDER + file + ".sql";
		try (InputStream in = StatementResourcesTests.class.getClassLoader().getResourceAsStream(resource)) {
			assertThat(in).as(resource).isNotNull();
			Matcher matcher = NAME.matcher(new String(in.readAllBytes(), StandardCharsets.UTF_8));
			List<String> names = new ArrayList<>();
			while (matcher.find()) {
				names.add(matcher.group(1));
			}
			return names;
		}
		catch (IOException ex) {
			throw new IllegalStateException("Cannot read " + resource, ex);
		}
	}

	/** {@code claim_walk_after} as {@code claimWalkAfter}. */
	private static String camelCase(String name) {
		StringBuilder camel = new StringBuilder();
		for (String part : name.split("_")) {
			camel.append(camel.isEmpty() ? part : capitalized(part));
		}
		return camel.toString();
	}

	private static String capitalized(String word) {
		return word.substring(0, 1).toUpperCase(Locale.ROOT) + word.substring(1);
	}

}
