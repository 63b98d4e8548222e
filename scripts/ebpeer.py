"""ebpeer: what the Python peers of einsum-bench share.

The peers (scripts/peer-numpy, scripts/peer-torch) run the same instance
files along the same stored paths as `einsum-bench run` and write the same
JSON-lines records (DESIGN 5.2), so that their times can be set side by side
with the C engine's. This module holds everything except the framework call:

- the plan: `einsum-bench plan --json -` loads and validates the instance
  and its path file (DESIGN 3.3; the tool's one message naming file and
  field; a bad instance is skipped, exit 2), looks the paths up (--paths,
  then paths/<name>.json beside the instance folder, then inline) and
  applies the kept-label rule of DESIGN 3.2; this module turns each step
  into one einsum subscript string relabelled to ASCII letters (numpy and
  torch accept only a-z, A-Z). One implementation of those semantics, the
  engine's, so the peers cannot drift from it,
- input creation in the run's dtype (the file's "dtype", or --dtype
  float64|float32|complex128|complex64 as the tool's): zeros, the seeded
  random fill shared bit for bit with the C tool, or DIR/k.npy of exactly
  that dtype,
- the measurement loop and its statistics (median = sorted[n/2], IQR =
  sorted[3n/4] - sorted[n/4], MAD with the same median convention),
- machine metadata, record writing, the human table and the command line.

A backend is a small class (see `Backend`): a name, a mode name, and how to
make a tensor from a numpy array, run a two-operand einsum and get an array
back. numpy is imported lazily, after the thread variables are set, because
OpenBLAS sizes its thread pool when the library loads. Importing this module
needs only the standard library (scripts/paired and scripts/report use it).
"""

import argparse
import ctypes
import datetime
import gc
import json
import math
import os
import platform
import resource
import signal
import socket
import string
import subprocess
import sys
import time
from dataclasses import dataclass, field

# --------------------------------------------------------------------------
# Thread pinning

THREAD_VARS = (
    "OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "OMP_THREAD_LIMIT",
    "GOTO_NUM_THREADS", "MKL_NUM_THREADS", "BLIS_NUM_THREADS",
    "NUMEXPR_NUM_THREADS", "VECLIB_MAXIMUM_THREADS",
)
"""Every thread-count variable a BLAS or OpenMP runtime might read."""

EXTRA_THREAD_ENV = {"OMP_DYNAMIC": "FALSE", "MKL_DYNAMIC": "FALSE"}

RECORDED_ENV = THREAD_VARS + tuple(EXTRA_THREAD_ENV) + (
    "OPENBLAS_CORETYPE", "OPENBLAS_VERBOSE", "GOMP_CPU_AFFINITY",
    "OMP_PROC_BIND", "OMP_PLACES",
)


def thread_env(threads):
    """The environment entries that pin every runtime to `threads` threads."""
    env = {name: str(threads) for name in THREAD_VARS}
    env.update(EXTRA_THREAD_ENV)
    return env


# --------------------------------------------------------------------------
# Errors


class InputError(Exception):
    """Bad input file or option: the message names file and field (exit 2)."""


class Unsupported(Exception):
    """Valid input the backend cannot run (the measurement is skipped)."""


# --------------------------------------------------------------------------
# The seeded random fill, bit-identical to the C tool's

MASK64 = (1 << 64) - 1
GOLDEN = 0x9E3779B97F4A7C15    # per-element increment
SEED_STEP = 0x632BE59BD9B4E019  # per-operand seed spacing
MIX1 = 0xBF58476D1CE4E5B9
MIX2 = 0x94D049BB133111EB
FILL_CHUNK = 1 << 20           # elements per vectorized chunk (bounds temps)


def mix64(z):
    """splitmix64's finalizer on a Python int (mod 2^64)."""
    z &= MASK64
    z = ((z ^ (z >> 30)) * MIX1) & MASK64
    z = ((z ^ (z >> 27)) * MIX2) & MASK64
    return z ^ (z >> 31)


def fill_base(seed, k):
    """The stream start of operand k (0-based, format-string order)."""
    return mix64((seed + SEED_STEP * (k + 1)) & MASK64)


def fill_value(seed, k, i):
    """Element i (flat C-order index) of operand k, by the definition.

    Pure-Python reference for `random_fill`, used by the tests.
    """
    z = (fill_base(seed, k) + (i + 1) * GOLDEN) & MASK64
    return (mix64(z) >> 11) * 2.0 ** -53 * 2.0 - 1.0


def _mix64_array(z):
    """mix64 on a numpy uint64 array, in place (uint64 arithmetic wraps)."""
    import numpy as np
    z ^= z >> np.uint64(30)
    z *= np.uint64(MIX1)
    z ^= z >> np.uint64(27)
    z *= np.uint64(MIX2)
    z ^= z >> np.uint64(31)
    return z


DTYPES = ("float64", "float32", "complex128", "complex64")


def random_fill(shape, seed, k, dtype="float64"):
    """Operand k of the given shape filled as `--fill random:SEED` does.

    Uniform in [-1, 1); every operation is exact in float64, so the values
    equal the C tool's bit for bit. Other dtypes take the same float64
    stream: float32 rounds each value to nearest, a complex element takes
    two consecutive values (real, imaginary; the interleaved layout read as
    2n float64), complex64 both rounded to float32.
    """
    import numpy as np
    n = 1
    for d in shape:
        n *= d
    if dtype.startswith("complex"):
        pairs = _random_stream(2 * n, seed, k)
        if dtype == "complex64":
            pairs = pairs.astype(np.float32)
        return pairs.view(np.dtype(dtype)).reshape(tuple(shape))
    out = _random_stream(n, seed, k)
    if dtype != "float64":
        out = out.astype(np.dtype(dtype))
    return out.reshape(tuple(shape))


def _random_stream(n, seed, k):
    """Elements 0..n-1 of operand k's float64 stream, flat."""
    import numpy as np
    out = np.empty(n, dtype=np.float64)
    base = np.uint64(fill_base(seed, k))
    for start in range(0, n, FILL_CHUNK):
        stop = min(n, start + FILL_CHUNK)
        z = np.arange(start + 1, stop + 1, dtype=np.uint64)
        z *= np.uint64(GOLDEN)
        z += base
        v = _mix64_array(z) >> np.uint64(11)
        out[start:stop] = v.astype(np.float64) * 2.0 ** -53 * 2.0 - 1.0
    return out


def parse_fill(text):
    """'zeros' -> ('zeros', None); 'random[:SEED]' -> ('random', SEED)."""
    if text == "zeros":
        return ("zeros", None)
    if text == "random":
        return ("random", 1)
    if text.startswith("random:"):
        seed = text[len("random:"):]
        if seed.isdigit():
            return ("random", int(seed) & MASK64)
    raise InputError("--fill: '%s' (expected zeros, random or random:SEED "
                     "with SEED a non-negative integer)" % text)


# --------------------------------------------------------------------------
# Statistics (the public suites' conventions, DESIGN 4.4)


def median(values):
    """sorted[n/2] (integer division): the upper median for even n."""
    s = sorted(values)
    return s[len(s) // 2]


def summarize_ns(samples_ns):
    """median, IQR, min, max, mean and MAD of samples in ns, as ms."""
    s = sorted(samples_ns)
    n = len(s)
    med = s[n // 2]
    mad = median(abs(x - med) for x in s)
    return {
        "median_ms": med / 1e6,
        "iqr_ms": (s[(3 * n) // 4] - s[n // 4]) / 1e6,
        "min_ms": s[0] / 1e6,
        "max_ms": s[-1] / 1e6,
        "mean_ms": sum(s) / n / 1e6,
        "mad_ms": mad / 1e6,
    }


# --------------------------------------------------------------------------
# JSON reading (file_kind; instances and path files are read by the tool)


# DESIGN 3.3, as the C loader (src/load.c, src/infile.c) applies it, so that
# both read the same problem from the same bytes: regular files only, at
# most 256 MiB; no key twice in any object; no NUL, control character (C0,
# DEL, C1) or lone surrogate in any string or key.
MAX_FILE_BYTES = 256 << 20


class _Pairs(list):
    """An object's (key, value) pairs as parsed, before the checks."""


def _clean(text):
    return not any(ord(c) < 0x20 or 0x7F <= ord(c) <= 0x9F
                   or 0xD800 <= ord(c) <= 0xDFFF for c in text)


def _shown(text):
    return "".join(c if c.isprintable() else "\\x%02x" % ord(c)
                   if ord(c) < 0x100 else "\\u%04x" % ord(c)
                   for c in text)[:60]


def _checked(file, node, fld):
    """The tree with _Pairs turned into dicts, after the DESIGN 3.3 checks."""
    where = fld or "(top level)"
    if isinstance(node, str):
        if not _clean(node):
            raise InputError("%s: %s: a NUL or control character or invalid "
                             "UTF-8 in a string (not allowed)" % (file, where))
        return node
    if isinstance(node, list) and not isinstance(node, _Pairs):
        return [_checked(file, v, "%s[%d]" % (fld, k))
                for k, v in enumerate(node)]
    if not isinstance(node, _Pairs):
        return node
    out = {}
    for key, value in node:
        if not _clean(key):
            raise InputError("%s: %s: key '%s' has a NUL or control character "
                             "or invalid UTF-8 (not allowed)"
                             % (file, where, _shown(key)))
        sub = "%s.%s" % (fld, key) if fld else key
        if key in out:
            raise InputError("%s: %s: key given twice (a duplicate key is not "
                             "allowed)" % (file, sub))
        out[key] = _checked(file, value, sub)
    return out


def _open_regular(file, cap=MAX_FILE_BYTES):
    """A binary file object on a regular file of at most cap bytes (a FIFO
    or device is refused without blocking)."""
    import stat
    try:
        fd = os.open(file, os.O_RDONLY | os.O_NONBLOCK | os.O_NOCTTY)
    except OSError as e:
        raise InputError("%s: cannot open: %s" % (file, e.strerror))
    f = os.fdopen(fd, "rb")
    st = os.fstat(fd)
    kind = ("a directory" if stat.S_ISDIR(st.st_mode) else
            "a FIFO" if stat.S_ISFIFO(st.st_mode) else
            "a character device" if stat.S_ISCHR(st.st_mode) else
            "a block device" if stat.S_ISBLK(st.st_mode) else
            "a socket" if stat.S_ISSOCK(st.st_mode) else None)
    if not stat.S_ISREG(st.st_mode):
        f.close()
        raise InputError("%s: is %s (expected a regular file)"
                         % (file, kind or "not a regular file"))
    if st.st_size > cap:
        f.close()
        raise InputError("%s: %d bytes, over the limit of %d bytes for an "
                         "input file" % (file, st.st_size, cap))
    os.set_blocking(fd, True)
    return f


def _read_regular(file, cap=MAX_FILE_BYTES):
    with _open_regular(file, cap) as f:
        raw = f.read(cap + 1)
    if len(raw) > cap:
        raise InputError("%s: over the limit of %d bytes for an input file"
                         % (file, cap))
    return raw


def read_json(file):
    """Parse a file that must hold one JSON object."""
    raw = _read_regular(file)
    nul = raw.find(b"\0")
    if nul >= 0:
        raise InputError("%s: a NUL byte at byte %d (not allowed)"
                         % (file, nul))
    try:
        root = json.loads(raw.decode("utf-8"), object_pairs_hook=_Pairs)
    except UnicodeDecodeError as e:
        raise InputError("%s: not valid UTF-8 (byte %d)" % (file, e.start))
    except json.JSONDecodeError as e:
        raise InputError("%s: not valid JSON (%s at byte %d of %d)"
                         % (file, e.msg, e.pos, len(raw)))
    except RecursionError:
        raise InputError("%s: not valid JSON (nested too deeply)" % file)
    if not isinstance(root, _Pairs):
        raise InputError("%s: top level is not a JSON object" % file)
    return _checked(file, root, "")


# --------------------------------------------------------------------------
# The plan: loaded, validated and planned by the C tool (`plan --json`)


@dataclass
class StoredPath:
    strategy: str
    steps: list                 # [(i, j), ...]
    log10_flops: float = None   # stored label, None when absent
    log2_size: float = None
    digest: str = None          # the C tool's path_digest


@dataclass
class PathSet:
    source: str                 # the file the paths came from
    inline: bool
    paths: list                 # StoredPath, in file order


@dataclass
class Instance:
    name: str
    file: str
    format_string: str
    inputs: list                # one str of labels per operand
    output: str
    shapes: list                # one tuple per operand
    dtype: str = "float64"      # as the file says

    @property
    def num_tensors(self):
        return len(self.inputs)


@dataclass
class Plan:
    """A path ready to run: per step the two live positions and the
    relabelled subscripts ("ab,bc->ac"); the tool's costs."""
    steps: list = field(default_factory=list)   # [(i, j, subscripts)]
    unary: str = None       # subscripts for a one-operand instance
    flops: float = 0.0
    log2_size: float = 0.0


def relabel(terms, out):
    """Rewrite the terms of one einsum call with ASCII letters."""
    letters = {}
    for ch in "".join(terms) + out:
        if ch not in letters:
            if len(letters) == len(string.ascii_letters):
                raise Unsupported("%d distinct labels in one step (einsum "
                                  "accepts 52)" % len(set("".join(terms))))
            letters[ch] = string.ascii_letters[len(letters)]
    sub = lambda t: "".join(letters[ch] for ch in t)
    return ",".join(sub(t) for t in terms) + "->" + sub(out)


def tool_binary():
    """The einsum-bench whose plans the peers execute: $EB_BIN, else the
    one built in this repository, else einsum-bench on PATH (installed)."""
    if os.environ.get("EB_BIN"):
        return os.environ["EB_BIN"]
    here = os.path.dirname(os.path.realpath(__file__))
    built = os.path.join(os.path.dirname(here), "einsum-bench")
    return built if os.access(built, os.X_OK) else "einsum-bench"


def load_plan(file, paths=None, strategy="all"):
    """(Instance, PathSet, [(StoredPath, Plan)]) of one instance file, as
    `einsum-bench plan --json -` loads, validates and plans it: the same
    lookup of --paths, the same checks and messages, the same kept-label
    rule as the engine. InputError carries the tool's message."""
    cmd = [tool_binary(), "plan", "--json", "-", "--strategy", strategy]
    cmd += ["--paths", paths] if paths else []
    try:
        p = subprocess.run(cmd + [file], capture_output=True, text=True)
    except OSError as e:
        raise InputError("%s: cannot run %s: %s" % (file, cmd[0], e))
    if p.returncode != 0:
        lines = [l for l in p.stderr.splitlines()
                 if l.startswith("einsum-bench: ")]
        raise InputError(lines[0][len("einsum-bench: "):] if lines else
                         "%s: %s exited %d" % (file, cmd[0], p.returncode))
    doc = json.loads(p.stdout)
    inst = Instance(doc["instance"], doc["instance_file"],
                    doc["format_string"],
                    [t["labels"] for t in doc["inputs"]],
                    doc["output"]["labels"],
                    [tuple(t["shape"]) for t in doc["inputs"]],
                    doc.get("dtype", "float64"))
    chosen, stored = [], []
    for q in doc["paths"]:
        path = StoredPath(q["strategy"], [tuple(s["pair"]) for s in q["steps"]],
                          q["stored_log10_flops"], q["stored_log2_size"],
                          q["path_digest"])
        plan = Plan(flops=q["flops"], log2_size=q["log2_size"])
        try:
            if not q["steps"]:
                plan.unary = relabel([inst.inputs[0]], inst.output)
            for s in q["steps"]:
                plan.steps.append((s["pair"][0], s["pair"][1],
                                   relabel([s["a"]["labels"],
                                            s["b"]["labels"]],
                                           s["out"]["labels"])))
        except Unsupported as e:
            plan = e    # this path is skipped, the others still run
        stored.append(path)
        chosen.append((path, plan))
    source = doc["paths"][0]["path_source"] if doc["paths"] else file
    inline = doc["paths"][0]["path_inline"] if doc["paths"] else True
    return inst, PathSet(source, inline, stored), chosen


def run_plan(plan, operands, einsum):
    """Execute the path pairwise; returns the final output.

    Each step's operands are dropped from the live list as in the linear
    path format, so intermediates are freed as soon as they are consumed.
    """
    if plan.unary is not None:
        return einsum(plan.unary, operands[0])
    live = list(operands)
    for i, j, subscripts in plan.steps:
        a, b = live[i], live[j]
        if i > j:
            del live[i], live[j]
        else:
            del live[j], live[i]
        live.append(einsum(subscripts, a, b))
        del a, b
    return live[0]


# --------------------------------------------------------------------------
# Inputs


def load_npy(file, shape, dtype="float64"):
    """DIR/k.npy: the run's dtype (little-endian), C order, exactly the
    operand's shape."""
    import numpy as np
    try:
        with _open_regular(file, 1 << 62) as f:
            arr = np.load(f, allow_pickle=False)
    except OSError as e:
        raise InputError("%s: cannot open: %s" % (file, e.strerror or e))
    except ValueError as e:
        raise InputError("%s: not a valid .npy file (%s)" % (file, e))
    want = np.dtype(dtype).newbyteorder("<")
    if arr.dtype != want or arr.dtype.byteorder == ">":
        raise InputError("%s: dtype: %s (expected %s, '%s', the run's dtype)"
                         % (file, arr.dtype.str if arr.dtype.byteorder == ">"
                            else arr.dtype, dtype, want.str))
    if not arr.flags.c_contiguous and arr.ndim > 1:
        raise InputError("%s: fortran_order: true (expected C order)" % file)
    if tuple(arr.shape) != tuple(shape):
        raise InputError("%s: shape: %s (expected %s)"
                         % (file, list(arr.shape), list(shape)))
    return np.array(arr, dtype=np.dtype(dtype), order="C")


def make_inputs(inst, fill, inputs_dir=None, dtype="float64"):
    """The operands as numpy arrays of dtype, every page written (not
    calloc'd)."""
    import numpy as np
    arrays = []
    for k, shape in enumerate(inst.shapes):
        if inputs_dir is not None:
            arr = load_npy(os.path.join(inputs_dir, "%d.npy" % k), shape,
                           dtype)
        elif fill[0] == "random":
            arr = random_fill(shape, fill[1], k, dtype)
        else:
            arr = np.empty(shape, dtype=np.dtype(dtype))
            arr.fill(0.0)
        arrays.append(arr)
    return arrays


# --------------------------------------------------------------------------
# Machine metadata


def _cpuinfo():
    model, flags = None, None
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                key, _, val = line.partition(":")
                key = key.strip()
                if key == "model name" and model is None:
                    model = val.strip()
                elif key == "flags" and flags is None:
                    flags = val.strip()
    except OSError:
        pass
    return model or platform.processor() or None, flags


def openblas_info():
    """Config string, core name and thread count of the loaded OpenBLAS
    (found in /proc/self/maps), or {} when none is loaded."""
    try:
        with open("/proc/self/maps") as f:
            libs = {l.split()[-1] for l in f if "libopenblas" in l}
    except OSError:
        return {}
    for lib in sorted(libs):
        try:
            h = ctypes.CDLL(lib)
            h.openblas_get_config.restype = ctypes.c_char_p
            h.openblas_get_corename.restype = ctypes.c_char_p
            return {"openblas_library": lib,
                    "openblas_config": h.openblas_get_config().decode(),
                    "openblas_corename": h.openblas_get_corename().decode(),
                    "openblas_threads": h.openblas_get_num_threads()}
        except (OSError, AttributeError):
            continue
    return {}


def git_commit():
    """Short commit of the repository holding this script, '-dirty' if so."""
    repo = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    try:
        head = subprocess.run(["git", "-C", repo, "rev-parse", "--short=12",
                               "HEAD"], capture_output=True, text=True,
                              timeout=10)
        if head.returncode != 0:
            return "unknown"
        dirty = subprocess.run(["git", "-C", repo, "diff", "--quiet", "HEAD"],
                               capture_output=True, timeout=10)
        return head.stdout.strip() + ("-dirty" if dirty.returncode else "")
    except (OSError, subprocess.SubprocessError):
        return "unknown"


def run_record(backend, args, argv):
    """The first record of a run: machine, build and thread metadata."""
    model, flags = _cpuinfo()
    rec = {
        "type": "run",
        "backend": backend.name,
        "command": "run",
        "modes": backend.mode,
        "strategies": args.strategy_text,
        "fill": args.fill,
        "dtype": args.dtype,
        "threads": args.threads,
        "warmups": args.warmup,
        "samples": args.samples,
        "cpu_model": model,
        "cpu_flags": flags,
        "online_cpus": os.cpu_count(),
        "cpu_affinity": sorted(os.sched_getaffinity(0)),
        "hostname": socket.gethostname(),
        "kernel": "%s %s" % (platform.system(), platform.release()),
    }
    blas = openblas_info()
    rec.update({"blas_config": blas.get("openblas_config"),
                "blas_core": blas.get("openblas_corename"),
                "blas_threads": blas.get("openblas_threads"),
                "blas_library": blas.get("openblas_library")})
    rec.update({
        "python": platform.python_version(),
        "python_executable": sys.executable,
        "git_commit": git_commit(),
        "date": datetime.datetime.now(datetime.timezone.utc)
                .strftime("%Y-%m-%dT%H:%M:%SZ"),
        "argv": argv,
        "env": {k: os.environ.get(k) for k in RECORDED_ENV},
    })
    rec.update(backend.metadata())
    return rec


# --------------------------------------------------------------------------
# Measurement


def measure(backend, plan, tensors, warmup, samples, progress=None):
    """Warmups, then timed samples of the whole path.

    The clock (CLOCK_MONOTONIC) brackets one run_plan call; minor page
    faults (getrusage, all threads) are read around the same interval. The
    output is dropped after the clock stops. Python's cyclic GC is off while
    sampling so that it cannot land in a sample (arrays are freed by
    reference counting regardless). `progress(event)`, when given, is
    called with "start" before and "end" after every run, warmups included.
    """
    clock = time.CLOCK_MONOTONIC
    einsum = backend.einsum
    note = progress or (lambda event: None)
    for _ in range(warmup):
        note("start")
        run_plan(plan, tensors, einsum)
        note("end")
    gc.collect()
    gc.disable()
    times, faults, out = [], [], None
    try:
        for _ in range(samples):
            out = None
            note("start")
            f0 = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
            t0 = time.clock_gettime_ns(clock)
            out = run_plan(plan, tensors, einsum)
            t1 = time.clock_gettime_ns(clock)
            f1 = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
            note("end")
            times.append(t1 - t0)
            faults.append(f1 - f0)
    finally:
        gc.enable()
    return times, faults, out


class ProgressFile:
    """--progress FILE: a line "start NS" or "end NS" (CLOCK_MONOTONIC, the
    machine's clock) written and flushed around every run, so that a
    caller that stops the process on a time limit knows how long each run
    took and how long the unfinished one had been running."""

    def __init__(self, path):
        self.f = open(path, "a", buffering=1) if path else None

    def __call__(self, event):
        if self.f:
            self.f.write("%s %d\n" % (event, time.clock_gettime_ns(
                time.CLOCK_MONOTONIC)))

    def close(self):
        if self.f:
            self.f.close()


def run_dtype(inst, args):
    """The dtype a measurement runs in: --dtype, else the file's."""
    return args.dtype or inst.dtype


def base_record(backend, inst, strategy, args):
    """The measurement record's identity fields, before any result."""
    return {
        "type": "measurement", "backend": backend.name,
        "instance": inst.name, "strategy": strategy, "mode": backend.mode,
        "dtype": run_dtype(inst, args), "file_dtype": inst.dtype,
        "status": "ok", "error": None, "path_source": None,
        "path_inline": None, "path_digest": None, "reused_from": None,
        "threads": args.threads, "openblas_threads": None,
        "warmups": args.warmup, "samples": args.samples, "samples_ns": [],
        "median_ms": None, "iqr_ms": None, "min_ms": None, "max_ms": None,
        "mean_ms": None, "mad_ms": None, "compile_ms": None, "flops": None,
        "gflops": None, "peak_bytes": None, "gemm_calls": None,
        "check": None, "minflt": [], "minflt_median": None,
        "num_tensors": inst.num_tensors, "log10_flops": None,
        "log2_size": None, "stored_log10_flops": None,
        "stored_log2_size": None, "fill": args.fill, "inputs": args.inputs,
        "instance_file": inst.file,
    }


def result_fields(times, faults, plan):
    """Statistics and costs of one measurement."""
    rec = {"samples_ns": times, "minflt": faults,
           "minflt_median": median(faults)}
    rec.update(summarize_ns(times))
    rec["flops"] = plan.flops
    rec["log10_flops"] = math.log10(plan.flops) if plan.flops > 0 else 0.0
    rec["log2_size"] = plan.log2_size
    rec["gflops"] = (plan.flops / (rec["median_ms"] * 1e6)
                     if rec["median_ms"] > 0 else None)
    return rec


def save_output(directory, inst, strategy, mode, out, dtype="float64"):
    """DIR/<instance>.<strategy>.<mode>.npy, the run's dtype in C order."""
    import numpy as np
    path = os.path.join(directory, "%s.%s.%s.npy" % (inst.name, strategy,
                                                     mode))
    try:
        os.makedirs(directory, exist_ok=True)
        # asarray, not ascontiguousarray: that one makes a scalar shape (1,).
        np.save(path, np.asarray(out, dtype=np.dtype(dtype), order="C"))
    except OSError as e:
        raise InputError("%s: cannot write: %s" % (path, e.strerror or e))


# --------------------------------------------------------------------------
# One instance


def measure_one(backend, plan, tensors, args, rec):
    """Fill rec with the measurement of one path; returns the output."""
    try:
        times, faults, out = measure(backend, plan, tensors, args.warmup,
                                     args.samples, args.progress_file)
    except (MemoryError, RuntimeError, ValueError) as e:
        rec.update(status="error", error="%s: %s" % (type(e).__name__, e))
        return None
    rec.update(result_fields(times, faults, plan))
    return out


def run_instance(backend, file, args, emit):
    """Measure every selected strategy of one instance file; emit each
    record. Raises InputError before any record when the instance, its
    paths or its inputs are bad."""
    inst, pathset, chosen = load_plan(file, args.paths, args.strategy_text)
    dtype = run_dtype(inst, args)
    if dtype not in DTYPES:
        raise InputError("%s: dtype: '%s' is not supported (expected one of "
                         "%s)" % (inst.file, dtype, ", ".join(DTYPES)))
    arrays = make_inputs(inst, args.fill_spec, args.inputs, dtype)
    tensors = [backend.tensor(a) for a in arrays]
    done = {}    # tuple(steps) -> (strategy, record, output)
    for path, plan in chosen:
        rec = base_record(backend, inst, path.strategy, args)
        rec.update(path_source=pathset.source, path_inline=pathset.inline,
                   path_digest=path.digest,
                   stored_log10_flops=path.log10_flops,
                   stored_log2_size=path.log2_size,
                   openblas_threads=backend.observed_threads())
        key = tuple(path.steps)
        if key in done:
            first, first_rec, out = done[key]
            for k in ("status", "error", "samples_ns", "median_ms", "iqr_ms",
                      "min_ms", "max_ms", "mean_ms", "mad_ms", "flops",
                      "gflops", "minflt", "minflt_median", "log10_flops",
                      "log2_size"):
                rec[k] = first_rec[k]
            rec["reused_from"] = first
        elif isinstance(plan, Unsupported):
            rec.update(status="skipped", error=str(plan))
            out = None
            done[key] = (path.strategy, rec, None)
        else:
            out = measure_one(backend, plan, tensors, args, rec)
            # Keep an output (for a reusing strategy) only when it is saved.
            done[key] = (path.strategy, rec,
                         out if args.save_output else None)
        if out is not None and args.save_output:
            save_output(args.save_output, inst, path.strategy, backend.mode,
                        backend.to_numpy(out), dtype)
        out = None
        emit(rec)


# --------------------------------------------------------------------------
# Targets: files and folders on the command line


def file_kind(file):
    """'instance', 'paths', 'other' or 'bad' (unreadable or not JSON)."""
    try:
        root = read_json(file)
    except InputError:
        return "bad"
    if "format_string" in root:
        return "instance"
    if "instance" in root and "paths" in root:
        return "paths"
    return "other"


def expand_targets(targets, warn):
    """INSTANCE|DIR arguments -> instance files (DIR: its *.json, sorted)."""
    files = []
    for t in targets:
        if not os.path.isdir(t):
            files.append(t)
            continue
        for name in sorted(os.listdir(t)):
            path = os.path.join(t, name)
            if not name.endswith(".json") or not os.path.isfile(path):
                continue
            kind = file_kind(path)
            if kind in ("paths", "other"):
                warn("%s: skipped (not an instance: %s)"
                     % (path, "a path file" if kind == "paths"
                        else "no format_string"))
            else:
                files.append(path)   # a bad file is reported when loaded
    return files


# --------------------------------------------------------------------------
# Output: records and the human table


class RecordSink:
    """Writes each record whole, one JSON object per line, as it comes."""

    def __init__(self, target):
        self.stream = None
        if target == "-":
            self.stream = sys.stdout
        elif target:
            d = os.path.dirname(target)
            if d:
                os.makedirs(d, exist_ok=True)
            self.stream = open(target, "w", encoding="utf-8")
        self.records = []

    def write(self, rec):
        self.records.append(rec)
        if self.stream is not None:
            self.stream.write(json.dumps(rec, ensure_ascii=False) + "\n")
            self.stream.flush()

    def close(self):
        if self.stream not in (None, sys.stdout):
            self.stream.close()


def progress_line(rec):
    """One stderr line per measurement, as the C tool prints it."""
    what = "%s/%s/%s" % (rec["instance"], rec["strategy"], rec["mode"])
    if rec["status"] != "ok":
        return "%s: %s: %s" % (what, rec["status"], rec["error"])
    return "%s: median %.3f ms, IQR %.3f ms%s" % (
        what, rec["median_ms"], rec["iqr_ms"],
        " (same path as %s)" % rec["reused_from"] if rec["reused_from"]
        else "")


def _fmt(v, spec):
    return "-" if v is None else format(v, spec)


def _skip_reason(r):
    """Why a row has no times, in words only (digits would look like data)."""
    if r["status"] == "skipped":
        return "skipped"
    return "error"


def print_table(records, run, out=sys.stdout):
    """The layout of the public suites' text logs, as `einsum-bench run`
    prints it (src/report.c): one section per mode and strategy starting
    "Mode: <mode> / Strategy: <strategy>", header lines without a
    whitespace-separated number (a Dtype line as the tool's), the column
    line, rows ending in Median,
    IQR and Compile (xRoofline is '-': a peer has no calibration), SKIP
    rows with words only, and footnotes starting with '*' and ending in
    words."""
    meas = [r for r in records if r["type"] == "measurement"]
    env = "".join(", %s=%s" % (k, run["env"][k]) for k in THREAD_VARS
                  if run["env"].get(k) is not None)
    sections = dict.fromkeys((r["mode"], r["strategy"]) for r in meas)
    for mode, strategy in sections:
        rows = [r for r in meas
                if (r["mode"], r["strategy"]) == (mode, strategy)]
        out.write("\nMode: %s / Strategy: %s\n" % (mode, strategy))
        out.write("Backend: %s\n" % run["backend"])
        out.write("Threads: threads=%d%s\n" % (run["threads"], env))
        out.write("Samples: warmup=%d, samples=%d, fill=%s, times in ms\n"
                  % (run["warmups"], run["samples"], run["fill"]))
        # Records written before dtypes say none: float64.
        dts = [(r.get("dtype") or "float64",
                r.get("file_dtype") or r.get("dtype") or "float64")
               for r in rows]
        kinds = dict.fromkeys(dts)
        mixed = len(kinds) > 1
        dtype, file_dtype = next(iter(kinds))
        out.write("Dtype: per instance (see the notes below)\n" if mixed else
                  "Dtype: %s (--dtype; the files say %s)\n"
                  % (dtype, file_dtype) if dtype != file_dtype else
                  "Dtype: %s\n" % dtype)
        out.write("Roofline: no calibration in a peer, xRoofline not known\n")
        out.write("%-52s %7s %10s %8s %9s %12s %10s %12s\n"
                  % ("Instance", "Tensors", "log10FLOPS", "log2SIZE",
                     "xRoofline", "Median (ms)", "IQR (ms)", "Compile (ms)"))
        for r in rows:
            head = "%-52s %7d %10s %8s" % (
                r["instance"], r["num_tensors"],
                _fmt(r["log10_flops"], ".4f"), _fmt(r["log2_size"], ".4f"))
            if r["status"] != "ok":
                out.write("%s SKIP %s\n" % (head, _skip_reason(r)))
                continue
            out.write("%s %9s %12s %10s %12s\n"
                      % (head, "-", _fmt(r["median_ms"], ".3f"),
                         _fmt(r["iqr_ms"], ".3f"),
                         _fmt(r["compile_ms"], ".3f")))
        for r, (dtype, file_dtype) in zip(rows, dts):
            if mixed:
                out.write("* %s: measured in %s%s\n" % (
                    r["instance"], dtype, "" if dtype == file_dtype
                    else ", the file says " + file_dtype))
            if r["reused_from"]:
                out.write("* %s: same path as %s, measured once and "
                          "reported for both\n"
                          % (r["instance"], r["reused_from"]))
            if r["status"] != "ok":
                out.write("* %s: %s: %s (the record has the details)\n"
                          % (r["instance"], r["status"], r["error"]))


# --------------------------------------------------------------------------
# Command line


class Backend:
    """What a peer script supplies. Instantiated after the thread variables
    are set, so it may import its framework in __init__."""
    name = "?"
    mode = "eager"

    def __init__(self, threads):
        self.threads = threads

    def tensor(self, array):
        """A backend tensor holding (or sharing) a numpy array."""
        return array

    def to_numpy(self, t):
        return t

    def einsum(self, subscripts, *operands):
        raise NotImplementedError

    def observed_threads(self):
        return openblas_info().get("openblas_threads")

    def metadata(self):
        return {}


def parser(prog, description):
    p = argparse.ArgumentParser(
        prog=prog, description=description,
        formatter_class=argparse.RawDescriptionHelpFormatter,
        epilog="Exit status: 0 all measurements ok (or skipped), 1 a "
               "measurement failed, 2 usage or input error.")
    p.add_argument("targets", nargs="+", metavar="INSTANCE|DIR",
                   help="instance files, or folders of *.json instances")
    p.add_argument("--mode", default="eager", choices=["eager"],
                   help="execution mode; a peer has only 'eager'")
    p.add_argument("--strategy", default="all", metavar="NAME[,NAME]|all",
                   help="which stored paths (default all)")
    p.add_argument("--paths", metavar="FILE|DIR",
                   help="where stored paths come from first")
    p.add_argument("--warmup", type=int, default=3, metavar="N",
                   help="warmup runs (default 3)")
    p.add_argument("--samples", type=int, default=15, metavar="N",
                   help="sampled runs (default 15)")
    p.add_argument("--threads", type=int, default=1, metavar="N",
                   help="threads of every runtime (default 1)")
    p.add_argument("--fill", default="zeros", metavar="zeros|random[:SEED]",
                   help="input fill (default zeros; random seed default 1)")
    p.add_argument("--dtype", choices=DTYPES, default=None,
                   help="run every instance in this dtype (default: the "
                        "file's \"dtype\")")
    p.add_argument("--inputs", metavar="DIR",
                   help="operand k is read from DIR/k.npy")
    p.add_argument("--save-output", metavar="DIR",
                   help="write DIR/<instance>.<strategy>.<mode>.npy")
    p.add_argument("--json", metavar="FILE",
                   help="JSON-lines records to FILE ('-': stdout, no table)")
    p.add_argument("--progress", metavar="FILE",
                   help="append 'start NS' / 'end NS' (CLOCK_MONOTONIC) "
                        "around every run to FILE, for a caller that stops "
                        "this process on a time limit (scripts/bench)")
    return p


def check_args(p, args):
    if args.warmup < 0:
        p.error("--warmup: %d (expected N >= 0)" % args.warmup)
    if args.samples < 1:
        p.error("--samples: %d (expected N >= 1)" % args.samples)
    if args.threads < 1:
        p.error("--threads: %d (expected N >= 1)" % args.threads)
    try:
        args.fill_spec = parse_fill(args.fill)
    except InputError as e:
        p.error(str(e))
    args.strategy_text = args.strategy
    args.strategy = (None if args.strategy == "all"
                     else [s for s in args.strategy.split(",") if s])
    if args.strategy == []:
        p.error("--strategy: empty (expected NAME[,NAME...] or all)")
    if args.inputs is not None and not os.path.isdir(args.inputs):
        p.error("--inputs: %s: not a directory" % args.inputs)


def main(argv, backend_class, prog, description):
    """The whole peer: parse, pin threads, load, measure, write."""
    p = parser(prog, description)
    args = p.parse_args(argv)
    check_args(p, args)
    signal.signal(signal.SIGPIPE, signal.SIG_DFL)  # `| head` ends us quietly
    os.environ.update(thread_env(args.threads))
    warn = lambda msg: print("%s: %s" % (prog, msg), file=sys.stderr)
    backend = backend_class(args.threads)
    try:
        args.progress_file = ProgressFile(args.progress)
    except OSError as e:
        p.error("--progress: %s: %s" % (args.progress, e.strerror))
    sink = RecordSink(args.json)
    run = run_record(backend, args, [prog] + list(argv))
    sink.write(run)

    def emit(rec):
        sink.write(rec)
        warn(progress_line(rec))

    status = 0
    for file in expand_targets(args.targets, warn):
        try:
            run_instance(backend, file, args, emit)
        except InputError as e:
            warn(str(e))
            status = 2
    sink.close()
    args.progress_file.close()
    meas = [r for r in sink.records if r["type"] == "measurement"]
    if any(r["status"] == "error" for r in meas):
        status = max(status, 1)
    if args.json != "-":
        print_table(sink.records, run)
    return status
