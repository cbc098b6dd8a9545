package io.github.pgqueue.reliability;

import io.github.pgqueue.QueueMessage;
import io.github.pgqueue.annotation.QueueListener;
import io.github.pgqueue.listener.QueueListenerEndpointRegistry;

import org.springframework.beans.factory.ObjectProvider;

/**
 * Takes whatever JSON arrives as {@code Object}, the shape most exposed to payloads that name a
 * class, and records what type it got and how many {@link Canary canaries} exist. The key comes
 * from the {@code chaos-key} header.
 */
public class UntypedListener {

	private final DeliveryRecorder recorder;

	private final ObjectProvider<QueueListenerEndpointRegistry> registry;

	public UntypedListener(DeliveryRecorder recorder, ObjectProvider<QueueListenerEndpointRegistry> registry) {
		this.recorder = recorder;
		this.registry = registry;
	}

	@QueueListener(id = "chaos-untyped", queues = "${chaos.queue}", concurrency = "${chaos.concurrency:2}")
	public void on(QueueMessage<Object> message) {
		this.recorder.record(JobListener.headerKey(message), message, null, this.registry.getObject().isRunning());
	}

}
