# gmmscored in a container: built on the CUDA devel image, run on the CUDA
# runtime image as a non-root user. Not built here (no Docker engine on the
# development machine); see docs/OPERATIONS.md.
#
#   docker build -t gmmscored .
#   docker run --gpus all -p 50051:50051 -p 9464:9464 -v /srv/models:/models:ro gmmscored
ARG CUDA_VERSION=12.4.1
FROM nvidia/cuda:${CUDA_VERSION}-devel-ubuntu22.04 AS build
ENV DEBIAN_FRONTEND=noninteractive
RUN apt-get update -qq && apt-get install -y -qq --no-install-recommends \
      build-essential cmake ninja-build pkg-config git ca-certificates \
      libabsl-dev libgtest-dev libgmock-dev libopenblas-dev zlib1g-dev \
      libgrpc++-dev libprotobuf-dev protobuf-compiler protobuf-compiler-grpc \
      libmicrohttpd-dev libsphinxbase-dev && rm -rf /var/lib/apt/lists/*
WORKDIR /src
COPY . .
RUN cmake -S . -B /build -G Ninja -DCMAKE_BUILD_TYPE=Release -DGMMSCORE_CUDA=ON \
 && ninja -C /build gmmscored gmmscore \
 && mkdir -p /out/bin && cp /build/server/gmmscored /build/client/cli/gmmscore /out/bin/

FROM nvidia/cuda:${CUDA_VERSION}-runtime-ubuntu22.04
ENV DEBIAN_FRONTEND=noninteractive
# Runtime libraries only; grpc_health_probe-style checks use the gmmscore CLI.
RUN apt-get update -qq && apt-get install -y -qq --no-install-recommends \
      libabsl20210324 libopenblas0-pthread libgrpc++1 libprotobuf23 libmicrohttpd12 libsphinxbase3 zlib1g \
      ca-certificates && rm -rf /var/lib/apt/lists/* \
 && groupadd --system gmmscore && useradd --system --gid gmmscore --home /nonexistent \
      --shell /usr/sbin/nologin gmmscore
COPY --from=build /out/bin/ /usr/local/bin/
COPY deploy/gmmscored.textproto /etc/gmmscore/gmmscored.textproto
USER gmmscore:gmmscore
EXPOSE 50051 9464
# gRPC health (grpc.health.v1), as Kubernetes probes it (deploy/kubernetes/):
# `gmmscore health` exits 0 only while the server is SERVING (not while it
# loads its models or drains). The old check opened /dev/tcp, which the
# image's /bin/sh (dash) does not have, so it never passed. With TLS on the
# listener, add --tls_ca (and --tls_cert/--tls_key for mutual TLS).
HEALTHCHECK --interval=15s --timeout=5s --start-period=120s --retries=3 \
  CMD ["/usr/local/bin/gmmscore", "health", "--server", "127.0.0.1:50051", "--health_timeout_s", "2"]
STOPSIGNAL SIGTERM
ENTRYPOINT ["/usr/local/bin/gmmscored"]
# Settings from the config file. Arguments to `docker run IMAGE ...` replace this CMD:
# pass --config=/etc/gmmscore/gmmscored.textproto again before flags that override it.
CMD ["--config=/etc/gmmscore/gmmscored.textproto"]
