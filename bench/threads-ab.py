#!/usr/bin/python3
"""threads-ab: one and two threads of one or more builds, interleaved
(docs/bench.md, "Two threads, second round"). Not run by make.

  bench/threads-ab.py [--rounds R] [--samples S] [--warmup W]
      [--quiet CPUS] [--wait SECONDS] LABEL=BINARY ... -- INSTANCE ...

Per round and instance, the processes `BINARY run --strategy opt_flops
--threads 1|2 --samples S --warmup W --json -` of every build run in an
order that alternates from round to round. Before each process the script
waits (at most --wait seconds) until the machine's other processes keep
less than --quiet CPUs busy over half a second (from /proc/stat), and it
records what they kept busy. Prints per instance and build the median over
rounds of each process's median (ms), the speedup 1 thread / 2 threads,
and the worst busy-CPU reading and load average seen before its runs.
"""
import json
import subprocess
import sys
import time


def busy_cpus(span=0.5):
    def read():
        with open("/proc/stat") as f:
            v = [int(x) for x in f.readline().split()[1:]]
        return sum(v), v[3] + v[4]
    t0, i0 = read()
    time.sleep(span)
    t1, i1 = read()
    n = 2
    return n * (1 - (i1 - i0) / max(1, t1 - t0))


def wait_quiet(limit, wait):
    end = time.time() + wait
    while True:
        b = busy_cpus()
        if b < limit or time.time() > end:
            return b


def loadavg():
    with open("/proc/loadavg") as f:
        return float(f.read().split()[0])


def run(binary, inst, threads, a):
    cmd = [binary, "run", "--strategy", "opt_flops", "--threads",
           str(threads), "--samples", str(a["samples"]), "--warmup",
           str(a["warmup"]), "--json", "-", inst]
    out = subprocess.run(cmd, capture_output=True, text=True, check=True)
    for line in out.stdout.splitlines():
        r = json.loads(line)
        if r.get("type") == "measurement":
            return r["median_ms"]
    raise SystemExit(f"no measurement from {cmd}")


def median(v):
    v = sorted(v)
    return v[len(v) // 2] if len(v) % 2 else 0.5 * (v[len(v) // 2 - 1] +
                                                     v[len(v) // 2])


def main():
    a = {"rounds": 5, "samples": 21, "warmup": 3, "quiet": 0.3, "wait": 120}
    args = sys.argv[1:]
    builds = []
    while args and args[0] != "--":
        if args[0].startswith("--"):
            a[args[0][2:]] = float(args[1]) if args[0] in (
                "--quiet", "--wait") else int(args[1])
            args = args[2:]
        else:
            label, binary = args[0].split("=", 1)
            builds.append((label, binary))
            args = args[1:]
    insts = args[1:]
    runs = [(b, t) for b in builds for t in (1, 2)]
    res = {}
    for r in range(a["rounds"]):
        for inst in insts:
            order = runs[r % len(runs):] + runs[:r % len(runs)]
            if r % 2:
                order.reverse()
            for (label, binary), t in order:
                b = wait_quiet(a["quiet"], a["wait"])
                la = loadavg()
                ms = run(binary, inst, t, a)
                e = res.setdefault((inst, label), {1: [], 2: [], "busy": 0,
                                                   "load": 0})
                e[t].append(ms)
                e["busy"] = max(e["busy"], b)
                e["load"] = max(e["load"], la)
        print(f"round {r + 1} done", file=sys.stderr)
    print("| instance | build | 1 thread ms | 2 threads ms | 1/2 |"
          " max busy others | max load |")
    print("|---|---|---:|---:|---:|---:|---:|")
    for inst in insts:
        for label, _ in builds:
            e = res[(inst, label)]
            m1, m2 = median(e[1]), median(e[2])
            name = inst.rsplit("/", 1)[-1].removesuffix(".json")
            print(f"| {name} | {label} | {m1:.4f} | {m2:.4f} | {m1 / m2:.2f}"
                  f" | {e['busy']:.2f} | {e['load']:.2f} |")


main()
