# gmmscored with the CUDA backend: built on the CUDA devel image, run on the
# CUDA runtime image (Ubuntu 24.04: cmake 3.28, gRPC 1.51, protobuf 3.21,
# Abseil 20220623, the versions gmmscore builds against) as user 10001.
# The CPU-only image is deploy/docker/Dockerfile.cpu. No Docker engine runs on
# the development machine: tools/check_cpu_image.py checks the CPU recipe in
# a debootstrap'd root instead (docs/OPERATIONS.md, "Images").
#
#   docker build -t gmmscored .
#   docker run --gpus all -p 50051:50051 -p 9464:9464 -v /srv/models:/models:ro gmmscored
#
# Machine code for every GPU generation users run, Turing (sm_75) to Hopper
# (sm_90), plus compute_90 PTX that newer GPUs compile at load; the wgmma
# kernel is sm_90a code and runs on Hopper only (kernels/cuda/CMakeLists.txt).
ARG CUDA_VERSION=13.0.1
ARG CUDA_ARCHITECTURES="75-real;80-real;86-real;89-real;90-real;90-virtual"

FROM nvidia/cuda:${CUDA_VERSION}-devel-ubuntu24.04 AS build
ARG CUDA_ARCHITECTURES
ENV DEBIAN_FRONTEND=noninteractive
RUN apt-get update -qq && apt-get install -y -qq --no-install-recommends \
      build-essential cmake ninja-build pkg-config ca-certificates \
      libabsl-dev libgtest-dev libgmock-dev libopenblas-dev zlib1g-dev \
      libgrpc++-dev libprotobuf-dev protobuf-compiler protobuf-compiler-grpc \
      libmicrohttpd-dev libsphinxbase-dev && rm -rf /var/lib/apt/lists/*
WORKDIR /src
COPY . .
RUN cmake -S . -B /build -G Ninja -DCMAKE_BUILD_TYPE=Release -DGMMSCORE_CUDA=ON \
      "-DCMAKE_CUDA_ARCHITECTURES=${CUDA_ARCHITECTURES}" \
 && ninja -C /build gmmscored gmmscore gmmscore-load \
 && mkdir -p /out/bin \
 && cp /build/server/gmmscored /build/client/cli/gmmscore /build/client/load/gmmscore-load /out/bin/ \
 && tools/runtime_packages.sh /out/bin/* > /out/runtime-packages.txt

FROM nvidia/cuda:${CUDA_VERSION}-runtime-ubuntu24.04
ENV DEBIAN_FRONTEND=noninteractive
# The packages the build stage linked against, by this release's names
# (libgrpc++1.51t64, ...), less those the base image has: CUDA's own
# (libcublas-13-0) come with it, held by NVIDIA (apt-mark hold), and asking
# for them again would try to upgrade a held package.
COPY --from=build /out/runtime-packages.txt /tmp/runtime-packages.txt
RUN apt-get update -qq \
 && dpkg-query -W -f='${Package}\n' > /tmp/installed \
 && { echo ca-certificates; grep -vxF -f /tmp/installed /tmp/runtime-packages.txt || true; } > /tmp/missing \
 && xargs apt-get install -y -qq --no-install-recommends < /tmp/missing \
 && rm -rf /var/lib/apt/lists/* /tmp/runtime-packages.txt /tmp/installed /tmp/missing \
 && groupadd --system --gid 10001 gmmscore \
 && useradd --system --uid 10001 --gid gmmscore --home-dir /nonexistent --no-create-home \
      --shell /usr/sbin/nologin gmmscore
COPY --from=build /out/bin/ /usr/local/bin/
COPY deploy/gmmscored.textproto /etc/gmmscore/gmmscored.textproto
# A numeric user, so that Kubernetes' runAsNonRoot can check it.
USER 10001:10001
EXPOSE 50051 9464
# gRPC health (grpc.health.v1), as Kubernetes probes it (deploy/kubernetes/):
# `gmmscore health` exits 0 only while the server is SERVING (not while it
# loads its models or drains). With TLS on the listener, add --tls_ca (and
# --tls_cert/--tls_key for mutual TLS).
HEALTHCHECK --interval=15s --timeout=5s --start-period=120s --retries=3 \
  CMD ["/usr/local/bin/gmmscore", "health", "--server", "127.0.0.1:50051", "--health_timeout_s", "2"]
STOPSIGNAL SIGTERM
ENTRYPOINT ["/usr/local/bin/gmmscored"]
# Settings from the config file. Arguments to `docker run IMAGE ...` replace this CMD:
# pass --config=/etc/gmmscore/gmmscored.textproto again before flags that override it.
CMD ["--config=/etc/gmmscore/gmmscored.textproto"]
