package io.github.pgqueue.annotation;

import java.lang.reflect.InvocationTargetException;
import java.lang.reflect.Method;
import java.lang.reflect.Parameter;
import java.lang.reflect.ParameterizedType;
import java.lang.reflect.Type;
import java.util.ArrayList;
import java.util.List;
import java.util.function.BiFunction;

import io.github.pgqueue.AckMode;
import io.github.pgqueue.Acknowledgment;
import io.github.pgqueue.QueueMessage;
import io.github.pgqueue.listener.QueueMessageListener;

/**
 * Calls one {@link QueueListener} method, binding each parameter from the message. The binding is
 * worked out once, at startup, and every parameter that cannot be bound is reported there.
 */
final class ListenerMethodInvoker implements QueueMessageListener {

	private final Object bean;

	private final Method method;

	private final List<BiFunction<QueueMessage<Object>, Acknowledgment, Object>> arguments;

	private final Type payloadType;

	private ListenerMethodInvoker(Object bean, Method method, List<BiFunction<QueueMessage<Object>, Acknowledgment, Object>> arguments,
			Type payloadType) {
		this.bean = bean;
		this.method = method;
		this.arguments = arguments;
		this.payloadType = payloadType;
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
		return new ListenerMethodInvoker(bean, method, arguments, (payloadType != null) ? payloadType : Object.class);
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
