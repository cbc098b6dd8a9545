package io.github.pgqueue.sample;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.time.Duration;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicBoolean;

import io.github.pgqueue.QueueMessage;
import io.github.pgqueue.QueueTemplate;
import io.github.pgqueue.annotation.QueueListener;
import io.github.pgqueue.listener.QueueListenerEndpointRegistry;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.openqa.selenium.By;
import org.openqa.selenium.JavascriptExecutor;
import org.openqa.selenium.OutputType;
import org.openqa.selenium.StaleElementReferenceException;
import org.openqa.selenium.TakesScreenshot;
import org.openqa.selenium.WebDriver;
import org.openqa.selenium.chrome.ChromeDriver;
import org.openqa.selenium.chrome.ChromeDriverService;
import org.openqa.selenium.chrome.ChromeOptions;
import org.openqa.selenium.support.ui.WebDriverWait;

import org.springframework.boot.SpringApplication;
import org.springframework.boot.web.server.context.WebServerApplicationContext;
import org.springframework.context.ConfigurableApplicationContext;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

/**
 * The dashboard in a real browser: the operating system's headless Chromium driven by its
 * chromedriver (never a downloaded one), against the sample on an embedded PostgreSQL with the
 * dashboard read-write. Screenshots go to {@code target/dashboard-screenshots}.
 */
class DashboardBrowserTests {

	private static final Path CHROMIUM = Path.of("/usr/bin/chromium");

	private static final Path CHROMEDRIVER = Path.of("/usr/bin/chromedriver");

	private static final Path SCREENSHOTS = Path.of("target", "dashboard-screenshots");

	private static final String SCRIPT_PAYLOAD = "<script>window.pwned = true</script>";

	private static ConfigurableApplicationContext context;

	private static WebDriver browser;

	private static String base;

	private static final boolean BROWSER = Files.isExecutable(CHROMEDRIVER) && Files.isExecutable(CHROMIUM);

	@BeforeAll
	static void start() {
		if (!BROWSER) {
			return;
		}
		SpringApplication application = new SpringApplication(SampleApplication.class, FlakyListener.class);
		application.addListeners(new EmbeddedDatabaseStarter());
		context = application.run("--server.port=0", "--sample.traffic-enabled=false",
				"--pgqueue.dashboard.enabled=true", "--pgqueue.dashboard.read-only=false",
				"--pgqueue.queues.dashboard-test.max-attempts=1", "--pgqueue.queues.dashboard-idle.max-attempts=3");
		base = "http://localhost:" + ((WebServerApplicationContext) context).getWebServer().getPort();

		// The driver is named, so Selenium Manager never runs to find (or download) one.
		System.setProperty("webdriver.chrome.driver", CHROMEDRIVER.toString());
		ChromeDriverService service = new ChromeDriverService.Builder().usingDriverExecutable(CHROMEDRIVER.toFile())
			.usingAnyFreePort()
			.build();
		ChromeOptions options = new ChromeOptions().setBinary(CHROMIUM.toFile())
			.addArguments("--headless=new", "--no-sandbox", "--disable-dev-shm-usage", "--window-size=1400,1300");
		browser = new ChromeDriver(service, options);
	}

	@AfterAll
	static void stop() {
		try {
			if (browser != null) {
				browser.quit();
			}
		}
		finally {
			if (context != null) {
				context.close();
			}
		}
	}

	@Test
	void showsMessagesAndDeadLettersEscapedAndRedrivesADeadLetterFromThePage() throws IOException {
		assumeTrue(BROWSER, "Browser test skipped: no " + CHROMEDRIVER + " or " + CHROMIUM + ". Install the Debian "
				+ "packages (apt-get install -y chromium chromium-driver) and run ./mvnw -B verify again");
		QueueTemplate queues = context.getBean(QueueTemplate.class);
		long waiting = queues.send("dashboard-idle", Map.of("note", SCRIPT_PAYLOAD));
		FlakyListener.failing.set(true);
		long dead = queues.send("dashboard-test", Map.of("note", "fails once, then works"));
		await().atMost(Duration.ofSeconds(30)).until(() -> queues.stats("dashboard-test").deadLettered() == 1);

		browser.get(base + "/pgqueue");
		assertThat(browser.getCurrentUrl()).isEqualTo(base + "/pgqueue/");
		WebDriverWait wait = new WebDriverWait(browser, Duration.ofSeconds(20));
		wait.until((d) -> cellText("#queues-table tr[data-queue='dashboard-idle'] td:nth-child(2)").equals("1"));
		wait.until((d) -> !d.findElements(By.cssSelector("#dead-letters-table tr[data-id='" + dead + "']")).isEmpty());
		assertThat(cellText("#dead-letters-table tr[data-id='" + dead + "'] td:nth-child(3)")).isEqualTo("dashboard-test");
		assertThat(cellText("#dead-letters-table tr[data-id='" + dead + "'] td:nth-child(7)"))
			.contains("failing on purpose");
		assertThat(cellText("#listeners-table tr[data-id='dashboard-test'] td.state")).isEqualTo("running");

		click("a[data-queue='dashboard-idle']");
		wait.until((d) -> !d.findElements(By.cssSelector("#messages-table tr[data-id='" + waiting + "']")).isEmpty());
		assertThat(cellText("#messages-table tr[data-id='" + waiting + "'] pre")).contains(SCRIPT_PAYLOAD);
		assertThat(browser.findElements(By.cssSelector("main script"))).isEmpty();
		assertThat(((JavascriptExecutor) browser).executeScript("return window.pwned === undefined")).isEqualTo(true);
		screenshot("1-queue-and-dead-letter.png");

		FlakyListener.failing.set(false);
		click("#dead-letters-table tr[data-id='" + dead + "'] button");
		await().atMost(Duration.ofSeconds(30)).until(() -> FlakyListener.handled.contains(dead));
		wait.until((d) -> d.findElements(By.cssSelector("#dead-letters-table tr[data-id='" + dead + "']")).isEmpty());
		// Nothing else is processed in this test: the chart's first processed bar is the redriven message.
		wait.until((d) -> !d.findElements(By.cssSelector("#chart rect.processed")).isEmpty());
		assertThat(queues.stats("dashboard-test").deadLettered()).isZero();
		screenshot("2-redriven.png");

		click("#listeners-table tr[data-id='dashboard-test'] button");
		wait.until((d) -> cellText("#listeners-table tr[data-id='dashboard-test'] td.state").equals("paused"));
		assertThat(context.getBean(QueueListenerEndpointRegistry.class).getListenerContainer("dashboard-test").isPaused())
			.isTrue();
	}

	/** The text of the first match, read in one script call: the page redraws its tables every few seconds. */
	private static String cellText(String css) {
		Object text = ((JavascriptExecutor) browser)
			.executeScript("var e = document.querySelector(arguments[0]); return e ? e.textContent : '';", css);
		return String.valueOf(text);
	}

	/** Clicks the first match, again if the page redrew it between finding and clicking. */
	private static void click(String css) {
		new WebDriverWait(browser, Duration.ofSeconds(10)).ignoring(StaleElementReferenceException.class)
			.until((d) -> {
				d.findElement(By.cssSelector(css)).click();
				return true;
			});
	}

	private static void screenshot(String name) throws IOException {
		Files.createDirectories(SCREENSHOTS);
		Path taken = ((TakesScreenshot) browser).getScreenshotAs(OutputType.FILE).toPath();
		Files.copy(taken, SCREENSHOTS.resolve(name), StandardCopyOption.REPLACE_EXISTING);
	}

	/** Fails while {@link #failing} is set, so its first message is dead-lettered; remembers what it handled. */
	static class FlakyListener {

		static final AtomicBoolean failing = new AtomicBoolean();

		static final Set<Long> handled = ConcurrentHashMap.newKeySet();

		@QueueListener(queues = "dashboard-test", id = "dashboard-test")
		void on(QueueMessage<Map<String, Object>> message) {
			if (failing.get()) {
				throw new IllegalStateException("failing on purpose");
			}
			handled.add(message.id());
		}

	}

}
