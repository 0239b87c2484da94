#!/usr/bin/env python3
"""Checks the CPU image's recipe (deploy/docker/Dockerfile.cpu) from scratch
without a Docker engine: each stage's FROM becomes a debootstrap'd Debian 12
root, its ENV/WORKDIR/COPY/RUN steps run there in order (RUN through chroot
with /bin/sh -c, as Docker's shell form does), and the final root's binaries
are started as the image's USER: --version on each, a model made with
`gmmscore synth`, gmmscored from ENTRYPOINT + CMD, the HEALTHCHECK command
until it passes, `gmmscore models`, a short gmmscore-load run, then SIGTERM
and a clean exit.

  sudo tools/check_cpu_image.py [--context CHECKOUT] [--dockerfile deploy/docker/Dockerfile.cpu]
                                [--work /var/tmp/gmmscore-cpu-image]

Needs root (debootstrap, chroot, mounts) and network to deb.debian.org. Takes
about half an hour on two cores (it builds gmmscore inside), so it is not a
CI test; docs/OPERATIONS.md, "Images", has its last output.

What differs from `docker build`: the build context is the repository's
files that git does not ignore, less .dockerignore's patterns; a root made by
`debootstrap --variant=minbase bookworm` stands for debian:bookworm and
debian:bookworm-slim alike (slim is minbase less documentation); RUN steps
share the host's network and kernel; USER is applied with chroot --userspec.
"""
import argparse
import fnmatch
import os
import shlex
import shutil
import subprocess
import sys
import time

MIRROR = "http://deb.debian.org/debian"
SUITES = {"debian:bookworm", "debian:bookworm-slim"}


def log(message):
    print(f"[check_cpu_image {time.strftime('%H:%M:%S')}] {message}", flush=True)


def run(command, **kwargs):
    log("$ " + " ".join(shlex.quote(c) for c in command))
    subprocess.run(command, check=True, **kwargs)


def instructions(path):
    """(KEYWORD, argument) pairs: comments dropped, continuations joined."""
    result, pending = [], ""
    with open(path) as f:
        for raw in f:
            line = raw.rstrip("\n")
            if not pending and (not line.strip() or line.lstrip().startswith("#")):
                continue
            if pending and line.lstrip().startswith("#"):
                continue  # a comment inside a continued instruction
            if line.endswith("\\"):
                pending += line[:-1] + " "
                continue
            text = (pending + line).strip()
            pending = ""
            keyword, _, argument = text.partition(" ")
            result.append((keyword.upper(), argument.strip()))
    return result


def context_files(repo):
    """The build context: files git tracks or would track, less .dockerignore."""
    listed = subprocess.run(["git", "-C", repo, "ls-files", "-co", "--exclude-standard", "-z"],
                            check=True, capture_output=True).stdout.decode().split("\0")
    patterns = []
    ignore = os.path.join(repo, ".dockerignore")
    if os.path.exists(ignore):
        with open(ignore) as f:
            patterns = [p.strip().rstrip("/") for p in f if p.strip() and not p.startswith("#")]

    def ignored(name):
        parts = name.split("/")
        for p in patterns:
            p = p.removeprefix("**/")
            if name.startswith(p + "/") or fnmatch.fnmatch(name, p) or any(fnmatch.fnmatch(part, p) for part in parts[:-1]) \
                    or fnmatch.fnmatch(parts[-1], p):
                return True
        return False

    return [n for n in listed if n and os.path.isfile(os.path.join(repo, n)) and not ignored(n)]


class Stage:
    def __init__(self, name, root):
        self.name, self.root = name, root
        self.env, self.workdir, self.user = {}, "/", "0:0"
        self.entrypoint, self.cmd, self.healthcheck = [], [], []


def mounts_under(path):
    """Mount points at or below `path` (from /proc/self/mountinfo)."""
    path = os.path.realpath(path)
    with open("/proc/self/mountinfo") as f:
        points = [line.split()[4] for line in f]
    return [p for p in points if p == path or p.startswith(path + "/")]


def make_root(base, target):
    """A copy of the pristine minbase root (made once)."""
    if not os.path.exists(os.path.join(base, "etc/debian_version")):
        run(["debootstrap", "--variant=minbase", "bookworm", base, MIRROR])
    if os.path.exists(target):
        # A run killed inside a RUN step leaves the host's /dev bound there:
        # removing the tree would delete the host's device nodes.
        if mounts_under(target):
            sys.exit(f"{target} still has mounts ({', '.join(mounts_under(target))}): umount them first")
        shutil.rmtree(target)
    run(["cp", "-a", base, target])


class Mounts:
    """/proc, /dev and resolv.conf inside a root while its steps run."""

    def __init__(self, root):
        self.root, self.mounted = root, []

    def __enter__(self):
        for source, target, kind in (("proc", "proc", ["-t", "proc"]), ("/dev", "dev", ["--rbind"]),
                                     ("/dev/pts", "dev/pts", ["--bind"])):
            path = os.path.join(self.root, target)
            os.makedirs(path, exist_ok=True)
            run(["mount", *kind, source, path])
            self.mounted.append(path)
            if kind == ["--rbind"]:
                # Unmounting the copy must not reach the host's /dev/pts,
                # /dev/shm (shared propagation on systemd hosts).
                run(["mount", "--make-rslave", path])
        shutil.copy("/etc/resolv.conf", os.path.join(self.root, "etc/resolv.conf"))
        return self

    def __exit__(self, *exc):
        for path in reversed(self.mounted):
            subprocess.run(["umount", "-l", path], check=False)


def chroot_command(stage, argv, user=None):
    env = ["env", "-i", "PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin",
           "HOME=/root"] + [f"{k}={v}" for k, v in stage.env.items()]
    return ["chroot", f"--userspec={user or '0:0'}", stage.root, *env,
            "sh", "-c", f"cd {shlex.quote(stage.workdir)} && exec \"$@\"", "sh", *argv]


def exec_form(argument):
    """A JSON-array (exec form) argument as a list."""
    import json
    return json.loads(argument)


def copy_into(stage, sources, destination, repo, stages):
    dest = os.path.join(stage.root, os.path.join(stage.workdir, destination).lstrip("/"))
    if sources[0].startswith("--from="):
        src_stage = stages[sources[0].split("=", 1)[1]]
        for src in sources[1:]:
            path = os.path.join(src_stage.root, src.lstrip("/"))
            if os.path.isdir(path):
                os.makedirs(dest, exist_ok=True)
                run(["cp", "-a", path.rstrip("/") + "/.", dest])
            else:
                os.makedirs(os.path.dirname(dest.rstrip("/")) if not dest.endswith("/") else dest, exist_ok=True)
                run(["cp", "-a", path, dest])
        return
    for src in sources:
        if src == ".":
            files = context_files(repo)
            log(f"COPY . ({len(files)} files of the context) -> {dest}")
            for name in files:
                target = os.path.join(dest, name)
                os.makedirs(os.path.dirname(target), exist_ok=True)
                shutil.copy2(os.path.join(repo, name), target)
        else:
            os.makedirs(os.path.dirname(dest) if not dest.endswith("/") else dest, exist_ok=True)
            run(["cp", "-a", os.path.join(repo, src), dest])


def build(dockerfile, repo, work):
    stages, stage, base = {}, None, os.path.join(work, "minbase")
    for keyword, argument in instructions(dockerfile):
        if keyword == "FROM":
            words = argument.split()
            image = words[0]
            if image not in SUITES:
                sys.exit(f"{dockerfile}: FROM {image}: this check knows only {sorted(SUITES)}")
            name = words[2] if len(words) >= 3 and words[1].upper() == "AS" else f"stage{len(stages)}"
            stage = Stage(name, os.path.join(work, name))
            stages[name] = stage
            log(f"FROM {image} -> {stage.root}")
            make_root(base, stage.root)
        elif keyword == "ENV":
            key, _, value = argument.partition("=")
            stage.env[key.strip()] = value.strip()
        elif keyword == "WORKDIR":
            stage.workdir = argument
            os.makedirs(os.path.join(stage.root, argument.lstrip("/")), exist_ok=True)
        elif keyword == "COPY":
            words = argument.split()
            copy_into(stage, words[:-1], words[-1], repo, stages)
        elif keyword == "RUN":
            log(f"RUN {argument[:120]}{'...' if len(argument) > 120 else ''}")
            with Mounts(stage.root):
                run(chroot_command(stage, ["/bin/sh", "-c", argument]))
        elif keyword == "USER":
            stage.user = argument
        elif keyword == "ENTRYPOINT":
            stage.entrypoint = exec_form(argument)
        elif keyword == "CMD":
            stage.cmd = exec_form(argument)
        elif keyword == "HEALTHCHECK":
            stage.healthcheck = exec_form(argument[argument.index("CMD") + 3:].strip())
        elif keyword in ("EXPOSE", "STOPSIGNAL", "ARG", "LABEL"):
            pass
        else:
            sys.exit(f"{dockerfile}: {keyword} is not handled by this check")
    return stage


def start_and_probe(stage):
    """The image's binaries, as its USER: versions, a daemon, its health."""
    port, metrics = 50151, 9564
    with Mounts(stage.root):
        for binary in ("gmmscored", "gmmscore", "gmmscore-load"):
            run(chroot_command(stage, [f"/usr/local/bin/{binary}", "--version"], stage.user))
        run(chroot_command(stage, ["sh", "-c", "mkdir -p /tmp/models && /usr/local/bin/gmmscore synth "
                                   "--states 200 --gaussians 8 --dim 39 --seed 1 --output /tmp/models/am.gmm"],
                           stage.user))
        daemon_argv = stage.entrypoint + stage.cmd + [
            "--model_repository=/tmp/models", f"--listen=127.0.0.1:{port}",
            f"--metrics_listen=127.0.0.1:{metrics}"]
        log("daemon: " + " ".join(daemon_argv))
        daemon = subprocess.Popen(chroot_command(stage, daemon_argv, stage.user))
        try:
            probe = [a.replace("127.0.0.1:50051", f"127.0.0.1:{port}") for a in stage.healthcheck]
            deadline = time.time() + 120
            while subprocess.run(chroot_command(stage, probe, stage.user)).returncode != 0:
                if daemon.poll() is not None or time.time() > deadline:
                    sys.exit("the HEALTHCHECK never passed")
                time.sleep(1)
            log("HEALTHCHECK passed: " + " ".join(probe))
            run(chroot_command(stage, ["/usr/local/bin/gmmscore", "models", f"--server=127.0.0.1:{port}"],
                               stage.user))
            run(chroot_command(stage, ["/usr/local/bin/gmmscore-load", f"--server=127.0.0.1:{port}",
                                       "--model=am", "--streams=8", "--ramp_s=0", "--warmup_s=1",
                                       "--duration_s=3"], stage.user))
        finally:
            daemon.terminate()
            code = daemon.wait(timeout=60)
        log(f"gmmscored exited {code} after SIGTERM")
        if code != 0:
            sys.exit(f"gmmscored exited {code}")


def main():
    repo = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--dockerfile", default=os.path.join(repo, "deploy/docker/Dockerfile.cpu"))
    parser.add_argument("--work", default="/var/tmp/gmmscore-cpu-image")
    parser.add_argument("--context", default=repo,
                        help="the build context, a git checkout (e.g. a fresh clone of main)")
    args = parser.parse_args()
    if os.geteuid() != 0:
        sys.exit("needs root (debootstrap, chroot, mount)")
    if shutil.which("debootstrap") is None:
        run(["apt-get", "install", "-y", "-qq", "--no-install-recommends", "debootstrap"])
    os.makedirs(args.work, exist_ok=True)
    started = time.time()
    final = build(args.dockerfile, args.context, args.work)
    start_and_probe(final)
    log(f"OK: {args.dockerfile} built and served in {time.time() - started:.0f} s")


if __name__ == "__main__":
    main()
