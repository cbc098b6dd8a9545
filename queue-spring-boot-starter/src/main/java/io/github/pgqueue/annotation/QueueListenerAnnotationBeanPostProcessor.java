package io.github.pgqueue.annotation;

import java.lang.reflect.Method;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;

import io.github.pgqueue.listener.DefaultQueueErrorHandler;
import io.github.pgqueue.listener.QueueErrorHandler;
import io.github.pgqueue.listener.QueueListenerEndpoint;
import io.github.pgqueue.listener.QueueListenerEndpointRegistry;

import org.springframework.aop.support.AopUtils;
import org.springframework.beans.BeansException;
import org.springframework.beans.factory.BeanFactory;
import org.springframework.beans.factory.BeanFactoryAware;
import org.springframework.beans.factory.SmartInitializingSingleton;
import org.springframework.beans.factory.config.BeanPostProcessor;
import org.springframework.beans.factory.config.ConfigurableBeanFactory;
import org.springframework.core.MethodIntrospector;
import org.springframework.core.annotation.AnnotatedElementUtils;
import org.springframework.util.ReflectionUtils;
import org.springframework.util.StringUtils;

/**
 * Finds {@link QueueListener} methods on beans, checks each signature while the bean is created
 * (a failure names the bean, the method and the fix), and registers the endpoints with the
 * {@link QueueListenerEndpointRegistry} once every singleton exists.
 */
public class QueueListenerAnnotationBeanPostProcessor
		implements BeanPostProcessor, SmartInitializingSingleton, BeanFactoryAware {

	private final Set<Class<?>> classesWithoutListeners = ConcurrentHashMap.newKeySet();

	private final List<Found> found = new ArrayList<>();

	private ConfigurableBeanFactory beanFactory;

	@Override
	public void setBeanFactory(BeanFactory beanFactory) {
		this.beanFactory = (ConfigurableBeanFactory) beanFactory;
	}

	@Override
	public Object postProcessAfterInitialization(Object bean, String beanName) throws BeansException {
		Class<?> targetClass = AopUtils.getTargetClass(bean);
		if (this.classesWithoutListeners.contains(targetClass)) {
			return bean;
		}
		Map<Method, QueueListener> methods = MethodIntrospector.selectMethods(targetClass,
				(MethodIntrospector.MetadataLookup<QueueListener>) (method) -> AnnotatedElementUtils
					.findMergedAnnotation(method, QueueListener.class));
		if (methods.isEmpty()) {
			this.classesWithoutListeners.add(targetClass);
			return bean;
		}
		methods.forEach((method, annotation) -> {
			Method invocable = AopUtils.selectInvocableMethod(method, bean.getClass());
			ReflectionUtils.makeAccessible(invocable);
			ListenerMethodInvoker invoker = ListenerMethodInvoker.create(beanName, bean, invocable,
					annotation.ackMode());
			synchronized (this.found) {
				this.found.add(new Found(beanName, method, annotation, invoker));
			}
		});
		return bean;
	}

	@Override
	public void afterSingletonsInstantiated() {
		List<Found> listeners;
		synchronized (this.found) {
			listeners = new ArrayList<>(this.found);
			this.found.clear();
		}
		if (listeners.isEmpty()) {
			return;
		}
		QueueListenerDefaults defaults = this.beanFactory.getBean(QueueListenerDefaults.class);
		QueueListenerEndpointRegistry registry = this.beanFactory.getBean(QueueListenerEndpointRegistry.class);
		Set<String> known = defaults.knownQueues().get();
		for (Found listener : listeners) {
			registry.registerListenerEndpoint(endpoint(listener, defaults, known));
		}
	}

	private QueueListenerEndpoint endpoint(Found found, QueueListenerDefaults defaults, Set<String> known) {
		QueueListener annotation = found.annotation();
		String where = "@QueueListener method " + found.method().getDeclaringClass().getSimpleName() + "."
				+ found.method().getName() + " of bean '" + found.beanName() + "'";
		List<String> queues = Arrays.stream(annotation.queues()).map(this::resolve).toList();
		if (queues.isEmpty()) {
			throw new IllegalStateException(where + " names no queue; set queues = \"...\"");
		}
		for (String queue : queues) {
			if (!known.contains(queue)) {
				throw new IllegalStateException(where + " consumes unknown queue '" + queue
						+ "'; declare it under pgqueue.queues in application.yml (declared: " + known + ")");
			}
		}
		String id = StringUtils.hasText(annotation.id()) ? resolve(annotation.id())
				: found.beanName() + "." + found.method().getName();
		int concurrency = defaults.concurrency();
		if (StringUtils.hasText(annotation.concurrency())) {
			String value = resolve(annotation.concurrency());
			try {
				concurrency = Integer.parseInt(value.trim());
			}
			catch (NumberFormatException ex) {
				throw new IllegalStateException(where + " has concurrency '" + value + "'; use a whole number such as 4");
			}
		}
		String autoStartup = resolve(annotation.autoStartup()).trim();
		if (!autoStartup.equals("true") && !autoStartup.equals("false")) {
			throw new IllegalStateException(where + " has autoStartup '" + autoStartup + "'; use true or false");
		}
		try {
			return new QueueListenerEndpoint(id, queues, concurrency, annotation.ackMode(),
					Boolean.parseBoolean(autoStartup), found.invoker().payloadType(), found.invoker(),
					errorHandler(where, annotation), defaults.batchSize(), defaults.pollInterval());
		}
		catch (IllegalArgumentException ex) {
			throw new IllegalStateException(where + " is invalid: " + ex.getMessage(), ex);
		}
	}

	private QueueErrorHandler errorHandler(String where, QueueListener annotation) {
		if (!StringUtils.hasText(annotation.errorHandler())) {
			return this.beanFactory.getBeanProvider(QueueErrorHandler.class).getIfUnique(DefaultQueueErrorHandler::new);
		}
		String name = resolve(annotation.errorHandler());
		try {
			return this.beanFactory.getBean(name, QueueErrorHandler.class);
		}
		catch (BeansException ex) {
			throw new IllegalStateException(where + " names errorHandler '" + name
					+ "', but there is no QueueErrorHandler bean of that name; declare one or remove the attribute", ex);
		}
	}

	private String resolve(String value) {
		String resolved = this.beanFactory.resolveEmbeddedValue(value);
		return (resolved != null) ? resolved : value;
	}

	private record Found(String beanName, Method method, QueueListener annotation, ListenerMethodInvoker invoker) {
	}

}
