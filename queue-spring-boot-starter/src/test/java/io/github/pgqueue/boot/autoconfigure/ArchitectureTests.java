package io.github.pgqueue.boot.autoconfigure;

import com.tngtech.archunit.core.domain.JavaClasses;
import com.tngtech.archunit.core.importer.ClassFileImporter;
import com.tngtech.archunit.core.importer.ImportOption;
import org.junit.jupiter.api.Test;

import static com.tngtech.archunit.lang.syntax.ArchRuleDefinition.noClasses;

/** Keeps Spring Boot out of the core, the core's internals below its listeners, and out of everything else. */
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

	/**
	 * Dependencies run one way: the listener containers (poll loops, dispatch, notifications) use
	 * the internals (SQL, sessions, metrics), which know nothing of listeners or observations.
	 */
	@Test
	void theInternalsDoNotDependOnTheListenerContainersOrObservations() {
		noClasses().that().resideInAPackage("io.github.pgqueue.internal..")
			.should().dependOnClassesThat().resideInAnyPackage("io.github.pgqueue.listener..",
					"io.github.pgqueue.observation..")
			.check(this.classes);
	}

	@Test
	void onlyTheCoreUsesItsInternals() {
		noClasses().that().resideInAnyPackage("io.github.pgqueue.boot..", "io.github.pgqueue.annotation..")
			.should().dependOnClassesThat().resideInAPackage("io.github.pgqueue.internal..")
			.check(this.classes);
	}

}
