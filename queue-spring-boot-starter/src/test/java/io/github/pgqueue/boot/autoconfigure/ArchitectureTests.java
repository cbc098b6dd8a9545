package io.github.pgqueue.boot.autoconfigure;

import com.tngtech.archunit.core.domain.JavaClasses;
import com.tngtech.archunit.core.importer.ClassFileImporter;
import com.tngtech.archunit.core.importer.ImportOption;
import org.junit.jupiter.api.Test;

import static com.tngtech.archunit.lang.syntax.ArchRuleDefinition.noClasses;

/** Keeps Spring Boot out of the core and the core's internals out of everything else. */
class ArchitectureTests {

	private final JavaClasses classes = new ClassFileImporter()
		.withImportOption(ImportOption.Predefined.DO_NOT_INCLUDE_TESTS)
		.importPackages("io.github.pgqueue");

	@Test
	void coreDoesNotDependOnSpringBoot() {
		noClasses().that().resideInAnyPackage("io.github.pgqueue", "io.github.pgqueue.listener", "io.github.pgqueue.internal",
				"io.github.pgqueue.observation")
			.should().dependOnClassesThat().resideInAPackage("org.springframework.boot..")
			.check(this.classes);
	}

	@Test
	void onlyTheCoreUsesItsInternals() {
		noClasses().that().resideInAnyPackage("io.github.pgqueue.boot..", "io.github.pgqueue.annotation..")
			.should().dependOnClassesThat().resideInAPackage("io.github.pgqueue.internal..")
			.check(this.classes);
	}

}
