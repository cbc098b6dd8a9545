package io.github.pgqueue.reliability;

import java.awt.BasicStroke;
import java.awt.Color;
import java.awt.Font;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import java.util.function.ToDoubleFunction;

import org.jfree.chart.ChartUtils;
import org.jfree.chart.JFreeChart;
import org.jfree.chart.axis.NumberAxis;
import org.jfree.chart.plot.CombinedDomainXYPlot;
import org.jfree.chart.plot.ValueMarker;
import org.jfree.chart.plot.XYPlot;
import org.jfree.chart.renderer.xy.XYLineAndShapeRenderer;
import org.jfree.chart.title.TextTitle;
import org.jfree.chart.ui.RectangleAnchor;
import org.jfree.chart.ui.TextAnchor;
import org.jfree.data.xy.XYSeries;
import org.jfree.data.xy.XYSeriesCollection;

/**
 * Draws a soak's samples with JFreeChart as one PNG: the consumers' heap after a full collection,
 * the sizes of pgqueue's message table, its indexes and its whole schema, and the backlog of each
 * queue, over the minutes of the run, with each fault of the rotation marked.
 */
final class SoakChart {

	private static final Color[] PALETTE = { new Color(0x4E79A7), new Color(0xF28E2B), new Color(0x59A14F),
			new Color(0xE15759), new Color(0x76B7B2), new Color(0xB07AA1) };

	private static final Map<String, Color> FAULT_COLOURS = Map.of("kill-9", new Color(0xE15759), "pg_terminate_backend",
			new Color(0xF28E2B), "postgres-restart", new Color(0x4E79A7), "partition", new Color(0xB07AA1));

	private SoakChart() {
	}

	/** Writes the chart of {@code samples} into {@code file}. */
	static void write(SoakSamples samples, String title, Path file) {
		System.setProperty("java.awt.headless", "true");
		List<SoakSamples.Sample> all = samples.samples();
		if (all.isEmpty()) {
			throw new IllegalStateException("The soak took no sample: no chart to draw into " + file);
		}
		XYSeriesCollection heap = new XYSeriesCollection();
		for (String slot : all.get(0).heap().keySet()) {
			heap.addSeries(series("heap of " + slot, all, (sample) -> sample.heap().get(slot)));
		}
		XYSeriesCollection sizes = new XYSeriesCollection();
		sizes.addSeries(series("message table", all, SoakSamples.Sample::messageTable));
		sizes.addSeries(series("message indexes", all, SoakSamples.Sample::messageIndexes));
		sizes.addSeries(series("pgqueue schema, all", all, SoakSamples.Sample::schemaTotal));
		XYSeriesCollection backlog = new XYSeriesCollection();
		for (String queue : all.get(0).backlog().keySet()) {
			backlog.addSeries(series("backlog of " + queue, all, (sample) -> sample.backlog().get(queue)));
		}
		NumberAxis minutes = new NumberAxis("minutes since the load started");
		CombinedDomainXYPlot plot = new CombinedDomainXYPlot(minutes);
		plot.setGap(12);
		plot.add(subplot(heap, "heap after GC (MB)", 0), 3);
		plot.add(subplot(sizes, "size (MB)", heap.getSeriesCount()), 3);
		plot.add(subplot(backlog, "messages", heap.getSeriesCount() + sizes.getSeriesCount()), 2);
		boolean labelled = false;
		for (SoakSamples.FaultMark fault : samples.faults()) {
			for (Object subplot : plot.getSubplots()) {
				ValueMarker marker = new ValueMarker(fault.minutes(), FAULT_COLOURS.getOrDefault(fault.fault(), Color.GRAY),
						new BasicStroke(1.2f, BasicStroke.CAP_BUTT, BasicStroke.JOIN_MITER, 10, new float[] { 4, 3 }, 0));
				if (!labelled) {
					marker.setLabel(fault.fault());
					marker.setLabelFont(new Font(Font.SANS_SERIF, Font.PLAIN, 9));
					marker.setLabelAnchor(RectangleAnchor.TOP_RIGHT);
					marker.setLabelTextAnchor(TextAnchor.TOP_LEFT);
				}
				labelled = true;
				((XYPlot) subplot).addDomainMarker(marker);
			}
			labelled = false;
		}
		JFreeChart chart = new JFreeChart(title, new Font(Font.SANS_SERIF, Font.BOLD, 16), plot, true);
		chart.addSubtitle(new TextTitle("dashed lines: faults (red kill -9, orange pg_terminate_backend, "
				+ "blue PostgreSQL restart, purple partition)", new Font(Font.SANS_SERIF, Font.PLAIN, 11)));
		chart.setBackgroundPaint(Color.WHITE);
		try {
			Files.createDirectories(file.getParent());
			ChartUtils.saveChartAsPNG(file.toFile(), chart, 1200, 900);
		}
		catch (IOException ex) {
			throw new UncheckedIOException("Could not write the soak's chart " + file, ex);
		}
	}

	private static XYSeries series(String name, List<SoakSamples.Sample> samples, ToDoubleFunction<SoakSamples.Sample> value) {
		XYSeries series = new XYSeries(name, false, true);
		for (SoakSamples.Sample sample : samples) {
			double y = value.applyAsDouble(sample);
			if (!Double.isNaN(y)) {
				series.add(sample.minutes(), y);
			}
		}
		return series;
	}

	private static XYPlot subplot(XYSeriesCollection data, String label, int firstColour) {
		NumberAxis axis = new NumberAxis(label);
		axis.setAutoRangeIncludesZero(true);
		XYLineAndShapeRenderer renderer = new XYLineAndShapeRenderer(true, true);
		for (int i = 0; i < data.getSeriesCount(); i++) {
			renderer.setSeriesPaint(i, PALETTE[(firstColour + i) % PALETTE.length]);
			renderer.setSeriesStroke(i, new BasicStroke(2f));
		}
		XYPlot plot = new XYPlot(data, null, axis, renderer);
		plot.setBackgroundPaint(Color.WHITE);
		plot.setDomainGridlinePaint(new Color(0xDDDDDD));
		plot.setRangeGridlinePaint(new Color(0xDDDDDD));
		return plot;
	}

}
