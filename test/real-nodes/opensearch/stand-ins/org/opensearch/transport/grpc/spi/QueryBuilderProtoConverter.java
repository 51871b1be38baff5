// A stand-in for transport-grpc's SPI, which Maven Central does not serve. The k-NN plugin 3.x
// returns a gRPC query converter implementing this among its components; the node has no gRPC
// transport, so nothing calls it, but the class must load. Compiled into the launcher's classes
// by scripts/local-cluster install for a version whose plugin names it.
package org.opensearch.transport.grpc.spi;

public interface QueryBuilderProtoConverter {}
