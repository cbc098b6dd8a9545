package io.github.pgqueue.stream.binder;

import com.tngtech.archunit.core.domain.JavaClasses;
import com.tngtech.archunit.core.importer.ClassFileImporter;
import com.tngtech.archunit.core.importer.ImportOption;
import org.junit.jupiter.api.Test;

import static com.tngtech.archunit.lang.syntax.ArchRuleDefinition.noClasses;

/** The binder is a user of pgqueue: it works through the public API only. */
class BinderArchitectureTests {

	private final JavaClasses binder = new ClassFileImporter()
		.withImportOption(ImportOption.Predefined.DO_NOT_INCLUDE_TESTS)
		.importPackages("io.github.pgqueue.stream");

	@Test
	void theBinderDoesNotUsePgQueuesInternals() {
		noClasses().should().dependOnClassesThat().resideInAPackage("io.github.pgqueue.internal..")
			.check(this.binder);
	}

}
