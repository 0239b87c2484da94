"""How both clients (gmmscore.Client, gmmscore.aio.Client) reach a gmmscored:
transport credentials from `tls`, the bearer-token metadata from `token`,
and the channel options, mirroring the C++ client (client/client.cc,
client/cli/connection_flags.cc)."""
import os

import grpc

# Answers of big models are large: receive without gRPC's 4 MiB default cap,
# as the C++ client does (max_receive_message_bytes = -1); the server bounds
# them (--max_message_mb).
CHANNEL_OPTIONS = (
    ("grpc.max_receive_message_length", -1),
    ("grpc.max_send_message_length", -1),
)


def credentials(tls):
    """Channel credentials for `tls`, or None for plaintext.

    tls: None or False: plaintext. True: TLS verified with the system's
    roots. str or os.PathLike: the path of a PEM CA bundle. bytes: the PEM CA
    bundle itself. A grpc.ChannelCredentials: used as it is (mutual TLS:
    grpc.ssl_channel_credentials(ca, key, chain)). Anything else: TypeError.
    A CA file that cannot be read: OSError.
    """
    if tls is None or tls is False:
        return None
    if tls is True:
        return grpc.ssl_channel_credentials()
    if isinstance(tls, grpc.ChannelCredentials):
        return tls
    if isinstance(tls, (bytes, bytearray)):
        return grpc.ssl_channel_credentials(root_certificates=bytes(tls))
    if isinstance(tls, (str, os.PathLike)):
        with open(tls, "rb") as file:
            return grpc.ssl_channel_credentials(root_certificates=file.read())
    raise TypeError(f"tls must be None, True, a CA file path, CA PEM bytes or "
                    f"grpc.ChannelCredentials, not {type(tls).__name__}")


def auth_metadata(token):
    """The call metadata for `token`: (("authorization", "Bearer <token>"),),
    as the C++ client sends it (servers with --scoring_token_file require it),
    or () for None.

    Surrounding whitespace is stripped, as the CLI does with --token_file (a
    token read from a file usually ends in a newline). An empty token:
    ValueError.
    """
    if token is None:
        return ()
    if isinstance(token, bytes):
        token = token.decode("ascii")
    token = token.strip()
    if not token:
        raise ValueError("token is empty")
    return (("authorization", "Bearer " + token),)
