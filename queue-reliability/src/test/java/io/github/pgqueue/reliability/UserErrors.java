package io.github.pgqueue.reliability;

import org.assertj.core.api.ThrowableAssert.ThrowingCallable;

import static org.assertj.core.api.Assertions.catchThrowable;

/** Catches the error a user gets and prints it, so the report shows what a user sees. */
final class UserErrors {

	private UserErrors() {
	}

	/** Runs {@code call}, which must fail, prints its error under {@code what} and returns it. */
	static Throwable expect(String what, ThrowingCallable call) {
		Throwable error = catchThrowable(call);
		if (error == null) {
			throw new AssertionError(what + ": expected an error, but the call succeeded");
		}
		show(what, error.getClass().getSimpleName() + ": " + error.getMessage());
		return error;
	}

	/** Prints {@code message} as what the user sees for {@code what}. */
	static void show(String what, String message) {
		System.out.println("  user sees (" + what + "): " + message.replace("\n", " | "));
	}

}
