#!/usr/bin/env python3
"""CPU time of every thread of some processes over an interval, by thread name.

  tools/thread_cpu.py --seconds 4 PID [PID ...]

For each process: its threads grouped by name (gmmscored names its own
"gs-scheduler", "gs-answer", ...; gRPC's are "default-executo",
"grpc_global_tim", ...), with the group's CPU in cores and its busiest
thread's share of one core. A group whose busiest thread sits near 100% is a
serial bottleneck, whatever the process total says. Linux only (/proc).
"""
import argparse
import collections
import os
import sys
import time

TICKS = os.sysconf("SC_CLK_TCK")


def thread_times(pid):
    """{tid: (name, user+system ticks)} of a process's live threads."""
    times = {}
    try:
        tids = os.listdir(f"/proc/{pid}/task")
    except OSError:
        return times
    for tid in tids:
        try:
            with open(f"/proc/{pid}/task/{tid}/stat") as f:
                stat = f.read()
        except OSError:
            continue  # the thread ended
        # The name sits in parentheses and may hold spaces or ')'.
        name = stat[stat.index("(") + 1:stat.rindex(")")]
        fields = stat[stat.rindex(")") + 2:].split()
        times[tid] = (name, int(fields[11]) + int(fields[12]))
    return times


CPU_FIELDS = ("user", "nice", "system", "idle", "iowait", "irq", "softirq", "steal")


def machine_ticks():
    """The whole machine's CPU ticks by kind (/proc/stat's first line)."""
    with open("/proc/stat") as f:
        values = f.readline().split()[1:1 + len(CPU_FIELDS)]
    return dict(zip(CPU_FIELDS, map(int, values)))


def kernel_threads():
    """{pid: (name, ticks)} of ksoftirqd threads: loopback TCP's receive work
    lands there when the sending thread does not finish it, outside any
    process's own time."""
    found = {}
    for pid in os.listdir("/proc"):
        if not pid.isdigit():
            continue
        try:
            with open(f"/proc/{pid}/stat") as f:
                stat = f.read()
        except OSError:
            continue
        name = stat[stat.index("(") + 1:stat.rindex(")")]
        if name.startswith("ksoftirqd"):
            fields = stat[stat.rindex(")") + 2:].split()
            found[pid] = (name, int(fields[11]) + int(fields[12]))
    return found


def process_name(pid):
    try:
        with open(f"/proc/{pid}/comm") as f:
            return f.read().strip()
    except OSError:
        return "?"


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=4)
    parser.add_argument("pids", type=int, nargs="+")
    args = parser.parse_args()
    before = {pid: thread_times(pid) for pid in args.pids}
    machine_before, softirqd_before = machine_ticks(), kernel_threads()
    start = time.monotonic()
    time.sleep(args.seconds)
    after = {pid: thread_times(pid) for pid in args.pids}
    machine_after, softirqd_after = machine_ticks(), kernel_threads()
    elapsed = time.monotonic() - start
    cores = {k: (machine_after[k] - machine_before[k]) / TICKS / elapsed for k in CPU_FIELDS}
    softirqd = sum(t - softirqd_before.get(pid, (n, t))[1]
                   for pid, (n, t) in softirqd_after.items()) / TICKS / elapsed
    print(f"machine: {os.cpu_count()} CPUs; cores busy " +
          ", ".join(f"{k} {v:.2f}" for k, v in cores.items() if k != "idle") +
          f"; idle {cores['idle']:.2f}; ksoftirqd threads {softirqd:.2f}")
    for pid in args.pids:
        groups = collections.defaultdict(list)
        for tid, (name, ticks) in after[pid].items():
            # A thread started during the interval: all its time is in it.
            old = before[pid][tid][1] if tid in before[pid] else 0
            groups[name].append((ticks - old) / TICKS / elapsed)
        total = sum(sum(v) for v in groups.values())
        print(f"{process_name(pid)} (pid {pid}): {total:.2f} cores over {elapsed:.1f} s, "
              f"{sum(len(v) for v in groups.values())} threads")
        print(f"  {'thread name':<16} {'threads':>7} {'cores':>6} {'busiest %':>9}")
        for name, shares in sorted(groups.items(), key=lambda kv: -sum(kv[1])):
            if sum(shares) < 0.005:
                continue
            print(f"  {name:<16} {len(shares):>7} {sum(shares):>6.2f} {100 * max(shares):>9.0f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
