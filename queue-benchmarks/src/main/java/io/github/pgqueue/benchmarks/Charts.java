package io.github.pgqueue.benchmarks;

import java.awt.BasicStroke;
import java.awt.Color;
import java.awt.Font;
import java.awt.Graphics2D;
import java.awt.geom.Line2D;
import java.awt.geom.Rectangle2D;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.text.DecimalFormat;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.function.Predicate;

import org.jfree.chart.ChartUtils;
import org.jfree.chart.JFreeChart;
import org.jfree.chart.StandardChartTheme;
import org.jfree.chart.axis.CategoryAxis;
import org.jfree.chart.axis.LogAxis;
import org.jfree.chart.axis.NumberAxis;
import org.jfree.chart.axis.NumberTickUnit;
import org.jfree.chart.axis.ValueAxis;
import org.jfree.chart.block.BlockBorder;
import org.jfree.chart.plot.CategoryPlot;
import org.jfree.chart.plot.PlotOrientation;
import org.jfree.chart.plot.ValueMarker;
import org.jfree.chart.renderer.category.BarRenderer;
import org.jfree.chart.renderer.category.CategoryItemRendererState;
import org.jfree.chart.renderer.category.StandardBarPainter;
import org.jfree.chart.title.LegendTitle;
import org.jfree.chart.title.TextTitle;
import org.jfree.chart.ui.Layer;
import org.jfree.chart.ui.RectangleEdge;
import org.jfree.chart.ui.RectangleInsets;
import org.jfree.chart.ui.TextAnchor;
import org.jfree.data.category.CategoryDataset;
import org.jfree.data.category.DefaultCategoryDataset;

/**
 * Draws a run's charts with JFreeChart as PNG files in {@code target/charts/}, beside the CSV:
 * {@code drain.png} (msgs/s by configuration and system: the median, with the range of the
 * repeated drains as a whisker), {@code send.png}, {@code steady-latency.png} and
 * {@code idle-latency.png} (p50 and p99 by system, log scale) and {@code pressure.png} (the rate out
 * by kind, phase and system, with the offered rate marked). A chart whose scenario has no rows is
 * not written; the charts of an earlier run are deleted when a run starts. The systems keep one
 * colour in every chart, in the order they first appear.
 */
final class Charts {

	static final String DIRECTORY = "charts";

	private static final int WIDTH = 1200;

	private static final int HEIGHT = 640;

	/** Colours for systems in order of appearance (Tableau 10, then two more). */
	private static final Color[] PALETTE = { new Color(0x4E79A7), new Color(0xF28E2B), new Color(0x59A14F),
			new Color(0x76B7B2), new Color(0xE15759), new Color(0xB07AA1), new Color(0xEDC948), new Color(0x9C755F),
			new Color(0xFF9DA7), new Color(0xBAB0AC), new Color(0x17BECF), new Color(0x8C564B) };

	private static final DecimalFormat RATE = new DecimalFormat("#,##0");

	private static final DecimalFormat MILLIS = new DecimalFormat("#,##0.###");

	private final Path directory;

	private final String subtitle;

	Charts(Path directory, String subtitle) {
		this.directory = directory.resolve(DIRECTORY);
		this.subtitle = subtitle;
	}

	/** Deletes the charts of an earlier run, so that the folder holds this run's alone. */
	void clear() {
		if (!Files.isDirectory(this.directory)) {
			return;
		}
		try (java.util.stream.Stream<Path> files = Files.list(this.directory)) {
			for (Path file : files.filter((path) -> path.toString().endsWith(".png")).toList()) {
				Files.delete(file);
			}
		}
		catch (IOException ex) {
			throw new UncheckedIOException("Could not clear " + this.directory, ex);
		}
	}

	void write(List<BenchRow> rows) {
		Map<String, Color> colours = colours(rows);
		drain(rows, colours);
		send(rows, colours);
		latency(rows, "steady", "steady-latency.png", "Steady load: latency, send commit to handler start", colours);
		latency(rows, "latency-idle", "idle-latency.png", "Idle queue: latency, send commit to handler start", colours);
		pressure(rows, colours);
	}

	private static Map<String, Color> colours(List<BenchRow> rows) {
		Map<String, Color> colours = new HashMap<>();
		for (BenchRow row : rows) {
			if (!colours.containsKey(row.system())) {
				colours.put(row.system(), PALETTE[colours.size() % PALETTE.length]);
			}
		}
		return colours;
	}

	/**
	 * Categories by consumers and batch size. A system with one batch size per consumer count (a
	 * peer that takes one message per claim) stands in every category of that count, its batch
	 * size in its legend.
	 */
	private void drain(List<BenchRow> rows, Map<String, Color> colours) {
		List<BenchRow> drains = select(rows, (row) -> row.scenario().equals("drain") && row.msgsPerSecond() != null);
		if (drains.isEmpty()) {
			return;
		}
		Map<String, Set<String>> batchesOf = new LinkedHashMap<>();
		Set<String> batches = new LinkedHashSet<>();
		for (BenchRow row : drains) {
			batchesOf.computeIfAbsent(row.system() + "/" + row.consumers(), (key) -> new LinkedHashSet<>()).add(row.batch());
		}
		for (BenchRow row : drains) {
			if (batchesOf.get(row.system() + "/" + row.consumers()).size() > 1) {
				batches.add(row.batch());
			}
		}
		DefaultCategoryDataset dataset = new DefaultCategoryDataset();
		Map<String, double[]> ranges = new HashMap<>();
		Map<String, String> series = new LinkedHashMap<>();
		for (BenchRow row : drains) {
			boolean single = batchesOf.get(row.system() + "/" + row.consumers()).size() == 1 && !batches.isEmpty();
			String name = single ? row.system() + " (batch " + row.batch() + ")" : row.system();
			series.put(name, row.system());
			for (String batch : single ? batches : Set.of(row.batch())) {
				String category = row.consumers() + ((row.consumers() == 1) ? " consumer" : " consumers") + ", batch "
						+ batch;
				dataset.addValue(row.msgsPerSecond(), name, category);
				String min = row.extra().get("min");
				String max = row.extra().get("max");
				if (min != null && max != null) {
					ranges.put(name + "|" + category, new double[] { Double.parseDouble(min), Double.parseDouble(max) });
				}
			}
		}
		boolean repeated = !ranges.isEmpty();
		JFreeChart chart = bars("Drain: messages per second" + (repeated ? " (median; whiskers: range of the runs)" : ""),
				"msgs/s", dataset, new NumberAxis(), series, colours, ranges);
		save(chart, "drain.png");
	}

	private void send(List<BenchRow> rows, Map<String, Color> colours) {
		List<BenchRow> sends = select(rows, (row) -> (row.scenario().equals("send") || row.scenario().equals("send-batch"))
				&& row.msgsPerSecond() != null);
		if (sends.isEmpty()) {
			return;
		}
		DefaultCategoryDataset dataset = new DefaultCategoryDataset();
		Map<String, String> series = new LinkedHashMap<>();
		for (BenchRow row : sends) {
			String category = row.scenario().equals("send")
					? "single sends, " + row.consumers() + ((row.consumers() == 1) ? " thread" : " threads")
					: "batches of " + row.batch() + ", " + row.consumers() + ((row.consumers() == 1) ? " thread" : " threads");
			dataset.addValue(row.msgsPerSecond(), row.system(), category);
			series.put(row.system(), row.system());
		}
		save(bars("Send: messages per second", "msgs/s", dataset, new NumberAxis(), series, colours, Map.of()),
				"send.png");
	}

	/** p50 and p99 by system, on a log scale: the systems' latencies lie decades apart. */
	private void latency(List<BenchRow> rows, String scenario, String file, String title, Map<String, Color> colours) {
		List<BenchRow> selected = select(rows, (row) -> row.scenario().equals(scenario) && row.p50Millis() != null);
		if (selected.isEmpty()) {
			return;
		}
		DefaultCategoryDataset dataset = new DefaultCategoryDataset();
		Map<String, String> series = new LinkedHashMap<>();
		double smallest = Double.MAX_VALUE;
		double largest = 0;
		for (BenchRow row : selected) {
			dataset.addValue(row.p50Millis(), "p50", row.system());
			dataset.addValue(row.p99Millis(), "p99", row.system());
			smallest = Math.min(smallest, Math.max(0.01, row.p50Millis()));
			largest = Math.max(largest, (row.p99Millis() != null) ? row.p99Millis() : row.p50Millis());
		}
		series.put("p50", "p50");
		series.put("p99", "p99");
		Map<String, Color> shades = Map.of("p50", PALETTE[0], "p99", PALETTE[1]);
		// Whole decades from below the fastest p50 to above the slowest p99, one tick each.
		double lower = Math.pow(10, Math.floor(Math.log10(smallest)));
		double upper = Math.pow(10, Math.ceil(Math.log10(Math.max(largest, lower * 10))));
		LogAxis axis = new LogAxis();
		axis.setBase(10);
		axis.setSmallestValue(lower);
		axis.setNumberFormatOverride(MILLIS);
		axis.setRange(lower * 0.999, upper * 1.001); // the end decades keep their ticks
		axis.setTickUnit(new NumberTickUnit(1));
		JFreeChart chart = bars(title, "ms (log scale)", dataset, axis, series, shades, Map.of());
		((BarRenderer) chart.getCategoryPlot().getRenderer()).setBase(lower);
		save(chart, file);
	}

	private void pressure(List<BenchRow> rows, Map<String, Color> colours) {
		List<BenchRow> selected = select(rows, (row) -> row.scenario().startsWith("pressure-") && row.msgsPerSecond() != null);
		if (selected.isEmpty()) {
			return;
		}
		DefaultCategoryDataset dataset = new DefaultCategoryDataset();
		Map<String, String> series = new LinkedHashMap<>();
		Double offered = null;
		for (BenchRow row : selected) {
			String category = row.scenario().substring("pressure-".length()) + "\n" + row.extra().get("phase");
			dataset.addValue(row.msgsPerSecond(), row.system(), category);
			series.put(row.system(), row.system());
			if (offered == null && "baseline".equals(row.extra().get("phase"))) {
				offered = Double.valueOf(row.extra().get("target_in_msgs_per_s"));
			}
		}
		JFreeChart chart = bars("Under pressure: messages handled per second, by phase", "msgs/s out", dataset,
				new NumberAxis(), series, colours, Map.of());
		if (offered != null && offered > 0) {
			ValueMarker marker = new ValueMarker(offered, Color.DARK_GRAY, new BasicStroke(1.5f, BasicStroke.CAP_BUTT,
					BasicStroke.JOIN_MITER, 10, new float[] { 6, 4 }, 0));
			marker.setLabel("offered: " + RATE.format(offered) + " msg/s ("
					+ RATE.format(offered * PressureScenario.HIGH_LOAD_FACTOR) + " in the stress phase of high-load)");
			marker.setLabelFont(new Font(Font.SANS_SERIF, Font.PLAIN, 14));
			marker.setLabelAnchor(org.jfree.chart.ui.RectangleAnchor.TOP_RIGHT);
			marker.setLabelTextAnchor(TextAnchor.BOTTOM_RIGHT);
			chart.getCategoryPlot().addRangeMarker(marker, Layer.FOREGROUND);
		}
		save(chart, "pressure.png");
	}

	private static List<BenchRow> select(List<BenchRow> rows, Predicate<BenchRow> filter) {
		return rows.stream().filter(filter).toList();
	}

	/**
	 * A grouped bar chart: {@code series} maps each series of {@code dataset} to the key of its
	 * colour; {@code ranges} holds whiskers by {@code series|category}.
	 */
	private JFreeChart bars(String title, String valueLabel, DefaultCategoryDataset dataset, ValueAxis valueAxis,
			Map<String, String> series, Map<String, Color> colours, Map<String, double[]> ranges) {
		CategoryAxis categories = new CategoryAxis();
		valueAxis.setLabel(valueLabel);
		if (valueAxis instanceof NumberAxis numbers) {
			numbers.setNumberFormatOverride(RATE);
			numbers.setAutoRangeIncludesZero(true);
		}
		RangeBarRenderer renderer = new RangeBarRenderer(ranges);
		CategoryPlot plot = new CategoryPlot(dataset, categories, valueAxis, renderer);
		plot.setOrientation(PlotOrientation.VERTICAL);
		JFreeChart chart = new JFreeChart(title, new Font(Font.SANS_SERIF, Font.BOLD, 22), plot, true);
		theme().apply(chart);
		chart.addSubtitle(new TextTitle(this.subtitle, new Font(Font.SANS_SERIF, Font.PLAIN, 15)));
		chart.setBackgroundPaint(Color.WHITE);
		plot.setBackgroundPaint(Color.WHITE);
		plot.setRangeGridlinePaint(new Color(0xCCCCCC));
		plot.setRangeGridlinesVisible(true);
		plot.setOutlineVisible(false);
		categories.setMaximumCategoryLabelLines(3);
		categories.setCategoryMargin(0.15);
		renderer.setBarPainter(new StandardBarPainter());
		renderer.setShadowVisible(false);
		renderer.setDrawBarOutline(false);
		renderer.setItemMargin(0.04);
		renderer.setMaximumBarWidth(0.06);
		List<String> names = new ArrayList<>(series.keySet());
		for (int i = 0; i < dataset.getRowCount(); i++) {
			String name = (String) dataset.getRowKey(i);
			Color colour = colours.get(series.getOrDefault(name, name));
			renderer.setSeriesPaint(i, (colour != null) ? colour : PALETTE[names.indexOf(name) % PALETTE.length]);
		}
		LegendTitle legend = chart.getLegend();
		legend.setPosition(RectangleEdge.BOTTOM);
		legend.setFrame(BlockBorder.NONE);
		legend.setItemFont(new Font(Font.SANS_SERIF, Font.PLAIN, 15));
		legend.setItemLabelPadding(new RectangleInsets(2, 4, 2, 14));
		return chart;
	}

	private static StandardChartTheme theme() {
		StandardChartTheme theme = (StandardChartTheme) StandardChartTheme.createJFreeTheme();
		theme.setExtraLargeFont(new Font(Font.SANS_SERIF, Font.BOLD, 22));
		theme.setLargeFont(new Font(Font.SANS_SERIF, Font.PLAIN, 17));
		theme.setRegularFont(new Font(Font.SANS_SERIF, Font.PLAIN, 15));
		theme.setSmallFont(new Font(Font.SANS_SERIF, Font.PLAIN, 13));
		return theme;
	}

	private void save(JFreeChart chart, String file) {
		try {
			Files.createDirectories(this.directory);
			ChartUtils.saveChartAsPNG(this.directory.resolve(file).toFile(), chart, WIDTH, HEIGHT);
		}
		catch (IOException ex) {
			throw new UncheckedIOException("Could not write chart " + file, ex);
		}
	}

	/** Bars with a whisker from the lowest to the highest of repeated runs, where there were any. */
	private static final class RangeBarRenderer extends BarRenderer {

		private static final long serialVersionUID = 1L;

		private final transient Map<String, double[]> ranges;

		RangeBarRenderer(Map<String, double[]> ranges) {
			this.ranges = ranges;
		}

		@Override
		public void drawItem(Graphics2D g2, CategoryItemRendererState state, Rectangle2D dataArea, CategoryPlot plot,
				CategoryAxis domainAxis, ValueAxis rangeAxis, CategoryDataset dataset, int row, int column, int pass) {
			super.drawItem(g2, state, dataArea, plot, domainAxis, rangeAxis, dataset, row, column, pass);
			double[] range = this.ranges.get(dataset.getRowKey(row) + "|" + dataset.getColumnKey(column));
			if (range == null || dataset.getValue(row, column) == null) {
				return;
			}
			double x = calculateBarW0(plot, plot.getOrientation(), dataArea, domainAxis, state, row, column)
					+ state.getBarWidth() / 2;
			double low = rangeAxis.valueToJava2D(range[0], dataArea, plot.getRangeAxisEdge());
			double high = rangeAxis.valueToJava2D(range[1], dataArea, plot.getRangeAxisEdge());
			double cap = Math.max(2, state.getBarWidth() / 4);
			g2.setPaint(Color.BLACK);
			g2.setStroke(new BasicStroke(1.5f));
			g2.draw(new Line2D.Double(x, low, x, high));
			g2.draw(new Line2D.Double(x - cap, low, x + cap, low));
			g2.draw(new Line2D.Double(x - cap, high, x + cap, high));
		}

	}

}
