package io.github.pgqueue.boot.autoconfigure;

import java.lang.annotation.Documented;
import java.lang.annotation.ElementType;
import java.lang.annotation.Retention;
import java.lang.annotation.RetentionPolicy;
import java.lang.annotation.Target;

import org.springframework.beans.factory.annotation.Qualifier;

/**
 * Marks the {@link javax.sql.DataSource} pgqueue uses, when the application has several (as
 * {@code @FlywayDataSource} does for Flyway). Without it pgqueue uses the single, or the
 * {@code @Primary}, DataSource, and backs off when there is none or no single one.
 */
@Target({ ElementType.FIELD, ElementType.METHOD, ElementType.PARAMETER, ElementType.TYPE, ElementType.ANNOTATION_TYPE })
@Retention(RetentionPolicy.RUNTIME)
@Documented
@Qualifier
public @interface PgQueueDataSource {

}
