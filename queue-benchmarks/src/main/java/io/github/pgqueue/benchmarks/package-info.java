/**
 * The benchmark program: pgqueue side by side with the plain-SQL limit, the same protocol without
 * the framework, Spring Integration's JDBC channel store, db-queue, and pg-boss and graphile-worker
 * (in Node programs of their own, see {@link io.github.pgqueue.benchmarks.NodePeers}), all on one embedded
 * PostgreSQL in one run, reported as ratios (see {@link io.github.pgqueue.benchmarks.BenchmarkMain}).
 */
package io.github.pgqueue.benchmarks;
