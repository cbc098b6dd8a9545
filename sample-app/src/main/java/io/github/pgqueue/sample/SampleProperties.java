package io.github.pgqueue.sample;

import java.time.Duration;

import org.springframework.boot.context.properties.ConfigurationProperties;

/** Settings of the sample, bound from {@code sample.*}. */
@ConfigurationProperties("sample")
public class SampleProperties {

	/** Whether the built-in traffic generator places orders. */
	private boolean trafficEnabled = true;

	/** Pause between generated orders. */
	private Duration trafficInterval = Duration.ofMillis(500);

	/** Every n-th generated order has an address that bounces, so it ends in the dead-letter queue. */
	private int bounceEvery = 10;

	/** Share of email attempts that fail with a transient error and are retried. */
	private double emailFailureRate = 0.2;

	/** Pause between progress lines in the log. */
	private Duration progressInterval = Duration.ofSeconds(5);

	public boolean isTrafficEnabled() {
		return this.trafficEnabled;
	}

	public void setTrafficEnabled(boolean trafficEnabled) {
		this.trafficEnabled = trafficEnabled;
	}

	public Duration getTrafficInterval() {
		return this.trafficInterval;
	}

	public void setTrafficInterval(Duration trafficInterval) {
		this.trafficInterval = trafficInterval;
	}

	public int getBounceEvery() {
		return this.bounceEvery;
	}

	public void setBounceEvery(int bounceEvery) {
		this.bounceEvery = bounceEvery;
	}

	public double getEmailFailureRate() {
		return this.emailFailureRate;
	}

	public void setEmailFailureRate(double emailFailureRate) {
		this.emailFailureRate = emailFailureRate;
	}

	public Duration getProgressInterval() {
		return this.progressInterval;
	}

	public void setProgressInterval(Duration progressInterval) {
		this.progressInterval = progressInterval;
	}

}
