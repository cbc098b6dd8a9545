package io.github.pgqueue.internal;

import org.junit.jupiter.api.Test;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatIllegalArgumentException;

/** The filter language and its expansion into the JSON objects a matching message's headers contain. */
class HeaderFilterTests {

	@Test
	void setsExpandIntoAlternativesOfTheConjunction() {
		assertThat(HeaderFilter.parse("type = 'a' and region in ('eu','us', 'eu') AND n = 1.5").documents())
			.containsExactly("{\"type\":\"a\",\"region\":\"eu\",\"n\":1.5}", "{\"type\":\"a\",\"region\":\"us\",\"n\":1.5}");
	}

	@Test
	void quotesAreEscapedInTheJsonNotSpliced() {
		assertThat(HeaderFilter.parse("\"x y\" = 'it''s \"q\"' and x-trace.id = '1'").documents())
			.containsExactly("{\"x y\":\"it's \\\"q\\\"\",\"x-trace.id\":\"1\"}");
	}

	@Test
	void blankIsNoFilter() {
		assertThat(HeaderFilter.parse("  ")).isNull();
		assertThat(HeaderFilter.parse(null)).isNull();
	}

	@Test
	void errorsSayWhatAndWhere() {
		assertThatIllegalArgumentException().isThrownBy(() -> HeaderFilter.parse("a = 'x", " of listener 'l'"))
			.withMessage("filter 'a = 'x' of listener 'l': unterminated string at its end");
		assertThatIllegalArgumentException().isThrownBy(() -> HeaderFilter.parse("a in ('x'"))
			.withMessage("filter 'a in ('x'': expected ')' at its end");
		assertThatIllegalArgumentException().isThrownBy(() -> HeaderFilter.parse("a like 'x'"))
			.withMessage("filter 'a like 'x'': expected '=' or 'in' after header 'a' at position 3");
		assertThatIllegalArgumentException().isThrownBy(() -> HeaderFilter.parse("= 'x'"))
			.withMessage("filter '= 'x'': expected a header name at position 1");
		assertThatIllegalArgumentException().isThrownBy(() -> HeaderFilter.parse("a = 1-2"))
			.withMessage("filter 'a = 1-2': '1-2' is not a number at position 5");
		String big = "a in (1,2,3,4,5,6,7,8,9,10,11,12,13,14,15,16,17) and b in (1,2,3,4,5,6,7,8,9,10,11,12,13,14,15,16)";
		assertThatIllegalArgumentException().isThrownBy(() -> HeaderFilter.parse(big))
			.withMessageEndingWith("its sets allow more than 256 combinations of values; use fewer values");
	}

}
