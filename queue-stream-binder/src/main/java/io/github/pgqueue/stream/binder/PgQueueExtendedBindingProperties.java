package io.github.pgqueue.stream.binder;

import java.util.Map;

import org.springframework.boot.context.properties.ConfigurationProperties;
import org.springframework.boot.context.properties.NestedConfigurationProperty;
import org.springframework.cloud.stream.binder.AbstractExtendedBindingProperties;
import org.springframework.cloud.stream.binder.BinderSpecificPropertiesProvider;

/**
 * The pgqueue settings of every binding, {@code spring.cloud.stream.pgqueue.bindings.<name>.*},
 * and their defaults, {@code spring.cloud.stream.pgqueue.default.*}. A property pgqueue does not
 * know fails startup, naming it, rather than being ignored.
 */
@ConfigurationProperties(prefix = PgQueueExtendedBindingProperties.PREFIX, ignoreUnknownFields = false)
public class PgQueueExtendedBindingProperties
		extends AbstractExtendedBindingProperties<PgQueueConsumerProperties, PgQueueProducerProperties, PgQueueBindingProperties> {

	/** Where the settings are. */
	public static final String PREFIX = "spring.cloud.stream.pgqueue";

	private static final String DEFAULTS_PREFIX = PREFIX + ".default";

	/** Settings every binding starts from. */
	private PgQueueBindingProperties defaults = new PgQueueBindingProperties();

	@Override
	public String getDefaultsPrefix() {
		return DEFAULTS_PREFIX;
	}

	@Override
	public Map<String, PgQueueBindingProperties> getBindings() {
		return doGetBindings();
	}

	@Override
	public Class<? extends BinderSpecificPropertiesProvider> getExtendedPropertiesEntryClass() {
		return PgQueueBindingProperties.class;
	}

	/**
	 * The defaults, bound here so that an unknown name under {@code default} fails as one under
	 * {@code bindings} does; Spring Cloud Stream applies them to each binding.
	 */
	@NestedConfigurationProperty
	public PgQueueBindingProperties getDefault() {
		return this.defaults;
	}

	public void setDefault(PgQueueBindingProperties defaults) {
		this.defaults = defaults;
	}

}
