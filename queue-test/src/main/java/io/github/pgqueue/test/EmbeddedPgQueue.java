package io.github.pgqueue.test;

import java.lang.annotation.Documented;
import java.lang.annotation.ElementType;
import java.lang.annotation.Inherited;
import java.lang.annotation.Retention;
import java.lang.annotation.RetentionPolicy;
import java.lang.annotation.Target;

/**
 * Runs a Spring test's application on an embedded PostgreSQL. One server (zonky's binaries from
 * Maven Central, no Docker) is started per JVM on first use and stopped when the JVM exits; each
 * application context gets a new, empty database on it, named in {@code spring.datasource.url},
 * {@code spring.datasource.username} and {@code spring.datasource.password}, which replace any
 * the application configures. The context also gets a {@link QueueTestSupport} bean.
 * <p>
 * A database per context, not per server: Spring keeps test contexts cached and their listeners
 * running, so two contexts on one database would take each other's messages.
 * <p>
 * Without the annotation, the property {@value #PROPERTY} {@code = true} (in a test's
 * {@code application.properties} or {@code @SpringBootTest(properties = ...)}) does the same for
 * every test context.
 */
@Target(ElementType.TYPE)
@Retention(RetentionPolicy.RUNTIME)
@Documented
@Inherited
public @interface EmbeddedPgQueue {

	/** The property that turns the embedded database on for tests without the annotation. */
	String PROPERTY = "pgqueue.test.embedded-database";

}
