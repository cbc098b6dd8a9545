package io.github.pgqueue.boot.autoconfigure;

import java.util.LinkedHashMap;
import java.util.Map;

import io.github.pgqueue.ScheduleDefinition;

/**
 * One recurring message of {@code pgqueue.schedules.<name>}: at each tick of {@code cron}, read in
 * {@code zone}, one message with {@code payload} and {@code headers} is sent to {@code queue}, or
 * published to {@code exchange} with {@code routing-key}.
 */
public class ScheduleProperties {

	/** Cron expression: six fields (second minute hour day-of-month month day-of-week) such as "0 0 2 * * *", or a macro such as "@daily". */
	private String cron;

	/** Time zone the cron fields are read in: a region such as Europe/Paris, UTC, or an offset such as +02:00. */
	private String zone = ScheduleDefinition.DEFAULT_ZONE.getId();

	/** Queue each tick's message is sent to; it must be declared. Give either a queue or an exchange. */
	private String queue;

	/** Exchange each tick's message is published to, with routing-key; it must be declared. */
	private String exchange;

	/** Routing key of the publish to exchange (the empty key for a fanout exchange). */
	private String routingKey;

	/** Body of each message, as JSON, such as '{"report": "daily"}'. */
	private String payload = ScheduleDefinition.DEFAULT_PAYLOAD;

	/** Headers of each message; names starting with pgqueue- are pgqueue's own. */
	private Map<String, String> headers = new LinkedHashMap<>();

	/** What ticks missed while no JVM ran the schedule become: fire-once (one message, for the latest) or skip (none). */
	private String missed = ScheduleDefinition.Missed.FIRE_ONCE.value();

	public String getCron() {
		return this.cron;
	}

	public void setCron(String cron) {
		this.cron = cron;
	}

	public String getZone() {
		return this.zone;
	}

	public void setZone(String zone) {
		this.zone = zone;
	}

	public String getQueue() {
		return this.queue;
	}

	public void setQueue(String queue) {
		this.queue = queue;
	}

	public String getExchange() {
		return this.exchange;
	}

	public void setExchange(String exchange) {
		this.exchange = exchange;
	}

	public String getRoutingKey() {
		return this.routingKey;
	}

	public void setRoutingKey(String routingKey) {
		this.routingKey = routingKey;
	}

	public String getPayload() {
		return this.payload;
	}

	public void setPayload(String payload) {
		this.payload = payload;
	}

	public Map<String, String> getHeaders() {
		return this.headers;
	}

	public void setHeaders(Map<String, String> headers) {
		this.headers = headers;
	}

	public String getMissed() {
		return this.missed;
	}

	public void setMissed(String missed) {
		this.missed = missed;
	}

}
