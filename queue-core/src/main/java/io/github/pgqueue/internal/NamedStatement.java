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

import org.springframework.jdbc.core.PreparedStatementCreator;
import org.springframework.jdbc.core.SqlProvider;

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

	/** Whether the text still has its {@code {batch}} marks: a claim's template, not a statement to run. */
	private final boolean takesBatchSize;

	/** Per record component, what it binds as. */
	private final SqlType[] types;

	private final Map<Long, NamedStatement<P>> variants;

	/** What {@link #between} made of this statement, by its {@code before} and {@code after}. */
	private final Map<List<String>, NamedStatement<P>> surrounded = new ConcurrentHashMap<>();

	private NamedStatement(String name, String template, Class<P> parameters, Map<Long, NamedStatement<P>> variants) {
		this.name = name;
		this.template = template;
		this.parameters = parameters;
		this.variants = variants;
		this.components = parameters.getRecordComponents();
		this.accessors = new MethodHandle[this.components.length];
		this.types = new SqlType[this.components.length];
		Map<String, Integer> byName = new HashMap<>();
		MethodHandles.Lookup lookup = MethodHandles.lookup();
		for (int i = 0; i < this.components.length; i++) {
			byName.put(snakeCase(this.components[i].getName()), i);
			this.types[i] = SqlType.of(this.components[i].getType(),
					"Parameter " + this.components[i].getName() + " of " + parameters.getSimpleName());
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
		this.takesBatchSize = this.sql.contains("{batch}");
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
		if (!this.takesBatchSize) {
			throw new IllegalStateException("Statement '" + this.name + "' has no batch size");
		}
		return this.variants.computeIfAbsent(2L * batchSize + (filtered ? 1 : 0),
				(key) -> new NamedStatement<>(this.name, strip(this.template, filtered)
					.replace("{batch}", String.valueOf(batchSize)), this.parameters, this.variants));
	}

	/**
	 * This statement between {@code before} and {@code after} (either may be empty), statements
	 * without parameters sent in the same round trip: their results come before and after its own.
	 * Made once for each {@code before} and {@code after}, so that a caller may ask for it on every
	 * run.
	 */
	public NamedStatement<P> between(String before, String after) {
		sql(); // not a claim's template
		return this.surrounded.computeIfAbsent(List.of(before, after), (key) -> {
			String text = (before.isEmpty() ? "" : before + ";\n") + this.named + (after.isEmpty() ? "" : ";\n" + after);
			return new NamedStatement<>(this.name, text, this.parameters, new ConcurrentHashMap<>());
		});
	}

	/** The statement's name: its resource and its name there. */
	public String name() {
		return this.name;
	}

	/** The JDBC text, with {@code ?} for each parameter. */
	public String sql() {
		if (this.takesBatchSize) {
			throw new IllegalStateException("Statement '" + this.name + "' takes a batch size: use variant()");
		}
		return this.sql;
	}

	/** What prepares this statement with {@code parameters} for Spring's {@code JdbcTemplate}. */
	public PreparedStatementCreator with(P parameters) {
		return new Creator(parameters);
	}

	/** A creator that also gives its SQL, so that Spring's errors and logs name the statement. */
	private final class Creator implements PreparedStatementCreator, SqlProvider {

		private final P parameters;

		Creator(P parameters) {
			this.parameters = parameters;
		}

		@Override
		public PreparedStatement createPreparedStatement(Connection connection) throws SQLException {
			return prepare(connection, this.parameters);
		}

		@Override
		public String getSql() {
			return NamedStatement.this.name + ": " + sql();
		}

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
	 * Binds {@code parameters} to {@code ps}, a statement prepared from {@link #sql()}; a null binds
	 * a null of the component's type (see {@link SqlType}).
	 */
	public void bind(PreparedStatement ps, P parameters) throws SQLException {
		Object[] values = new Object[this.components.length];
		boolean[] read = new boolean[this.components.length];
		for (int i = 0; i < this.slots.length; i++) {
			int component = this.slots[i];
			if (!read[component]) {
				values[component] = this.types[component].toSql(ps.getConnection(), value(component, parameters));
				read[component] = true;
			}
			this.types[component].set(ps, i + 1, values[component]);
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

	/** What a parameter record component binds as, by its Java type. */
	private enum SqlType {

		TEXT(Types.VARCHAR, null), INTEGER(Types.INTEGER, null), BIGINT(Types.BIGINT, null),
		BOOLEAN(Types.BOOLEAN, null), DOUBLE(Types.DOUBLE, null), TIMESTAMPTZ(Types.TIMESTAMP_WITH_TIMEZONE, null),
		BIGINT_ARRAY(Types.ARRAY, "bigint"), INTEGER_ARRAY(Types.ARRAY, "int4"), TEXT_ARRAY(Types.ARRAY, "text");

		private final int jdbcType;

		/** The element type of an array, null for a scalar. */
		private final String elementType;

		SqlType(int jdbcType, String elementType) {
			this.jdbcType = jdbcType;
			this.elementType = elementType;
		}

		static SqlType of(Class<?> type, String where) {
			Map<Class<?>, SqlType> types = Map.ofEntries(Map.entry(String.class, TEXT), Map.entry(Integer.class, INTEGER),
					Map.entry(int.class, INTEGER), Map.entry(Long.class, BIGINT), Map.entry(long.class, BIGINT),
					Map.entry(Boolean.class, BOOLEAN), Map.entry(boolean.class, BOOLEAN), Map.entry(Double.class, DOUBLE),
					Map.entry(double.class, DOUBLE), Map.entry(Instant.class, TIMESTAMPTZ),
					Map.entry(Long[].class, BIGINT_ARRAY), Map.entry(Integer[].class, INTEGER_ARRAY),
					Map.entry(String[].class, TEXT_ARRAY));
			SqlType sqlType = types.get(type);
			if (sqlType == null) {
				throw new IllegalStateException(where + " is a " + type.getName() + ", which has no SQL type here; "
						+ "use one of " + types.keySet().stream().map(Class::getSimpleName).sorted().toList());
			}
			return sqlType;
		}

		/** The value as the driver takes it: an array made on {@code connection}, an Instant as a Timestamp. */
		Object toSql(Connection connection, Object value) throws SQLException {
			if (value == null) {
				return null;
			}
			if (this.elementType != null) {
				return connection.createArrayOf(this.elementType, (Object[]) value);
			}
			return (this == TIMESTAMPTZ) ? Timestamp.from((Instant) value) : value;
		}

		void set(PreparedStatement ps, int index, Object value) throws SQLException {
			if (value == null) {
				ps.setNull(index, this.jdbcType);
				return;
			}
			switch (this) {
				case TEXT -> ps.setString(index, (String) value);
				case INTEGER -> ps.setInt(index, (Integer) value);
				case BIGINT -> ps.setLong(index, (Long) value);
				case BOOLEAN -> ps.setBoolean(index, (Boolean) value);
				case DOUBLE -> ps.setDouble(index, (Double) value);
				case TIMESTAMPTZ -> ps.setTimestamp(index, (Timestamp) value);
				default -> ps.setArray(index, (Array) value);
			}
		}

	}

	@Override
	public String toString() {
		return this.name;
	}

}
