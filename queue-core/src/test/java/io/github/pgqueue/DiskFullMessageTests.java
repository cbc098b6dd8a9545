package io.github.pgqueue;

import org.junit.jupiter.api.Test;
import org.postgresql.util.PSQLException;
import org.postgresql.util.ServerErrorMessage;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * What a send says when the server is out of disk space, by the severity PostgreSQL reported:
 * an ERROR aborted the statement, a PANIC crashed the server with the outcome unknown.
 * {@code QueueTemplateIntegrationTests} raises the ERROR on a real server.
 */
class DiskFullMessageTests {

	@Test
	void errorSaysNothingWasSent() {
		assertThat(QueueTemplate.diskFull("emails", failure("ERROR", "could not extend file \"base/5/16385\": "
				+ "No space left on device")))
			.isEqualTo("Cannot send to 'emails': the database server is out of disk space (ERROR: could not extend "
					+ "file \"base/5/16385\": No space left on device); nothing was sent, send again once space is freed "
					+ "on the server");
	}

	@Test
	void panicSaysTheOutcomeIsUnknown() {
		assertThat(QueueTemplate.diskFull("emails", failure("PANIC", "could not write to file \"pg_wal/xlogtemp.42\": "
				+ "No space left on device")))
			.isEqualTo("Cannot send to 'emails': the database server ran out of disk space and stopped (PANIC: could not "
					+ "write to file \"pg_wal/xlogtemp.42\": No space left on device); whether this send was committed is "
					+ "unknown, so look for the message before sending it again once space is freed and the server runs");
	}

	private static PSQLException failure(String severity, String message) {
		return new PSQLException(new ServerErrorMessage("S" + severity + "\0V" + severity + "\0C53100\0M" + message
				+ "\0HCheck free disk space.\0"));
	}

}
