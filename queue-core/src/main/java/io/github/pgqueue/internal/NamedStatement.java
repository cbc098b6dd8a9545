package io.github.pgqueue.internal;

import java.io.IOException;
import java.io.InputStream;
import java.lang.invoke.MethodHandle;
import java.lang.invoke.MethodHandles;
import java.lang.invoke.MethodType;
import java.lang.reflect.RecordComponent;
import java.nio.charset.StandardCharsets;
import java.sql.Array;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.SQLException;
import java.sql.Timestamp;
import java.sql.Types;
import java.time.Instant;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * One statement of pgqueue's {@code .sql} resources (in {@code io/github/pgqueue/internal/sql/}),
 * for one schema, with the record {@code P} whose components are its parameters.
 * <p>
 * A resource holds several statements, each after a line {@code -- name: <name>}; the comment lines
 * under it say what the statement does and why. The text is the statement as it runs, with only
 * these marks:
 * <ul>
 * <li>{@code pgqueue.} before a table or function: the configured schema takes its place;</li>
 * <li>{@code :name}: a parameter, bound from the record component of that name (a name may occur
 * several times; each component type has one SQL type, see {@link #bind});</li>
 * <li>in a claim, {@code {batch}}: the batch size, written as a literal, so that the LIMITs are
 * constants and the driver's prepared statement settles on one generic plan (a LIMIT bound as a
 * parameter is planned anew at every run: PostgreSQL's generic plan, estimated for an unknown
 * limit, always looks dearer than a custom one);</li>
 * <li>a line that ends with {@code -- if filtered}: kept only in the variant of a listener with
 * a header filter.</li>
 * </ul>
 * Nothing else is assembled at run time. Comment lines are left out of the text sent.
 */
public final class NamedStatement<P extends Record> {

	/** The resource folder of the statements. */
	static final String FOLDER = "io/github/pgqueue/internal/sql/";

	private static final Pattern PARAMETER = Pattern.compile("(?<![:\\w]):([a-z][a-z0-9_]*)");

	private static final Pattern SCHEMA = Pattern.compile("(?<![\\w\".-])pgqueue\\.(?=[a-z_])");

	private static final String IF_FILTERED = "-- if filtered";

	private static final Map<String, Map<String, String>> FILES = new ConcurrentHashMap<>();

	private final String name;

	private final String template;

	private final Class<P> parameters;

	/** The text as sent, with its {@code :name} parameters. */
	private final String named;

	/** The JDBC text: the template with every {@code :name} as {@code ?}. */
	private final String sql;

	/** Per {@code ?}, in order, the index of the record component bound to it. */
	private final int[] slots;

	private final RecordComponent[] components;

	private final MethodHandle[] accessors;

	private final Map<Long, NamedStatement<P>> variants;

	private NamedStatement(String name, String template, Class<P> parameters, Map<Long, NamedStatement<P>> variants) {
		this.name = name;
		this.template = template;
		this.parameters = parameters;
		this.variants = variants;
		this.components = parameters.getRecordComponents();
		this.accessors = new MethodHandle[this.components.length];
		Map<String, Integer> byName = new HashMap<>();
		MethodHandles.Lookup lookup = MethodHandles.lookup();
		for (int i = 0; i < this.components.length; i++) {
			byName.put(snakeCase(this.components[i].getName()), i);
			try {
				this.components[i].getAccessor().setAccessible(true);
				this.accessors[i] = lookup.unreflect(this.components[i].getAccessor())
					.asType(MethodType.methodType(Object.class, Record.class));
			}
			catch (IllegalAccessException | RuntimeException ex) {
				throw new IllegalStateException("Cannot read parameter record " + parameters.getName(), ex);
			}
		}
		List<Integer> slots = new ArrayList<>();
		this.named = strip(template, true);
		Matcher matcher = PARAMETER.matcher(this.named);
		StringBuilder sql = new StringBuilder();
		while (matcher.find()) {
			Integer component = byName.get(matcher.group(1));
			if (component == null) {
				throw new IllegalStateException("Statement '" + name + "' has parameter :" + matcher.group(1)
						+ ", which its record " + parameters.getSimpleName() + " does not have");
			}
			slots.add(component);
			matcher.appendReplacement(sql, "?");
		}
		matcher.appendTail(sql);
		this.sql = sql.toString();
		this.slots = slots.stream().mapToInt(Integer::intValue).toArray();
	}

	/**
	 * The statement {@code name} of resource {@code file} (without its {@code .sql}) for
	 * {@code schema} (validated, unquoted), bound from records of type {@code parameters}.
	 */
	static <P extends Record> NamedStatement<P> load(String schema, String file, String name, Class<P> parameters) {
		String text = FILES.computeIfAbsent(file, NamedStatement::read).get(name);
		if (text == null) {
			throw new IllegalStateException("No statement '" + name + "' in " + FOLDER + file + ".sql");
		}
		String schemaed = SCHEMA.matcher(text).replaceAll(Matcher.quoteReplacement("\"" + schema + "\"."));
		return new NamedStatement<>(file + "." + name, schemaed, parameters, new ConcurrentHashMap<>());
	}

	/** The statements of one resource by name, each as written (comment lines left in). */
	private static Map<String, String> read(String file) {
		String resource = FOLDER + file + ".sql";
		try (InputStream in = NamedStatement.class.getClassLoader().getResourceAsStream(resource)) {
			if (in == null) {
				throw new IllegalStateException("Missing resource " + resource);
			}
			Map<String, String> statements = new LinkedHashMap<>();
			String current = null;
			StringBuilder text = new StringBuilder();
			for (String line : new String(in.readAllBytes(), StandardCharsets.UTF_8).split("\n", -1)) {
				if (line.startsWith("-- name: ")) {
					if (current != null) {
						statements.put(current, text.toString().strip());
					}
					current = line.substring("-- name: ".length()).strip();
					text.setLength(0);
				}
				else if (current != null) {
					text.append(line).append('\n');
				}
			}
			if (current != null) {
				statements.put(current, text.toString().strip());
			}
			return statements;
		}
		catch (IOException ex) {
			throw new IllegalStateException("Cannot read " + resource, ex);
		}
	}

	/** The text as sent: comment lines left out, filter lines kept if {@code filtered}. */
	private static String strip(String text, boolean filtered) {
		StringBuilder out = new StringBuilder();
		for (String line : text.split("\n")) {
			String trimmed = line.strip();
			if (trimmed.startsWith("--") || trimmed.isEmpty()) {
				continue;
			}
			if (trimmed.endsWith(IF_FILTERED)) {
				if (!filtered) {
					continue;
				}
				line = line.substring(0, line.lastIndexOf(IF_FILTERED)).stripTrailing();
			}
			out.append(line).append('\n');
		}
		int end = out.length();
		while (end > 0 && (out.charAt(end - 1) == '\n' || out.charAt(end - 1) == ';')) {
			end--;
		}
		return out.substring(0, end);
	}

	/** The name of a record component as a parameter: {@code deadLetterQueue} is {@code :dead_letter_queue}. */
	private static String snakeCase(String name) {
		return name.replaceAll("([A-Z])", "_$1").toLowerCase(java.util.Locale.ROOT);
	}

	/**
	 * The variant of this claim for {@code batchSize} messages, with the filter lines if
	 * {@code filtered}; made once and kept.
	 */
	public NamedStatement<P> variant(int batchSize, boolean filtered) {
		if (batchSize < 1) {
			throw new IllegalArgumentException("A claim takes at least one message, not " + batchSize);
		}
		if (!this.template.contains("{batch}")) {
			throw new IllegalStateException("Statement '" + this.name + "' has no batch size");
		}
		return this.variants.computeIfAbsent(2L * batchSize + (filtered ? 1 : 0),
				(key) -> new NamedStatement<>(this.name, strip(this.template, filtered)
					.replace("{batch}", String.valueOf(batchSize)), this.parameters, this.variants));
	}

	/**
	 * This statement between {@code before} and {@code after} (either may be empty), statements
	 * without parameters sent in the same round trip: their results come before and after its own.
	 */
	public NamedStatement<P> between(String before, String after) {
		sql(); // not a claim's template
		String text = (before.isEmpty() ? "" : before + ";\n") + this.named + (after.isEmpty() ? "" : ";\n" + after);
		return new NamedStatement<>(this.name, text, this.parameters, new ConcurrentHashMap<>());
	}

	/** The statement's name: its resource and its name there. */
	public String name() {
		return this.name;
	}

	/** The JDBC text, with {@code ?} for each parameter. */
	public String sql() {
		if (this.sql.contains("{batch}")) {
			throw new IllegalStateException("Statement '" + this.name + "' takes a batch size: use variant()");
		}
		return this.sql;
	}

	/** What prepares this statement with {@code parameters} for Spring's {@code JdbcTemplate}. */
	public org.springframework.jdbc.core.PreparedStatementCreator with(P parameters) {
		return (connection) -> prepare(connection, parameters);
	}

	/** Prepares this statement on {@code connection} and binds {@code parameters}. */
	public PreparedStatement prepare(Connection connection, P parameters) throws SQLException {
		PreparedStatement ps = connection.prepareStatement(sql());
		try {
			bind(ps, parameters);
			return ps;
		}
		catch (SQLException | RuntimeException ex) {
			ps.close();
			throw ex;
		}
	}

	/**
	 * Binds {@code parameters} to {@code ps}, a statement prepared from {@link #sql()}. Types:
	 * String text, int/Integer integer, long/Long bigint, boolean/Boolean boolean, double/Double
	 * double precision, Instant timestamptz, Long[] bigint[], Integer[] integer[], String[] text[];
	 * a null binds a null of that type.
	 */
	public void bind(PreparedStatement ps, P parameters) throws SQLException {
		Object[] values = new Object[this.components.length];
		boolean[] read = new boolean[this.components.length];
		for (int i = 0; i < this.slots.length; i++) {
			int component = this.slots[i];
			if (!read[component]) {
				values[component] = toSql(ps.getConnection(), component, value(component, parameters));
				read[component] = true;
			}
			set(ps, i + 1, this.components[component].getType(), values[component]);
		}
	}

	private Object value(int component, P parameters) {
		try {
			return (Object) this.accessors[component].invokeExact((Record) parameters);
		}
		catch (Throwable ex) {
			throw new IllegalStateException("Cannot read parameter " + this.components[component].getName() + " of "
					+ this.name, ex);
		}
	}

	private Object toSql(Connection connection, int component, Object value) throws SQLException {
		if (value == null) {
			return null;
		}
		Class<?> type = this.components[component].getType();
		if (type == Long[].class) {
			return connection.createArrayOf("bigint", (Object[]) value);
		}
		if (type == Integer[].class) {
			return connection.createArrayOf("int4", (Object[]) value);
		}
		if (type == String[].class) {
			return connection.createArrayOf("text", (Object[]) value);
		}
		if (type == Instant.class) {
			return Timestamp.from((Instant) value);
		}
		return value;
	}

	private static void set(PreparedStatement ps, int index, Class<?> type, Object value) throws SQLException {
		if (value == null) {
			ps.setNull(index, sqlType(type));
		}
		else if (value instanceof String string) {
			ps.setString(index, string);
		}
		else if (value instanceof Integer number) {
			ps.setInt(index, number);
		}
		else if (value instanceof Long number) {
			ps.setLong(index, number);
		}
		else if (value instanceof Boolean flag) {
			ps.setBoolean(index, flag);
		}
		else if (value instanceof Double number) {
			ps.setDouble(index, number);
		}
		else if (value instanceof Timestamp timestamp) {
			ps.setTimestamp(index, timestamp);
		}
		else if (value instanceof Array array) {
			ps.setArray(index, array);
		}
		else {
			throw new IllegalArgumentException("No SQL type for parameter of " + type.getName());
		}
	}

	private static int sqlType(Class<?> type) {
		if (type == String.class) {
			return Types.VARCHAR;
		}
		if (type == Integer.class || type == int.class) {
			return Types.INTEGER;
		}
		if (type == Long.class || type == long.class) {
			return Types.BIGINT;
		}
		if (type == Boolean.class || type == boolean.class) {
			return Types.BOOLEAN;
		}
		if (type == Double.class || type == double.class) {
			return Types.DOUBLE;
		}
		if (type == Instant.class) {
			return Types.TIMESTAMP_WITH_TIMEZONE;
		}
		if (type.isArray()) {
			return Types.ARRAY;
		}
		throw new IllegalArgumentException("No SQL type for parameter of " + type.getName());
	}

	@Override
	public String toString() {
		return this.name;
	}

}
