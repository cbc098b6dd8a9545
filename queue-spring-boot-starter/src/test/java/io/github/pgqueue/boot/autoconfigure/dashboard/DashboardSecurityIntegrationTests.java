package io.github.pgqueue.boot.autoconfigure.dashboard;

import com.jayway.jsonpath.JsonPath;
import io.github.pgqueue.QueueTemplate;
import io.github.pgqueue.boot.autoconfigure.PgQueueAutoConfiguration;
import io.github.pgqueue.testing.EmbeddedPostgres;
import io.github.pgqueue.testing.PostgresExtension;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;

import org.springframework.boot.autoconfigure.AutoConfigurations;
import org.springframework.boot.jdbc.autoconfigure.DataSourceAutoConfiguration;
import org.springframework.boot.test.context.runner.WebApplicationContextRunner;
import org.springframework.boot.test.system.CapturedOutput;
import org.springframework.boot.test.system.OutputCaptureExtension;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Configuration;
import org.springframework.http.MediaType;
import org.springframework.mock.web.MockHttpSession;
import org.springframework.security.config.Customizer;
import org.springframework.security.config.annotation.web.builders.HttpSecurity;
import org.springframework.security.config.annotation.web.configuration.EnableWebSecurity;
import org.springframework.security.config.annotation.web.configurers.AbstractHttpConfigurer;
import org.springframework.security.web.SecurityFilterChain;
import org.springframework.test.web.servlet.MockMvc;
import org.springframework.test.web.servlet.setup.MockMvcBuilders;
import org.springframework.web.context.WebApplicationContext;
import org.springframework.web.servlet.config.annotation.EnableWebMvc;

import static org.assertj.core.api.Assertions.assertThat;
import static org.springframework.security.test.web.servlet.request.SecurityMockMvcRequestPostProcessors.csrf;
import static org.springframework.security.test.web.servlet.request.SecurityMockMvcRequestPostProcessors.user;
import static org.springframework.security.test.web.servlet.setup.SecurityMockMvcConfigurers.springSecurity;
import static org.springframework.test.web.servlet.request.MockMvcRequestBuilders.get;
import static org.springframework.test.web.servlet.request.MockMvcRequestBuilders.post;
import static org.springframework.test.web.servlet.result.MockMvcResultMatchers.content;
import static org.springframework.test.web.servlet.result.MockMvcResultMatchers.jsonPath;
import static org.springframework.test.web.servlet.result.MockMvcResultMatchers.status;

/**
 * The dashboard behind the application's Spring Security filter chain: a signed-in user with the
 * role, CSRF tokens on writes, and every write logged with the user.
 */
@ExtendWith({ PostgresExtension.class, OutputCaptureExtension.class })
class DashboardSecurityIntegrationTests {

	private final EmbeddedPostgres postgres = EmbeddedPostgres.get();

	private final WebApplicationContextRunner runner = new WebApplicationContextRunner()
		.withConfiguration(AutoConfigurations.of(DataSourceAutoConfiguration.class, PgQueueAutoConfiguration.class,
				PgQueueDashboardAutoConfiguration.class))
		.withPropertyValues("spring.datasource.url=" + this.postgres.jdbcUrl(),
				"spring.datasource.username=" + this.postgres.username(), "pgqueue.dashboard.enabled=true",
				"pgqueue.dashboard.read-only=false", "pgqueue.queues.secured.max-attempts=3");

	@Test
	void onlyUsersWithTheRoleGetInAndWritesNeedTheCsrfToken(CapturedOutput output) {
		this.runner.withUserConfiguration(SecuredApplication.class).run((context) -> {
			MockMvc mvc = mvc(context);
			long id = context.getBean(QueueTemplate.class).send("secured", "x");

			mvc.perform(get("/pgqueue/api/queues")).andExpect(status().isUnauthorized());
			mvc.perform(get("/pgqueue/api/queues").with(user("bob").roles("USER")))
				.andExpect(status().isForbidden())
				.andExpect(jsonPath("$.error").value("The pgqueue dashboard needs role PGQUEUE_ADMIN"));
			mvc.perform(get("/pgqueue/api/session").with(user("alice").roles("PGQUEUE_ADMIN")))
				.andExpect(status().isOk())
				.andExpect(jsonPath("$.user").value("alice"))
				.andExpect(jsonPath("$.csrf.headerName").value("X-CSRF-TOKEN"))
				.andExpect(jsonPath("$.csrf.token").isNotEmpty());

			mvc.perform(post("/pgqueue/api/queue/cancel").param("name", "secured").param("id", String.valueOf(id))
				.with(user("alice").roles("PGQUEUE_ADMIN"))
				.with(DashboardWrites.fromThePage())).andExpect(status().isForbidden());
			assertThat(context.getBean(QueueTemplate.class).stats("secured").ready()).isOne();
			mvc.perform(post("/pgqueue/api/queue/cancel").param("name", "secured").param("id", String.valueOf(id))
				.with(user("alice").roles("PGQUEUE_ADMIN"))
				.with(DashboardWrites.fromThePage())
				.with(csrf().asHeader())).andExpect(status().isOk()).andExpect(jsonPath("$.result").value("REMOVED"));
			assertThat(context.getBean(QueueTemplate.class).stats("secured").ready()).isZero();
			assertThat(output).contains("pgqueue dashboard: alice cancelled message " + id + " of queue 'secured': REMOVED");
		});
	}

	@Test
	void writesAreRefusedWhereTheApplicationTurnedCsrfProtectionOff() {
		this.runner.withUserConfiguration(NoCsrfApplication.class).run((context) -> {
			MockMvc mvc = mvc(context);
			long id = context.getBean(QueueTemplate.class).send("secured", "y");
			mvc.perform(post("/pgqueue/api/queue/cancel").param("name", "secured").param("id", String.valueOf(id))
				.with(user("alice").roles("PGQUEUE_ADMIN"))
				.with(DashboardWrites.fromThePage()))
				.andExpect(status().isForbidden())
				.andExpect(content().string(org.hamcrest.Matchers.containsString("CSRF protection is off")));
			assertThat(context.getBean(QueueTemplate.class).stats("secured").ready()).isOne();
			mvc.perform(get("/pgqueue/api/queues").with(user("alice").roles("PGQUEUE_ADMIN"))).andExpect(status().isOk());
		});
	}

	@Test
	void writesNeedTheCsrfTokenWhereTheApplicationExcludedThePathFromCsrfProtection() {
		this.runner.withUserConfiguration(CsrfIgnoredForDashboardApplication.class).run((context) -> {
			MockMvc mvc = mvc(context);
			QueueTemplate queues = context.getBean(QueueTemplate.class);
			long id = queues.send("secured", "z");
			mvc.perform(post("/pgqueue/api/queue/cancel").param("name", "secured").param("id", String.valueOf(id))
				.with(user("alice").roles("PGQUEUE_ADMIN"))
				.with(DashboardWrites.fromThePage()))
				.andExpect(status().isForbidden())
				.andExpect(jsonPath("$.error").value(org.hamcrest.Matchers.containsString("CSRF token")));
			mvc.perform(post("/pgqueue/api/queue/cancel").param("name", "secured").param("id", String.valueOf(id))
				.with(user("alice").roles("PGQUEUE_ADMIN"))
				.with(DashboardWrites.fromThePage())
				.header("X-CSRF-TOKEN", "forged"))
				.andExpect(status().isForbidden());
			assertThat(queues.stats("secured").ready()).isOne();

			// As the page does it: the token from api/session, sent back in the header it names.
			MockHttpSession session = new MockHttpSession();
			String sessionJson = mvc.perform(get("/pgqueue/api/session").session(session)
				.with(user("alice").roles("PGQUEUE_ADMIN"))).andExpect(status().isOk())
				.andReturn().getResponse().getContentAsString();
			String token = JsonPath.read(sessionJson, "$.csrf.token");
			mvc.perform(post("/pgqueue/api/queue/cancel").param("name", "secured").param("id", String.valueOf(id))
				.session(session)
				.with(user("alice").roles("PGQUEUE_ADMIN"))
				.with(DashboardWrites.fromThePage())
				.header("X-CSRF-TOKEN", token)).andExpect(status().isOk()).andExpect(jsonPath("$.result").value("REMOVED"));
			assertThat(queues.stats("secured").ready()).isZero();
		});
	}

	@Test
	void aSignedInFormPostWithTheCsrfTokenButWithoutTheDashboardHeaderIsRefused() {
		this.runner.withUserConfiguration(SecuredApplication.class).run((context) -> {
			MockMvc mvc = mvc(context);
			QueueTemplate queues = context.getBean(QueueTemplate.class);
			long id = queues.send("secured", "w");
			mvc.perform(post("/pgqueue/api/queue/cancel").contentType(MediaType.APPLICATION_FORM_URLENCODED)
				.content("name=secured&id=" + id)
				.with(user("alice").roles("PGQUEUE_ADMIN"))
				.with(csrf())).andExpect(status().isForbidden());
			assertThat(queues.stats("secured").ready()).isOne();
		});
	}

	private static MockMvc mvc(WebApplicationContext context) {
		return MockMvcBuilders.webAppContextSetup(context).apply(springSecurity()).build();
	}

	@Configuration(proxyBeanMethods = false)
	@EnableWebMvc
	@EnableWebSecurity
	static class SecuredApplication {

		@Bean
		SecurityFilterChain securityFilterChain(HttpSecurity http) throws Exception {
			return http.authorizeHttpRequests((requests) -> requests.anyRequest().authenticated())
				.httpBasic(Customizer.withDefaults())
				.build();
		}

	}

	@Configuration(proxyBeanMethods = false)
	@EnableWebMvc
	@EnableWebSecurity
	static class CsrfIgnoredForDashboardApplication {

		@Bean
		SecurityFilterChain securityFilterChain(HttpSecurity http) throws Exception {
			return http.authorizeHttpRequests((requests) -> requests.anyRequest().authenticated())
				.httpBasic(Customizer.withDefaults())
				.csrf((csrf) -> csrf.ignoringRequestMatchers("/pgqueue/**"))
				.build();
		}

	}

	@Configuration(proxyBeanMethods = false)
	@EnableWebMvc
	@EnableWebSecurity
	static class NoCsrfApplication {

		@Bean
		SecurityFilterChain securityFilterChain(HttpSecurity http) throws Exception {
			return http.authorizeHttpRequests((requests) -> requests.anyRequest().authenticated())
				.httpBasic(Customizer.withDefaults())
				.csrf(AbstractHttpConfigurer::disable)
				.build();
		}

	}

}
