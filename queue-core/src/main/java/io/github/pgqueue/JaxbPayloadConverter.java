package io.github.pgqueue;

import java.io.StringReader;
import java.io.StringWriter;
import java.lang.reflect.Type;
import java.util.Map;
import java.util.Objects;
import java.util.concurrent.ConcurrentHashMap;

import javax.xml.stream.XMLInputFactory;
import javax.xml.stream.XMLStreamException;
import javax.xml.stream.XMLStreamReader;

import jakarta.xml.bind.JAXBContext;
import jakarta.xml.bind.JAXBException;
import jakarta.xml.bind.Marshaller;
import jakarta.xml.bind.annotation.XmlRootElement;

/**
 * A {@link PayloadConverter} that writes payloads whose class is annotated with
 * {@link XmlRootElement} as {@value PayloadConverter#APPLICATION_XML} bodies with JAXB, reads XML
 * bodies into JAXB classes (or as a {@code String}, the document's text), and leaves everything
 * else to the converter it wraps, the JSON one. XML is parsed without DTDs or external entities.
 * Needs a JAXB implementation on the classpath (for example {@code org.glassfish.jaxb:jaxb-runtime}).
 */
public final class JaxbPayloadConverter implements PayloadConverter {

	private final PayloadConverter delegate;

	private final Map<Class<?>, JAXBContext> contexts = new ConcurrentHashMap<>();

	private final XMLInputFactory inputFactory;

	/** Adds XML to {@code delegate}, which converts every payload and body that is not XML. */
	public JaxbPayloadConverter(PayloadConverter delegate) {
		this.delegate = Objects.requireNonNull(delegate, "Delegate PayloadConverter must not be null");
		this.inputFactory = XMLInputFactory.newFactory();
		this.inputFactory.setProperty(XMLInputFactory.SUPPORT_DTD, false);
		this.inputFactory.setProperty(XMLInputFactory.IS_SUPPORTING_EXTERNAL_ENTITIES, false);
	}

	/** Whether payloads of {@code type} are written as XML: it is annotated with {@link XmlRootElement}. */
	public static boolean isXmlMapped(Class<?> type) {
		return type.isAnnotationPresent(XmlRootElement.class);
	}

	@Override
	public String contentType(Object payload) {
		return isXmlMapped(payload.getClass()) ? APPLICATION_XML : this.delegate.contentType(payload);
	}

	@Override
	public String write(Object payload) {
		if (payload == null || !isXmlMapped(payload.getClass())) {
			return this.delegate.write(payload);
		}
		StringWriter xml = new StringWriter();
		try {
			Marshaller marshaller = context(payload.getClass()).createMarshaller();
			marshaller.setProperty(Marshaller.JAXB_FRAGMENT, true); // no XML declaration: the body is the element
			marshaller.marshal(payload, xml);
		}
		catch (JAXBException ex) {
			throw new PayloadConversionException("Cannot write payload of type " + payload.getClass().getName()
					+ " as XML: " + describe(ex), ex);
		}
		return TextBodies.toJson(xml.toString());
	}

	@Override
	public Object read(String json, Type type) {
		return this.delegate.read(json, type);
	}

	@Override
	public Object read(String json, Type type, String contentType) {
		if (!TextBodies.isXml(contentType)) {
			return this.delegate.read(json, type, contentType);
		}
		String xml = TextBodies.fromJson(json, contentType);
		if (type == String.class || type == Object.class) {
			return xml;
		}
		if (!(type instanceof Class<?> target)) {
			throw new PayloadConversionException("Cannot read " + contentType + " body as " + type.getTypeName()
					+ ": JAXB reads XML into classes, not generic types", null);
		}
		try {
			XMLStreamReader reader = this.inputFactory.createXMLStreamReader(new StringReader(xml));
			try {
				return context(target).createUnmarshaller().unmarshal(reader, target).getValue();
			}
			finally {
				reader.close();
			}
		}
		catch (JAXBException | XMLStreamException ex) {
			throw new PayloadConversionException("Cannot read " + contentType + " body as " + target.getName() + ": "
					+ describe(ex), ex);
		}
	}

	private JAXBContext context(Class<?> type) throws JAXBException {
		JAXBContext context = this.contexts.get(type);
		if (context == null) {
			context = JAXBContext.newInstance(type);
			this.contexts.putIfAbsent(type, context);
		}
		return context;
	}

	/** JAXB often keeps the parser's message (with line and column) in the linked exception. */
	private static String describe(Exception ex) {
		Throwable cause = ex;
		if (ex instanceof JAXBException jaxb && jaxb.getLinkedException() != null) {
			cause = jaxb.getLinkedException();
		}
		while (cause.getMessage() == null && cause.getCause() != null) {
			cause = cause.getCause();
		}
		// one line: the StAX parser puts its position and its message on two
		return (cause.getMessage() != null) ? cause.getMessage().trim().replaceAll("\\s*\\R\\s*", " ")
				: cause.getClass().getName();
	}

}
