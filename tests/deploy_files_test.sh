#!/usr/bin/env bash
# What the deployment files promise each other, checked without Docker or a
# cluster: the systemd unit's user is made by the documented sysusers step,
# with the uid/gid (10001) the images run as and Kubernetes' runAsUser names;
# the unit passes `systemd-analyze verify`; tools/runtime_packages.sh finds
# the Debian packages of a built binary and refuses a binary whose library is
# missing; both Dockerfiles parse with the recipe reader of
# tools/check_cpu_image.py.
#   tests/deploy_files_test.sh BUILD_DIR      # CTest runs it (label no_asan)
set -euo pipefail
source_dir=$(cd "$(dirname "$0")/.." && pwd)
build=$(realpath "${1:?usage: deploy_files_test.sh BUILD_DIR}")
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
fail() { echo "deploy_files_test: $*" >&2; exit 1; }

# The documented user step, into a scratch root (systemd's tools are on any
# systemd host; a container without them skips the step, saying so).
if command -v systemd-sysusers > /dev/null; then
  mkdir -p "$work/root/etc"
  systemd-sysusers --root="$work/root" "$source_dir/deploy/systemd/gmmscore.sysusers" > /dev/null 2>&1 ||
    fail "systemd-sysusers rejects deploy/systemd/gmmscore.sysusers"
  grep -qx 'gmmscore:x:10001:10001:[^:]*:/nonexistent:/usr/sbin/nologin' "$work/root/etc/passwd" ||
    fail "sysusers made no gmmscore user 10001: $(cat "$work/root/etc/passwd")"
  grep -q '^gmmscore:x:10001:' "$work/root/etc/group" || fail "sysusers made no gmmscore group 10001"
else
  echo "deploy_files_test: no systemd-sysusers here: the user step is not checked"
fi
grep -qx 'User=gmmscore' "$source_dir/deploy/systemd/gmmscored.service" || fail "the unit runs as another user"
for image in Dockerfile deploy/docker/Dockerfile.cpu; do
  grep -q -- '--uid 10001' "$source_dir/$image" && grep -qx 'USER 10001:10001' "$source_dir/$image" ||
    fail "$image does not run as 10001:10001"
done
grep -q 'runAsUser: 10001' "$source_dir/deploy/kubernetes/deployment.yaml" ||
  fail "deployment.yaml's runAsUser is not the images' 10001"

# systemd-analyze notes the binary is not installed here; anything else it
# says of our unit fails (what it says of the host's own units is not ours).
if command -v systemd-analyze > /dev/null; then
  if analysis=$(systemd-analyze verify "$source_dir/deploy/systemd/gmmscored.service" 2>&1); then :; fi
  if echo "$analysis" | grep 'gmmscored.service' | grep -v -e 'gmmscored: No such file' \
      -e 'is not executable' -e 'Command /usr/local/bin/gmmscored' | grep -q .; then
    fail "systemd-analyze verify: $analysis"
  fi
else
  echo "deploy_files_test: no systemd-analyze here: the unit is not verified"
fi

# Runtime packages of the CUDA-free load generator: gRPC and protobuf by
# their Debian 12 names; a missing library is an error naming it.
packages=$("$source_dir/tools/runtime_packages.sh" "$build/client/load/gmmscore-load")
for expected in libgrpc++1.51 libprotobuf32 libabsl20220623; do
  echo "$packages" | grep -qx "$expected" || fail "runtime_packages missed $expected: $packages"
done
binary_missing_a_library() {  # a program that needs a library no system has
  printf 'int main(){return 0;}\n' > "$work/m.c"
  printf 'int gone(void){return 1;}\n' > "$work/gone.c"
  cc -shared -fPIC -o "$work/libgone.so" "$work/gone.c" &&
    cc -o "$work/broken" "$work/m.c" -L"$work" -Wl,--no-as-needed -lgone && rm "$work/libgone.so"
}
binary_missing_a_library
if "$source_dir/tools/runtime_packages.sh" "$work/broken" > /dev/null 2> "$work/err"; then
  fail "runtime_packages accepted a binary with a missing library"
fi
grep -q 'libgone.so' "$work/err" || fail "runtime_packages did not name the missing library: $(cat "$work/err")"
if "$source_dir/tools/runtime_packages.sh" "$work/no-such-binary" > /dev/null 2>&1; then
  fail "runtime_packages gave a list without the libraries of a binary ldd could not read"
fi

# The recipe reader check_cpu_image.py uses, on both Dockerfiles.
python3 - "$source_dir" <<'PY'
import sys
sys.path.insert(0, sys.argv[1] + "/tools")
import check_cpu_image as c
for name in ("Dockerfile", "deploy/docker/Dockerfile.cpu"):
    steps = c.instructions(f"{sys.argv[1]}/{name}")
    keywords = [k for k, _ in steps]
    assert keywords.count("FROM") == 2 and "HEALTHCHECK" in keywords, (name, keywords)
    assert all(k in {"ARG", "FROM", "ENV", "RUN", "WORKDIR", "COPY", "USER", "EXPOSE",
                     "HEALTHCHECK", "STOPSIGNAL", "ENTRYPOINT", "CMD"} for k in keywords), keywords
    for k, a in steps:
        if k in ("ENTRYPOINT", "CMD"):
            c.exec_form(a)
PY
echo "deploy_files_test: OK"
