package io.github.pgqueue.boot.autoconfigure.dashboard;

import org.springframework.boot.context.properties.ConfigurationProperties;

/**
 * Settings of the pgqueue web dashboard, bound from {@code pgqueue.dashboard.*}.
 */
@ConfigurationProperties("pgqueue.dashboard")
public class PgQueueDashboardProperties {

	/** Whether the application serves the dashboard (a servlet web application with Spring MVC). */
	private boolean enabled = false;

	/** Path of the dashboard, its JSON API under {@code <path>/api}. */
	private String path = "/pgqueue";

	/** Whether the dashboard only shows: cancel, redrive, delete, pause and stop answer 403 unless false. */
	private boolean readOnly = true;

	/** Role a user needs for the dashboard when Spring Security is present (without the ROLE_ prefix). */
	private String role = "PGQUEUE_ADMIN";

	public boolean isEnabled() {
		return this.enabled;
	}

	public void setEnabled(boolean enabled) {
		this.enabled = enabled;
	}

	public String getPath() {
		return this.path;
	}

	public void setPath(String path) {
		this.path = path;
	}

	public boolean isReadOnly() {
		return this.readOnly;
	}

	public void setReadOnly(boolean readOnly) {
		this.readOnly = readOnly;
	}

	public String getRole() {
		return this.role;
	}

	public void setRole(String role) {
		this.role = role;
	}

}
