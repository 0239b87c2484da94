#!/usr/bin/env bash
# Runs every test: installs dependencies, builds (with the CUDA backend when
# nvcc is found; its GPU tests skip without a device), runs CTest, then
# runs the Python client's tests against the daemon just built, validates
# deploy/ (tools/validate_deploy.sh), then rebuilds
# the stream tests with AddressSanitizer/LeakSanitizer and runs them.
#   tools/test.sh            # from a fresh clone
set -euo pipefail
cd "$(dirname "$0")/.."
tools/install_deps.sh
jobs=$(nproc)

cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=Release
ninja -C build -j "$jobs"
(cd build && ctest --output-on-failure -j "$jobs")
# The Python client (client/python), installed as its README says, against
# this build's gmmscored.
tools/python_tests.sh build
# deploy/: every manifest against the Kubernetes and Prometheus Operator
# schemas, envoy.yaml against Envoy's protos, the training driver against a
# stand-in kubectl (npm packages into .cache-validate/).
tools/validate_deploy.sh

# Sanitizer pass over the engine, the server and the integration tests
# (clients that cancel or vanish must free all they held). No CUDA here:
# ASan and the CUDA runtime do not mix well, and CI has no GPU anyway.
# -O1 -g1 (line tables, enough for ASan's stack traces): on CI's 2 cores
# this pass took 38 of its 82 minutes at -O2 -g; the heaviest file compiles
# in 61 s instead of 145 s.
cmake -S . -B build-asan -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DGMMSCORE_SANITIZE=ON -DGMMSCORE_CUDA=OFF \
  "-DCMAKE_CXX_FLAGS_RELWITHDEBINFO=-O1 -g1 -DNDEBUG" "-DCMAKE_C_FLAGS_RELWITHDEBINFO=-O1 -g1 -DNDEBUG"
ninja -C build-asan -j "$jobs"
(cd build-asan && ASAN_OPTIONS=detect_leaks=1 ctest --output-on-failure -j "$jobs" -LE no_asan)
echo "tools/test.sh: all tests passed"
