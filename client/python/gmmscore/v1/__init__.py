"""The gmmscore.v1 protocol buffers and gRPC stubs (scorer_pb2, scorer_pb2_grpc,
admin_pb2, server_config_pb2, ...), generated from the repository's proto/ when
the package is built; they are not kept in the source tree."""
