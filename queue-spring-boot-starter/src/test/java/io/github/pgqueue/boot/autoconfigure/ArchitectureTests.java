package io.github.pgqueue.boot.autoconfigure;

import com.tngtech.archunit.base.DescribedPredicate;
import com.tngtech.archunit.core.domain.JavaClass;
import com.tngtech.archunit.core.domain.JavaClasses;
import com.tngtech.archunit.core.importer.ClassFileImporter;
import com.tngtech.archunit.core.importer.ImportOption;
import io.github.pgqueue.QueueException;
import io.github.pgqueue.QueueNames;
import org.junit.jupiter.api.Test;

import static com.tngtech.archunit.base.DescribedPredicate.not;
import static com.tngtech.archunit.core.domain.JavaClass.Predicates.assignableTo;
import static com.tngtech.archunit.core.domain.JavaClass.Predicates.equivalentTo;
import static com.tngtech.archunit.core.domain.JavaClass.Predicates.resideInAPackage;
import static com.tngtech.archunit.core.domain.JavaClass.Predicates.resideOutsideOfPackage;
import static com.tngtech.archunit.lang.syntax.ArchRuleDefinition.classes;
import static com.tngtech.archunit.lang.syntax.ArchRuleDefinition.noClasses;

/**
 * Keeps Spring Boot out of the core, the core's internals below its listeners and its API, and out
 * of everything else.
 */
class ArchitectureTests {

	/**
	 * The API types the internals may use: the exceptions they throw and the name rules they
	 * apply. They depend on nothing else of pgqueue's, so the internals never reach back up to
	 * the templates, leases or listeners that use them.
	 */
	private static final DescribedPredicate<JavaClass> API_LEAVES = assignableTo(QueueException.class)
		.or(equivalentTo(QueueNames.class))
		.as("the API's leaf types (QueueException and its subclasses, QueueNames)");

	/**
	 * Production classes only: neither test folders nor the core's test jar, which this module's
	 * tests use and whose tests of the internals go through the API on purpose.
	 */
	private final JavaClasses classes = new ClassFileImporter()
		.withImportOption(ImportOption.Predefined.DO_NOT_INCLUDE_TESTS)
		.withImportOption((location) -> !location.contains("-tests.jar"))
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

	/**
	 * The API ({@code QueueTemplate}, {@code Lease}, {@code QueueAdmin}) uses the internals; the
	 * internals use only the API's leaf types, which use nothing of pgqueue's: no cycle between
	 * {@code io.github.pgqueue} and {@code io.github.pgqueue.internal}.
	 */
	@Test
	void theInternalsUseTheApiOnlyThroughItsLeafTypes() {
		noClasses().that().resideInAPackage("io.github.pgqueue.internal..")
			.should().dependOnClassesThat(resideInAPackage("io.github.pgqueue").and(not(API_LEAVES)))
			.check(this.classes);
	}

	@Test
	void theApiLeafTypesDependOnNothingElseOfPgqueue() {
		classes().that(API_LEAVES)
			.should().onlyDependOnClassesThat(resideOutsideOfPackage("io.github.pgqueue..").or(API_LEAVES))
			.check(this.classes);
	}

	@Test
	void onlyTheCoreUsesItsInternals() {
		noClasses().that().resideInAnyPackage("io.github.pgqueue.boot..", "io.github.pgqueue.annotation..")
			.should().dependOnClassesThat().resideInAPackage("io.github.pgqueue.internal..")
			.check(this.classes);
	}

}
