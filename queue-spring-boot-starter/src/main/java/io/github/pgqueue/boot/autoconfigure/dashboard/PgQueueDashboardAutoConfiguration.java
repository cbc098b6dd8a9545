package io.github.pgqueue.boot.autoconfigure.dashboard;

import java.time.Clock;
import java.util.regex.Pattern;

import io.github.pgqueue.QueueTemplate;
import io.github.pgqueue.boot.autoconfigure.PgQueueAutoConfiguration;
import io.github.pgqueue.listener.QueueListenerEndpointRegistry;
import io.micrometer.core.instrument.MeterRegistry;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import org.springframework.beans.factory.ObjectProvider;
import org.springframework.boot.autoconfigure.AutoConfiguration;
import org.springframework.boot.autoconfigure.condition.ConditionalOnBean;
import org.springframework.boot.autoconfigure.condition.ConditionalOnBooleanProperty;
import org.springframework.boot.autoconfigure.condition.ConditionalOnClass;
import org.springframework.boot.autoconfigure.condition.ConditionalOnWebApplication;
import org.springframework.boot.context.properties.EnableConfigurationProperties;
import org.springframework.boot.context.properties.source.InvalidConfigurationPropertyValueException;
import org.springframework.context.annotation.Bean;
import org.springframework.core.io.ResourceLoader;
import org.springframework.util.ClassUtils;
import org.springframework.web.servlet.DispatcherServlet;
import org.springframework.web.servlet.config.annotation.InterceptorRegistry;
import org.springframework.web.servlet.config.annotation.ResourceHandlerRegistry;
import org.springframework.web.servlet.config.annotation.WebMvcConfigurer;

/**
 * Auto-configuration of the pgqueue web dashboard: off unless {@code pgqueue.dashboard.enabled}
 * is set, and only in a servlet web application with Spring MVC and a {@link QueueTemplate}.
 * Read-only unless {@code pgqueue.dashboard.read-only=false}; with Spring Security on the class
 * path only users with {@code pgqueue.dashboard.role} get in.
 */
@AutoConfiguration(after = PgQueueAutoConfiguration.class)
@ConditionalOnWebApplication(type = ConditionalOnWebApplication.Type.SERVLET)
@ConditionalOnClass({ DispatcherServlet.class, WebMvcConfigurer.class })
@ConditionalOnBooleanProperty(name = "pgqueue.dashboard.enabled")
@ConditionalOnBean(QueueTemplate.class)
@EnableConfigurationProperties(PgQueueDashboardProperties.class)
public final class PgQueueDashboardAutoConfiguration {

	private static final Logger logger = LoggerFactory.getLogger(PgQueueDashboardAutoConfiguration.class);

	private static final Pattern PATH = Pattern.compile("(/[A-Za-z0-9._~-]+)+");

	static final String SECURITY_CLASS = "org.springframework.security.web.csrf.CsrfToken";

	@Bean
	ProcessedRates pgQueueDashboardRates(QueueTemplate template, ObjectProvider<MeterRegistry> meterRegistry) {
		return new ProcessedRates(meterRegistry.getIfAvailable(template.context()::meterRegistry), Clock.systemUTC());
	}

	@Bean
	DashboardController pgQueueDashboardController(QueueTemplate template, ProcessedRates rates,
			ObjectProvider<QueueListenerEndpointRegistry> registry, PgQueueDashboardProperties properties,
			ResourceLoader resourceLoader) {
		String path = checkedPath(properties);
		boolean security = security(resourceLoader);
		logger.info("pgqueue dashboard at {}/ ({}{})", path, properties.isReadOnly() ? "read-only" : "read-write",
				security ? ", role " + properties.getRole() + " required" : ", no Spring Security: open to anyone "
						+ "who reaches the path");
		return new DashboardController(template, new DashboardRepository(template), rates, registry,
				properties.isReadOnly(), security);
	}

	@Bean
	WebMvcConfigurer pgQueueDashboardWebMvcConfigurer(PgQueueDashboardProperties properties,
			ResourceLoader resourceLoader) {
		String path = checkedPath(properties);
		boolean security = security(resourceLoader);
		DashboardAccessInterceptor access = new DashboardAccessInterceptor(properties.isReadOnly(),
				properties.getRole(), security);
		return new WebMvcConfigurer() {

			@Override
			public void addResourceHandlers(ResourceHandlerRegistry registry) {
				registry.addResourceHandler(path + "/static/**")
					.addResourceLocations("classpath:/META-INF/pgqueue-dashboard/");
			}

			@Override
			public void addInterceptors(InterceptorRegistry registry) {
				registry.addInterceptor(access).addPathPatterns(path, path + "/**");
			}

		};
	}

	/** Whether Spring Security is on the application's class path (the context's class loader, as conditions see it). */
	private static boolean security(ResourceLoader resourceLoader) {
		return ClassUtils.isPresent(SECURITY_CLASS, resourceLoader.getClassLoader());
	}

	private static String checkedPath(PgQueueDashboardProperties properties) {
		String path = properties.getPath();
		if (path == null || !PATH.matcher(path).matches()) {
			throw new InvalidConfigurationPropertyValueException("pgqueue.dashboard.path", path,
					"A path such as /pgqueue: a '/' and then letters, digits, '.', '_', '~' or '-', "
							+ "in one or more '/'-separated parts, without a '/' at the end");
		}
		if (properties.getRole() == null || !properties.getRole().matches("[A-Za-z0-9_.-]+")) {
			throw new InvalidConfigurationPropertyValueException("pgqueue.dashboard.role", properties.getRole(),
					"A role name (letters, digits, '_', '.', '-'), without the ROLE_ prefix");
		}
		return path;
	}

}
