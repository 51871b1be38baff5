// A stand-in (see QueryBuilderProtoConverter.java): a parameter type of the k-NN converter.
package org.opensearch.transport.grpc.spi;

public interface QueryBuilderProtoConverterRegistry {}
