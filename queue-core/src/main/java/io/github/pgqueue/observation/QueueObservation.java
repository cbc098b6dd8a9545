package io.github.pgqueue.observation;

import io.micrometer.common.docs.KeyName;
import io.micrometer.observation.Observation;
import io.micrometer.observation.ObservationConvention;
import io.micrometer.observation.docs.ObservationDocumentation;

/** The observations pgqueue records, their default conventions and tag names. */
public enum QueueObservation implements ObservationDocumentation {

	/** Around every {@code send}, {@code sendBatch} and {@code publish} of a template. */
	SEND {

		@Override
		public String getName() {
			return "pgqueue.send";
		}

		@Override
		public Class<? extends ObservationConvention<? extends Observation.Context>> getDefaultConvention() {
			return DefaultQueueSendObservationConvention.class;
		}

		@Override
		public KeyName[] getLowCardinalityKeyNames() {
			return SendLowCardinalityTags.values();
		}

		@Override
		public KeyName[] getHighCardinalityKeyNames() {
			return SendHighCardinalityTags.values();
		}

	},

	/**
	 * Around every message handed to a listener, or every call of a batch listener, in both
	 * consumption modes.
	 */
	PROCESS {

		@Override
		public String getName() {
			return "pgqueue.process";
		}

		@Override
		public Class<? extends ObservationConvention<? extends Observation.Context>> getDefaultConvention() {
			return DefaultQueueProcessObservationConvention.class;
		}

		@Override
		public KeyName[] getLowCardinalityKeyNames() {
			return ProcessLowCardinalityTags.values();
		}

		@Override
		public KeyName[] getHighCardinalityKeyNames() {
			return ProcessHighCardinalityTags.values();
		}

	};

	/** Low-cardinality tags of {@link #SEND}. */
	public enum SendLowCardinalityTags implements KeyName {

		/** The queue sent to; {@code none} for a publish. */
		QUEUE("queue"),

		/** The exchange published to; {@code none} for a send. */
		EXCHANGE("exchange"),

		/** {@code send}, {@code send_batch} or {@code publish}. */
		OPERATION("operation");

		private final String key;

		SendLowCardinalityTags(String key) {
			this.key = key;
		}

		@Override
		public String asString() {
			return this.key;
		}

	}

	/** High-cardinality tags of {@link #SEND}. */
	public enum SendHighCardinalityTags implements KeyName {

		/** The routing key of a publish. */
		ROUTING_KEY("routing.key");

		private final String key;

		SendHighCardinalityTags(String key) {
			this.key = key;
		}

		@Override
		public String asString() {
			return this.key;
		}

	}

	/** Low-cardinality tags of {@link #PROCESS}. */
	public enum ProcessLowCardinalityTags implements KeyName {

		/** The queue the message was taken from. */
		QUEUE("queue"),

		/** The listener's id. */
		LISTENER_ID("listener.id"),

		/** {@code success}, {@code retry}, {@code dead} or {@code released}. */
		OUTCOME("outcome");

		private final String key;

		ProcessLowCardinalityTags(String key) {
			this.key = key;
		}

		@Override
		public String asString() {
			return this.key;
		}

	}

	/** High-cardinality tags of {@link #PROCESS}. */
	public enum ProcessHighCardinalityTags implements KeyName {

		/** The message's id; not on a batch. */
		MESSAGE_ID("message.id"),

		/** The attempt, from 1; not on a batch. */
		ATTEMPT("attempt"),

		/** How many messages a batch listener's call took; only on a batch. */
		BATCH_SIZE("batch.size");

		private final String key;

		ProcessHighCardinalityTags(String key) {
			this.key = key;
		}

		@Override
		public String asString() {
			return this.key;
		}

	}

}
