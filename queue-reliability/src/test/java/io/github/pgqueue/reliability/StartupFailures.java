package io.github.pgqueue.reliability;

/** Reading why a consumer JVM did not start. */
final class StartupFailures {

	private StartupFailures() {
	}

	/**
	 * The consumer's output from the first {@code text} to the end of that line, or its last
	 * lines if it never printed {@code text}.
	 */
	static String firstLineContaining(ConsumerProcess consumer, String text) {
		return consumer.output().lines().filter((line) -> line.contains(text)).findFirst()
			.map((line) -> line.substring(line.indexOf(text)))
			.orElseGet(() -> "no line with '" + text + "'; the output ends with: " + consumer.tail(20));
	}

}
