package io.github.pgqueue;

import io.github.pgqueue.testing.EmbeddedPostgres;
import io.github.pgqueue.testing.PostgresExtension;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;

import org.springframework.jdbc.core.JdbcTemplate;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * A schema an earlier release created, upgraded by the migrations of this one: what was granted
 * before a table existed reaches that table too.
 */
@ExtendWith(PostgresExtension.class)
class UpgradeIntegrationTests {

	private static final String SCHEMA = "pgqueue_upgraded";

	private static final String ROLE = "granted_before_rate_limits";

	private final EmbeddedPostgres postgres = EmbeddedPostgres.get();

	private final JdbcTemplate owner = new JdbcTemplate(this.postgres.dataSource());

	@AfterEach
	void dropSchemaAndRole() {
		this.owner.execute("DROP SCHEMA IF EXISTS " + SCHEMA + " CASCADE");
		this.owner.execute("DO $$ BEGIN DROP OWNED BY " + ROLE + "; DROP ROLE " + ROLE
				+ "; EXCEPTION WHEN undefined_object THEN NULL; END $$");
	}

	/**
	 * A consumer role granted pgqueue's tables by a release before rate limits (V22) could not
	 * take tokens after the upgrade: its claims of a limited queue failed for want of privileges
	 * on rate_bucket. Both buckets are granted as QueueAdmin.grant grants them now.
	 */
	@Test
	void aRoleGrantedBeforeRateLimitsMayTakeTokensOfBothBucketsAfterTheUpgrade() {
		this.postgres.migrate(SCHEMA, null, "21");
		this.owner.execute("CREATE ROLE " + ROLE + " LOGIN");
		this.owner.execute("GRANT USAGE ON SCHEMA " + SCHEMA + " TO " + ROLE);
		this.owner.execute("GRANT SELECT, INSERT, UPDATE, DELETE ON " + SCHEMA + ".message, " + SCHEMA + ".holding TO "
				+ ROLE);

		this.postgres.migrate(SCHEMA, null);

		assertThat(privilege("rate_bucket", "SELECT, INSERT, UPDATE")).isTrue();
		assertThat(privilege("key_rate_bucket", "SELECT, INSERT, UPDATE, DELETE")).isTrue();
	}

	private boolean privilege(String table, String privileges) {
		return this.owner.queryForObject("SELECT has_table_privilege(?, ?, ?)", Boolean.class, ROLE,
				SCHEMA + "." + table, privileges);
	}

}
