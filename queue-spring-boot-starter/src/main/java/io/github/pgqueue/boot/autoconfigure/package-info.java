/**
 * Spring Boot auto-configuration of pgqueue: properties, migrations, the template, listener connections, health and metrics.
 */
package io.github.pgqueue.boot.autoconfigure;
