// A stand-in for the protobuf message of OpenSearch's gRPC queries (see
// ../transport/grpc/spi/QueryBuilderProtoConverter.java): the types the k-NN converter's methods
// name, so that reflection over it (the node binds each plugin component) finds them.
package org.opensearch.protobufs;

public final class QueryContainer {
    private QueryContainer() {}

    public enum QueryContainerCase { KNN }
}
