package io.github.pgqueue.test;

import java.util.List;

import org.springframework.test.context.ContextConfigurationAttributes;
import org.springframework.test.context.ContextCustomizer;
import org.springframework.test.context.ContextCustomizerFactory;
import org.springframework.test.context.TestContextAnnotationUtils;

/**
 * Registered in {@code META-INF/spring.factories}: gives every test context a customizer that
 * starts the embedded database when the test class (or an enclosing class) carries
 * {@link EmbeddedPgQueue}, or when the context's environment sets {@value EmbeddedPgQueue#PROPERTY}.
 */
class EmbeddedPgQueueContextCustomizerFactory implements ContextCustomizerFactory {

	@Override
	public ContextCustomizer createContextCustomizer(Class<?> testClass,
			List<ContextConfigurationAttributes> configAttributes) {
		boolean annotated = TestContextAnnotationUtils.findMergedAnnotation(testClass, EmbeddedPgQueue.class) != null;
		return new EmbeddedPgQueueContextCustomizer(annotated);
	}

}
