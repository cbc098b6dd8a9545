/**
 * The benchmark program: pgqueue side by side with the plain-SQL limit, the same protocol without
 * the framework, Spring Integration's JDBC channel store and db-queue, all on one embedded
 * PostgreSQL in one run, reported as ratios (see {@link io.github.pgqueue.benchmarks.BenchmarkMain}).
 */
package io.github.pgqueue.benchmarks;
