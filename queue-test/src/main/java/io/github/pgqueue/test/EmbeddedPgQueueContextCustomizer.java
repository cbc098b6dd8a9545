package io.github.pgqueue.test;

import java.util.Map;

import org.springframework.beans.factory.config.ConfigurableListableBeanFactory;
import org.springframework.beans.factory.support.AbstractBeanDefinition;
import org.springframework.beans.factory.support.BeanDefinitionRegistry;
import org.springframework.beans.factory.support.RootBeanDefinition;
import org.springframework.context.ConfigurableApplicationContext;
import org.springframework.core.env.ConfigurableEnvironment;
import org.springframework.core.env.MapPropertySource;
import org.springframework.test.context.ContextCustomizer;
import org.springframework.test.context.MergedContextConfiguration;

/**
 * Points a test context at a new database of the shared embedded server, and registers a
 * {@link QueueTestSupport} bean. A record: it is part of the test context's cache key, and two
 * test classes that both carry {@link EmbeddedPgQueue} (or both do not) may share a context.
 */
record EmbeddedPgQueueContextCustomizer(boolean annotated) implements ContextCustomizer {

	static final String PROPERTY_SOURCE_NAME = "pgqueueEmbeddedDatabase";

	static final String SUPPORT_BEAN_NAME = "pgQueueTestSupport";

	@Override
	public void customizeContext(ConfigurableApplicationContext context, MergedContextConfiguration mergedConfig) {
		ConfigurableEnvironment environment = context.getEnvironment();
		if (!this.annotated && !environment.getProperty(EmbeddedPgQueue.PROPERTY, Boolean.class, false)) {
			return;
		}
		SharedPostgres.Database database = SharedPostgres.get().createDatabase();
		environment.getPropertySources()
			.addFirst(new MapPropertySource(PROPERTY_SOURCE_NAME,
					Map.of("spring.datasource.url", database.jdbcUrl(), "spring.datasource.username",
							database.username(), "spring.datasource.password", "")));
		registerSupport(context.getBeanFactory());
	}

	// Lazy, so a context with pgqueue turned off (no QueueTemplate) fails only if a test asks for it.
	private static void registerSupport(ConfigurableListableBeanFactory beanFactory) {
		if (!(beanFactory instanceof BeanDefinitionRegistry registry)
				|| registry.containsBeanDefinition(SUPPORT_BEAN_NAME)) {
			return;
		}
		RootBeanDefinition definition = new RootBeanDefinition(QueueTestSupport.class);
		definition.setAutowireMode(AbstractBeanDefinition.AUTOWIRE_CONSTRUCTOR);
		definition.setLazyInit(true);
		registry.registerBeanDefinition(SUPPORT_BEAN_NAME, definition);
	}

}
