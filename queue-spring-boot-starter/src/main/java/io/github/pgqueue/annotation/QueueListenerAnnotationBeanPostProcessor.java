package io.github.pgqueue.annotation;

import java.lang.reflect.Method;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;

import io.github.pgqueue.AckMode;
import io.github.pgqueue.ConsumptionMode;
import io.github.pgqueue.listener.ContainerProperties;
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
import org.springframework.beans.factory.BeanFactoryUtils;
import org.springframework.beans.factory.BeanInitializationException;
import org.springframework.beans.factory.config.BeanDefinition;
import org.springframework.beans.factory.config.ConfigurableListableBeanFactory;
import org.springframework.boot.convert.DurationStyle;
import org.springframework.core.MethodIntrospector;
import org.springframework.core.annotation.AnnotatedElementUtils;
import org.springframework.util.ReflectionUtils;
import org.springframework.util.StringUtils;

/**
 * Finds {@link QueueListener} methods on beans, checks each signature while the bean is created
 * (a failure names the bean, the method and the fix), and registers the endpoints with the
 * {@link QueueListenerEndpointRegistry} of its own context (never a parent's) once every singleton
 * exists; a listener bean created later (a lazy one) is registered, and started, when it is
 * created. Listener beans must be singletons.
 */
public class QueueListenerAnnotationBeanPostProcessor
		implements BeanPostProcessor, SmartInitializingSingleton, BeanFactoryAware {

	private final Set<Class<?>> classesWithoutListeners = ConcurrentHashMap.newKeySet();

	private final List<Found> found = new ArrayList<>();

	private ConfigurableListableBeanFactory beanFactory;

	/** Whether the singletons exist: endpoints found from now on are registered at once. */
	private boolean started;

	@Override
	public void setBeanFactory(BeanFactory beanFactory) {
		this.beanFactory = (ConfigurableListableBeanFactory) beanFactory;
	}

	/** Whether {@code type} declares {@link QueueListener} methods. */
	public static boolean hasListenerMethods(Class<?> type) {
		return type != null && !MethodIntrospector.selectMethods(type,
				(MethodIntrospector.MetadataLookup<QueueListener>) (method) -> AnnotatedElementUtils
					.findMergedAnnotation(method, QueueListener.class))
			.isEmpty();
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
		checkSingleton(beanName, targetClass);
		List<Found> late = new ArrayList<>();
		methods.forEach((method, annotation) -> {
			Method invocable = AopUtils.selectInvocableMethod(method, bean.getClass());
			ReflectionUtils.makeAccessible(invocable);
			ListenerMethodInvoker invoker = annotation.batch()
					? ListenerMethodInvoker.createBatch(beanName, bean, invocable, annotation.ackMode())
					: ListenerMethodInvoker.create(beanName, bean, invocable, annotation.ackMode());
			Found listener = new Found(beanName, method, annotation, invoker);
			synchronized (this.found) {
				(this.started ? late : this.found).add(listener);
			}
		});
		if (!late.isEmpty()) {
			register(late);
		}
		return bean;
	}

	private void checkSingleton(String beanName, Class<?> targetClass) {
		if (this.beanFactory.containsBeanDefinition(beanName)) {
			BeanDefinition definition = this.beanFactory.getMergedBeanDefinition(beanName);
			if (!definition.isSingleton()) {
				throw new BeanInitializationException("Bean '" + beanName + "' (" + targetClass.getName()
						+ ") has @QueueListener methods but scope '" + definition.getScope()
						+ "'; a listener bean must be a singleton: remove the @Scope, or move the listener methods "
						+ "to a singleton bean that uses this one");
			}
		}
	}

	@Override
	public void afterSingletonsInstantiated() {
		List<Found> listeners;
		synchronized (this.found) {
			listeners = new ArrayList<>(this.found);
			this.found.clear();
			this.started = true;
		}
		if (!listeners.isEmpty()) {
			register(listeners);
		}
	}

	private void register(List<Found> listeners) {
		// This context's own beans: a child context's listeners never land in its parent's registry.
		QueueListenerDefaults defaults = BeanFactoryUtils.beanOfType(this.beanFactory, QueueListenerDefaults.class);
		QueueListenerEndpointRegistry registry = BeanFactoryUtils.beanOfType(this.beanFactory,
				QueueListenerEndpointRegistry.class);
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
		String autoStartup = resolve(annotation.autoStartup()).trim();
		if (!autoStartup.equals("true") && !autoStartup.equals("false")) {
			throw new IllegalStateException(where + " has autoStartup '" + autoStartup + "'; use true or false");
		}
		// A listener that starts later is checked when it starts: its queue may be created at runtime.
		for (String queue : autoStartup.equals("true") ? queues : List.<String>of()) {
			if (!known.contains(queue)) {
				throw new IllegalStateException(where + " consumes unknown queue '" + queue
						+ "'; declare it under pgqueue.queues in application.yml (declared: " + known
						+ "; a name with dots is declared in brackets: pgqueue.queues[" + queue + "].max-attempts), "
						+ "or set autoStartup = \"false\" and start the listener once the queue is created");
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
		QueueListenerDefaults.Consumption consumption = consumption(where, annotation, queues, defaults);
		try {
			ContainerProperties properties = ContainerProperties.builder(queues)
				.concurrency(concurrency)
				.ackMode(annotation.batch() ? AckMode.AUTO : annotation.ackMode()) // a batch is acknowledged as one
				.autoStartup(Boolean.parseBoolean(autoStartup))
				.errorHandler(errorHandler(where, annotation))
				.batchSize(defaults.batchSize())
				.pollInterval(defaults.pollInterval())
				.mode(consumption.mode())
				.transactionTimeout(consumption.transactionTimeout())
				.observationEnabled(defaults.observationEnabled())
				.filter(resolve(annotation.filter()))
				.build();
			QueueListenerEndpoint.Builder endpoint = QueueListenerEndpoint.builder(id).containerProperties(properties);
			return (annotation.batch() ? endpoint.batchListener(found.invoker().payloadType(), found.invoker())
					: endpoint.listener(found.invoker().payloadType(), found.invoker())).build();
		}
		catch (IllegalArgumentException ex) {
			throw new IllegalStateException(where + " is invalid: " + ex.getMessage(), ex);
		}
	}

	/**
	 * The mode and transaction timeout: the annotation's, else those its queues are configured
	 * with, which must then be the same for all of them.
	 */
	private QueueListenerDefaults.Consumption consumption(String where, QueueListener annotation, List<String> queues,
			QueueListenerDefaults defaults) {
		List<QueueListenerDefaults.Consumption> configured = queues.stream().map(defaults::consumptionOf).distinct()
			.toList();
		ConsumptionMode mode;
		if (StringUtils.hasText(annotation.mode())) {
			String value = resolve(annotation.mode()).trim();
			try {
				mode = ConsumptionMode.valueOf(value.toUpperCase(Locale.ROOT));
			}
			catch (IllegalArgumentException ex) {
				throw new IllegalStateException(where + " has mode '" + value + "'; use session or transactional");
			}
		}
		else if (configured.stream().map(QueueListenerDefaults.Consumption::mode).distinct().count() > 1) {
			throw new IllegalStateException(where + " consumes queues " + queues + " configured with different modes "
					+ "(pgqueue.queues.<name>.mode); split it into one listener per mode, or set mode on the annotation");
		}
		else {
			mode = configured.get(0).mode();
		}
		Duration timeout;
		if (StringUtils.hasText(annotation.transactionTimeout())) {
			String value = resolve(annotation.transactionTimeout()).trim();
			try {
				timeout = DurationStyle.detectAndParse(value);
			}
			catch (IllegalArgumentException ex) {
				throw new IllegalStateException(where + " has transactionTimeout '" + value
						+ "'; use a duration such as 10s or 500ms");
			}
		}
		else {
			timeout = configured.stream().map(QueueListenerDefaults.Consumption::transactionTimeout)
				.min(Duration::compareTo).orElseThrow();
		}
		return new QueueListenerDefaults.Consumption(mode, timeout);
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
