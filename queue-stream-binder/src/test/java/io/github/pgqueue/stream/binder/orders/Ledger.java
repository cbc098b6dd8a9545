package io.github.pgqueue.stream.binder.orders;

import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;

/** What the sample application's ledger recorded: each customer's invoices in the order they arrived. */
public class Ledger {

	private final Map<String, List<Invoice>> byCustomer = new ConcurrentHashMap<>();

	void record(Invoice invoice) {
		List<Invoice> invoices = this.byCustomer.computeIfAbsent(invoice.customer(), (c) -> new ArrayList<>());
		synchronized (invoices) {
			invoices.add(invoice);
		}
	}

	/** Each customer's invoices, in arrival order. */
	public Map<String, List<Invoice>> byCustomer() {
		Map<String, List<Invoice>> copy = new java.util.TreeMap<>();
		this.byCustomer.forEach((customer, invoices) -> {
			synchronized (invoices) {
				copy.put(customer, List.copyOf(invoices));
			}
		});
		return copy;
	}

	/** How many invoices were recorded. */
	public int size() {
		return this.byCustomer.values().stream().mapToInt(List::size).sum();
	}

}
