package io.github.pgqueue.annotation;

import java.lang.reflect.InvocationTargetException;
import java.lang.reflect.Method;
import java.lang.reflect.Parameter;
import java.lang.reflect.ParameterizedType;
import java.lang.reflect.Type;
import java.util.ArrayList;
import java.util.List;
import java.util.function.BiFunction;
import java.util.function.Function;

import io.github.pgqueue.AckMode;
import io.github.pgqueue.Acknowledgment;
import io.github.pgqueue.QueueMessage;
import io.github.pgqueue.listener.QueueBatchListener;
import io.github.pgqueue.listener.QueueMessageListener;

/**
 * Calls one {@link QueueListener} method, binding each parameter from the message. The binding is
 * worked out once, at startup, and every parameter that cannot be bound is reported there.
 */
final class ListenerMethodInvoker implements QueueMessageListener, QueueBatchListener {

	private final Object bean;

	private final Method method;

	private final List<BiFunction<QueueMessage<Object>, Acknowledgment, Object>> arguments;

	private final Type payloadType;

	/** For a batch listener: what its one parameter gets from the batch. */
	private final Function<List<QueueMessage<Object>>, Object> batchArgument;

	private ListenerMethodInvoker(Object bean, Method method, List<BiFunction<QueueMessage<Object>, Acknowledgment, Object>> arguments,
			Type payloadType, Function<List<QueueMessage<Object>>, Object> batchArgument) {
		this.bean = bean;
		this.method = method;
		this.arguments = arguments;
		this.payloadType = payloadType;
		this.batchArgument = batchArgument;
	}

	/**
	 * Works out how to bind a batch listener method: one parameter, a {@code List<T>} of payloads
	 * or a {@code List<QueueMessage<T>>}.
	 * @throws IllegalStateException naming the bean, the method and what to change
	 */
	static ListenerMethodInvoker createBatch(String beanName, Object bean, Method method, AckMode ackMode) {
		if (ackMode != AckMode.AUTO) {
			throw invalid(beanName, method, "a batch listener is acknowledged automatically; remove ackMode = "
					+ ackMode + " or batch = true");
		}
		if (method.getParameterCount() != 1 || method.getParameterTypes()[0] != List.class) {
			throw invalid(beanName, method, "a batch listener (batch = true) takes exactly one parameter, a List<T> "
					+ "of payloads or a List<QueueMessage<T>>");
		}
		Type element = (method.getGenericParameterTypes()[0] instanceof ParameterizedType list)
				? list.getActualTypeArguments()[0] : Object.class;
		Class<?> elementClass = (element instanceof ParameterizedType parameterized)
				? (Class<?>) parameterized.getRawType() : (element instanceof Class<?> type) ? type : Object.class;
		if (elementClass == QueueMessage.class) {
			Type payloadType = (element instanceof ParameterizedType parameterized)
					? parameterized.getActualTypeArguments()[0] : Object.class;
			return new ListenerMethodInvoker(bean, method, List.of(), payloadType, (messages) -> messages);
		}
		if (elementClass == Acknowledgment.class) {
			throw invalid(beanName, method, "a batch listener is acknowledged automatically; it takes no Acknowledgment");
		}
		return new ListenerMethodInvoker(bean, method, List.of(), element,
				(messages) -> messages.stream().map(QueueMessage::payload).toList());
	}

	/**
	 * Works out how to bind {@code method}'s parameters.
	 * @throws IllegalStateException naming the bean, the method and what to change
	 */
	static ListenerMethodInvoker create(String beanName, Object bean, Method method, AckMode ackMode) {
		List<BiFunction<QueueMessage<Object>, Acknowledgment, Object>> arguments = new ArrayList<>();
		Parameter payload = null;
		Type messageType = null;
		boolean hasAcknowledgment = false;
		for (Parameter parameter : method.getParameters()) {
			Header header = parameter.getAnnotation(Header.class);
			Class<?> type = parameter.getType();
			if (header != null) {
				if (type != String.class) {
					throw invalid(beanName, method, "@Header parameter '" + parameter.getName() + "' is a "
							+ type.getSimpleName() + "; header values are strings, declare it as String");
				}
				String name = header.value();
				arguments.add((message, ack) -> message.header(name));
			}
			else if (type == Acknowledgment.class) {
				hasAcknowledgment = true;
				arguments.add((message, ack) -> ack);
			}
			else if (type == QueueMessage.class) {
				messageType = (parameter.getParameterizedType() instanceof ParameterizedType parameterized)
						? parameterized.getActualTypeArguments()[0] : Object.class;
				arguments.add((message, ack) -> message);
			}
			else {
				if (payload != null) {
					throw invalid(beanName, method, "parameters '" + payload.getName() + "' and '"
							+ parameter.getName() + "' both look like the payload; annotate header parameters with "
							+ "@Header, and take at most one payload, one QueueMessage and one Acknowledgment");
				}
				payload = parameter;
				arguments.add((message, ack) -> message.payload());
			}
		}
		Type payloadType = (payload != null) ? payload.getParameterizedType() : messageType;
		if (payload != null && messageType != null && messageType != Object.class
				&& !messageType.equals(payloadType)) {
			throw invalid(beanName, method, "the payload parameter '" + payload.getName() + "' is a "
					+ payloadType.getTypeName() + " but the QueueMessage carries " + messageType.getTypeName()
					+ "; make them the same type");
		}
		if (ackMode == AckMode.MANUAL && !hasAcknowledgment) {
			throw invalid(beanName, method, "ackMode is MANUAL but the method has no Acknowledgment parameter to "
					+ "complete the message with; add one or use ackMode AUTO");
		}
		return new ListenerMethodInvoker(bean, method, arguments, (payloadType != null) ? payloadType : Object.class,
				null);
	}

	private static IllegalStateException invalid(String beanName, Method method, String reason) {
		return new IllegalStateException("@QueueListener method " + method.getDeclaringClass().getSimpleName() + "."
				+ method.getName() + " of bean '" + beanName + "' cannot be bound: " + reason);
	}

	/** The type payloads are converted to. */
	Type payloadType() {
		return this.payloadType;
	}

	@Override
	public void onMessage(QueueMessage<Object> message, Acknowledgment ack) throws Exception {
		Object[] args = new Object[this.arguments.size()];
		for (int i = 0; i < args.length; i++) {
			args[i] = this.arguments.get(i).apply(message, ack);
		}
		invoke(args);
	}

	@Override
	public void onMessages(List<QueueMessage<Object>> messages) throws Exception {
		invoke(new Object[] { this.batchArgument.apply(messages) });
	}

	private void invoke(Object[] args) throws Exception {
		try {
			this.method.invoke(this.bean, args);
		}
		catch (InvocationTargetException ex) {
			Throwable cause = ex.getCause();
			if (cause instanceof Exception exception) {
				throw exception;
			}
			if (cause instanceof Error error) {
				throw error;
			}
			throw ex;
		}
	}

}
