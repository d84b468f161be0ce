"""Trace documents for tests/test_trace_reader.py, written as JSON text (so that keys may repeat,
whitespace and escapes vary, and numbers are spelt exactly as chosen).

A document is a tree of Python values plus `Obj` (an object whose keys may repeat) and `Lit`
(a token written as given: a number's exact text, NaN, raw bytes); `Writer` spells it. The
choices come from hypothesis (`Tape`, drawing from bytes) or from a seeded generator (`Seeded`);
`document` draws a whole trace: its events, distributedInfo and deviceProperties, clean (as
PyTorch writes it) or with odd values at a given rate."""
from __future__ import annotations

import json
import random
from typing import List, Sequence, Tuple

import attrs
from hypothesis import strategies as st


# ---- JSON text ---------------------------------------------------------------------------------
@attrs.frozen
class Obj:
    """A JSON object whose keys may repeat: (key, value) pairs in order."""
    pairs: Tuple


@attrs.frozen
class Lit:
    """A token written exactly as given (a number's text, NaN, bytes that are not UTF-8)."""
    text: bytes


def lit(text) -> Lit:
    return Lit(text.encode() if isinstance(text, str) else text)


_SHORT = {'"': '\\"', "\\": "\\\\", "\n": "\\n", "\r": "\\r", "\t": "\\t", "\b": "\\b",
          "\f": "\\f", "/": "\\/"}
_SPACE = (" ", "\n", "\t", "\r", "  ", "\r\n", "\n    ")


class Writer:
    """Spells a document: `spacing` 0 compact, 1 as json.dumps, 2 random JSON whitespace around
    every token; `escaping` 0 UTF-8 as is, 1 every non-ASCII character as \\uXXXX (pairs past
    the BMP), 2 a random share of every character escaped (\\u0041, \\/, \\n, upper or lower hex
    digits)."""

    def __init__(self, seed: int, spacing: int, escaping: int):
        self.seed, self.spacing, self.escaping = seed, spacing, escaping
        self.rng = random.Random(seed)

    def ws(self) -> str:
        if self.spacing < 2 or self.rng.random() < 0.5:
            return ""
        return self.rng.choice(_SPACE)

    def write(self, v) -> bytes:
        out: List[bytes] = []
        self._value(v, out)
        return b"".join(out)

    def _value(self, v, out):
        if isinstance(v, Lit):
            out.append(v.text)
        elif isinstance(v, Obj) or isinstance(v, dict):
            pairs = v.pairs if isinstance(v, Obj) else tuple(v.items())
            out.append(b"{")
            for i, (k, x) in enumerate(pairs):
                out.append(((", " if self.spacing == 1 else ",") if i else "").encode())
                out.append((self.ws() + self._string(k) + self.ws() +
                            (": " if self.spacing == 1 else ":") + self.ws()).encode())
                self._value(x, out)
                out.append(self.ws().encode())
            out.append(b"}")
        elif isinstance(v, (list, tuple)):
            out.append(b"[")
            for i, x in enumerate(v):
                out.append(((", " if self.spacing == 1 else ",") if i else "").encode() +
                           self.ws().encode())
                self._value(x, out)
                out.append(self.ws().encode())
            out.append(b"]")
        elif isinstance(v, str):
            out.append(self._string(v).encode("utf-8"))
        elif v is None or isinstance(v, bool):
            out.append({None: b"null", True: b"true", False: b"false"}[v])
        elif isinstance(v, int):
            out.append(str(v).encode())
        else:
            out.append(repr(float(v)).encode())       # finite floats only: Lit for the rest

    def _string(self, s: str) -> str:
        if self.escaping < 2 and not any(0xD800 <= ord(ch) <= 0xDFFF for ch in s):
            return json.dumps(s, ensure_ascii=self.escaping == 1)     # the common spellings
        out = ['"']
        for ch in s:
            o = ord(ch)
            must = ch in '"\\' or o < 0x20 or 0xD800 <= o <= 0xDFFF
            if not (must or (self.escaping == 1 and o > 0x7E) or
                    (self.escaping == 2 and self.rng.random() < 0.3)):
                out.append(ch)
            elif ch in _SHORT and self.rng.random() < 0.6:
                out.append(_SHORT[ch])
            else:
                units = [o] if o <= 0xFFFF else [0xD800 + ((o - 0x10000) >> 10),
                                                 0xDC00 + ((o - 0x10000) & 0x3FF)]
                hexa = "%04X" if self.rng.random() < 0.3 else "%04x"
                out.extend("\\u" + hexa % u for u in units)
        out.append('"')
        return "".join(out)


# ---- choices: drawn by hypothesis, or by a seeded generator -----------------------------------
class Seeded:
    def __init__(self, seed: int):
        self.r = random.Random(seed)

    def int(self, lo: int, hi: int) -> int:
        return self.r.randint(lo, hi)

    def pick(self, seq: Sequence):
        return seq[self.r.randrange(len(seq))]

    def flag(self, p: float) -> bool:
        return self.r.random() < p


class Tape:
    """The same choices read from bytes hypothesis draws (one draw per document: drawing each
    choice would cost more than reading the document); past the end every choice is its
    simplest (the first option, the lowest number, False), so shrinking the bytes shrinks the
    document."""

    def __init__(self, data: bytes):
        self.data, self.at = data, 0

    def _byte(self) -> int:
        self.at += 1
        return self.data[self.at - 1] if self.at <= len(self.data) else 0

    def int(self, lo: int, hi: int) -> int:
        v = 0
        for _ in range(((hi - lo).bit_length() + 7) // 8):
            v = v << 8 | self._byte()
        return lo + v % (hi - lo + 1)

    def pick(self, seq: Sequence):
        return seq[self.int(0, len(seq) - 1)]

    def flag(self, p: float) -> bool:
        return self._byte() >= 256 * (1 - p)


TAPE = st.binary(min_size=2048, max_size=2048)      # a document reads at most ~1,000


# ---- what a trace holds ------------------------------------------------------------------------
COMPUTE = ("gemm", "sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn_n_tilesize128x256x64_cublas",
           "void at::native::vectorized_elementwise_kernel<4, at::native::FillFunctor<float>>",
           "\u00e9lan_kernel_\u00fc", "\u6838\u51fd\u6570", "rocket \U0001F680", "",
           "Memcpy DtoD (Device -> Device)", "quote \" back \\ slash / tab \t", "ncc",
           "\u0130nccl", "\u212anccl")
NCCL = ("ncclDevKernel_AllReduce_Sum_f32_RING_LL(ncclDevComm*, unsigned long, ncclWork*)",
        "ncclKernel_SendRecv", "ncclDevKernel_SendRecv(ncclDevComm*, unsigned long, ncclWork*)",
        "NCCL_AllGather", "nccl", "Nccl_x", "ncclL\u00e9", "NcCl\u0000zero",
        "\uff2e\uff23\uff23\uff2c_fullwidth")
STEP_FIRST = (1, 0, 4, 551, 12, 2 ** 31, 2 ** 53 + 1, 2 ** 63 - 4)
STEP_ODD = ("ProfilerStep#{}\n", "ProfilerStep#x", "ProfilerStep#\u0661\u0662", "ProfilerStep#",
            "ProfilerStep#-1", "ProfilerStep# {}", "ProfilerStep#{} ", "ProfilerStep#000{}",
            "profilerstep#{}", "ProfilerStep#{}\n\n", "ProfilerStep#\uff13", "ProfilerStep#\u00b2",
            "ProfilerStep#{}#4", "ProfilerStep#" + "9" * 25, "ProfilerStep#{}\r",
            "ProfilerStep#9223372036854775808", "ProfilerStep#{}.0")
COLLECTIVES = ("allreduce", "send", "recv", "reduce_scatter", "SEND", "Recv", "broadcast",
               "all_to_all", "")
PG_NAMES = ("0", "1", "tp-0", "dp-3", "pp-0", "", "grupo-\u00f1")
PG_DESCS = ("default_pg", "TENSOR_MODEL_PARALLEL_GROUP", "DATA_PARALLEL_GROUP_WITH_CP",
            "PIPELINE_MODEL_PARALLEL_GROUP", "EXPERT_MODEL_PARALLEL_GROUP",
            "CONTEXT_PARALLEL_GROUP", "undefined", "tp", "DP", "P\u0130PELINE", "\u212aTENSOR", "")
PEER_KEYS = ("Dst Rank", "dst_rank", "dst", "Src Rank", "src_rank", "src", "Peer", "peer")
NAMES = ("rank-0.json", "rank-3.json", "trainer_rank_12.pt.trace.json", "trace.json",
         "RANK7.json", "rank-\u0661.json", "host.rank5.json", "rank-99999999999999999999.json")
# values of an unexpected type or range, for any field
ODD = (lit("-0.0"), lit("-0"), 0, lit("1e300"), lit("1e400"), lit("-1e400"), 2 ** 53 + 1,
       2 ** 63 - 1, 2 ** 63, 2 ** 64 - 1, 2 ** 64, 10 ** 30, -(2 ** 63), -(2 ** 63) - 1, True,
       False, "10", "", None, [], Obj(()), lit("1E2"), lit("1e+2"), lit("5e-324"),
       lit("1.5e-320"), lit("1e-400"), lit("NaN"), lit("Infinity"), lit("-Infinity"),
       lit("1700000000012098.5"), lit("123456789012345678901234567890.5"), lit("0.1e1"),
       lit("1.0000000000000000000000001"), -5, lit("12.0"), "\u0663", "\u00b2", " 7 ", "--5",
       "1e3", 1.5, [1, "2", 3.0, True, None, [4]], Obj((("r", 1),)), "[0, 1]", "[0, \"x\"]",
       "[1e20, NaN, 2.0, \"3\"]", [0, 1], "\ud800", 3.0, 7, "x", "nccl")


def number(c, value: float, clean: bool):
    """A time in microseconds, spelt as a profiler or a hand might: an integer, 3 decimals (16
    to 19 significant digits on an epoch clock), the shortest repr, an exponent."""
    form = c.int(0, 5)
    if form == 1 or (form == 0 and value != int(value)):
        return lit("%.3f" % value)
    if form == 0:
        return int(value)
    if form == 2:
        return value
    if form == 3:
        return lit("%.17g" % value)
    if form == 4:
        return lit("%.6E" % value if clean else "%.3e" % value)
    return lit(("%.3f" % value) + "0" * c.int(1, 6))     # more digits than a double holds


def odd(c, clean: bool, usual):
    """`usual`, or (at the document's rate of oddity) a value of another type or range."""
    return usual if clean or not c.flag(c.odd_rate) else c.pick(ODD)


def nccl_args(c, clean: bool) -> List[Tuple]:
    coll = c.pick(COLLECTIVES)
    pairs = [("Collective name", odd(c, clean, coll)),
             ("Process Group Name", odd(c, clean, c.pick(PG_NAMES))),
             ("Process Group Description", odd(c, clean, c.pick(PG_DESCS))),
             ("In msg nelems", c.int(0, 10 ** 6)), ("Group size", c.int(1, 8)),
             ("dtype", "BFloat16")]
    ranks = c.pick(("[0, 1]", "[0, 1, 2, 3]", "[]", "[1,0]", "[ 5 ]"))
    pairs.append(("Process Group Ranks", odd(c, clean, ranks if c.flag(0.7) else
                                              json.loads(ranks))))
    for key in PEER_KEYS:
        if c.flag(0.2):
            pairs.append((key, odd(c, clean, c.pick((1, 0, 5, -1, 2 ** 31)))))
    return [p for p in pairs if c.flag(0.9)]


def kernel_args(c, clean: bool, corr: int, name: str):
    pairs = [("External id", c.int(0, 99999)), ("device", odd(c, clean, c.pick((0, 1)))),
             ("stream", c.pick((7, 20))), ("correlation", odd(c, clean, corr)),
             ("grid", [c.int(1, 512), 1, 1]), ("blocks per SM", 4.740741)]
    if name[:4].lower() == "nccl" or c.flag(0.1):
        pairs += nccl_args(c, clean)
    pairs = [p for p in pairs if c.flag(0.92)]
    if c.flag(0.15):            # a key twice (a decoy of its type first): the last counts
        key, decoy, last = c.pick((("correlation", corr + 1, corr), ("device", 1, 0),
                                   ("Collective name", "recv", "send"),
                                   ("Process Group Name", "dp-0", "tp-0")))
        pairs.insert(c.int(0, len(pairs)), (key, odd(c, clean, decoy)))
        pairs.append((key, odd(c, clean, last)))
    if not clean and c.flag(0.05):
        return c.pick((None, [1, 2], "args", 5))
    return Obj(tuple(pairs))


def event(c, clean: bool, cat, ph, name, ts, dur, args=None, extra=()):
    pairs = [("ph", odd(c, clean, ph)), ("cat", odd(c, clean, cat)),
             ("name", odd(c, clean, name)), ("pid", c.pick((0, 1000, 2910249))),
             ("tid", c.pick((7, 40, 2919752))), ("ts", odd(c, clean, ts)),
             ("dur", odd(c, clean, dur))] + list(extra)
    if args is not None:
        pairs.append(("args", args))
    # a field missing (what PyTorch writes always has a kernel's name, start and duration)
    pairs = [p for p in pairs if p[0] in (("ph", "cat") if not clean else
                                          ("ph", "cat", "name", "ts", "dur")) or
             not c.flag(0.03)]
    if c.flag(0.1):
        key = c.pick(("cat", "ts", "name", "ph", "dur"))
        decoy = {"cat": "cpu_op", "ts": 0, "name": "decoy", "ph": "B", "dur": -1}[key]
        pairs.insert(0, (key, odd(c, clean, decoy)))
    if c.flag(0.33):                      # the fields in another order
        pairs.reverse()
    return Obj(tuple(pairs))


def events(c, clean: bool) -> list:
    """Steps and the kernels launched in them, or kernels whose names repeat (no steps: the
    pattern cuts the iterations), with the CPU and metadata events a trace carries."""
    out = []
    steps = c.int(0, 3)
    first = c.pick(STEP_FIRST)
    base = c.pick((1000.0, 4458676416788.066, 1700000000012098.5, 0.0, 1e15 + 0.25))
    span = c.pick((1000.0, 222442.191, 5.5))
    names = [c.pick(NCCL) if c.flag(0.3) else c.pick(COMPUTE) for _ in range(c.int(1, 4))]
    corr = c.pick((1, 57533, 2 ** 40))
    for it in range(max(steps, c.int(1, 3))):
        t0 = base + it * span
        if it < steps:
            n = first + it
            text = f"ProfilerStep#{n}" if clean or c.flag(0.8) else c.pick(STEP_ODD).format(n)
            out.append(event(c, clean, c.pick(("user_annotation", "cpu_op")), "X", text,
                             number(c, t0, clean), number(c, span * 0.95, clean), Obj(())))
            if c.flag(0.05):            # the same step twice, or one of negative length
                out.append(event(c, clean, "user_annotation", "X", text,
                                 number(c, t0 + span / 3, clean),
                                 number(c, c.pick((span, -span / 2)), clean)))
        for j, name in enumerate(names):
            corr += 1
            kts = t0 + (j + 1) * span / (len(names) + 2)
            cat = c.pick(("kernel", "kernel", "kernel", "gpu_memcpy", "gpu_memset"))
            dur = c.pick((span / (len(names) + 3), 1.284, 0.0, 41.407))
            out.append(event(c, clean, cat, "X", name, number(c, kts, clean),
                             number(c, dur, clean), kernel_args(c, clean, corr, name)))
            if c.flag(0.85):            # its launch: matched, or not; in its step, or the next
                when = kts - c.pick((0.5, 3.0)) + (span if c.flag(0.1) else 0.0)
                link = corr if c.flag(0.9) else corr + 10 ** 6
                out.append(event(c, clean, "cuda_runtime", "X", "cudaLaunchKernel",
                                 number(c, when, clean), number(c, 4.0, clean),
                                 Obj((("External id", 1), ("cbid", 211),
                                      ("correlation", odd(c, clean, link))))))
    for _ in range(c.int(0, 3)):          # what else a trace holds
        kind = c.int(0, 6)
        t = number(c, base + c.int(0, 3) * span / 7, clean)
        if kind == 0:
            out.append(Obj((("ph", "M"), ("name", "process_name"), ("pid", 0),
                            ("args", Obj((("name", "python"),))))))
        elif kind == 1:
            out.append(event(c, clean, "python_function", "X", "train.py(12): step", t,
                             number(c, 3.0, clean)))
        elif kind == 2:
            out.append(event(c, clean, "cpu_instant_event", "i", "x", t, 0))
        elif kind == 3:
            out.append(Obj((("ph", "f"), ("id", corr), ("cat", "ac2g"), ("ts", t))))
        elif kind == 4:                   # a kernel begun and ended: not a complete event
            out.append(event(c, clean, "kernel", c.pick(("B", "E")), c.pick(COMPUTE), t, 1.0))
        elif kind == 5:
            out.append(Obj((("name", "no category"), ("ph", "X"), ("ts", t), ("dur", 1))))
        elif not clean:                   # an event that is not an object
            out.append(c.pick((7, None, "x", [], True, Obj(()))))
    order = random.Random(c.int(0, 2 ** 16)).sample(range(len(out)), len(out)) \
        if c.flag(0.5) else range(len(out))
    return [out[i] for i in order]


def distributed(c, clean: bool):
    pgs = []
    for i in range(c.int(0, 3)):
        ranks = c.pick(([0, 1], [0, 1, 2, 3], [], [1, 0], [5]))
        pairs = [("pg_name", odd(c, clean, c.pick(PG_NAMES))),
                 ("pg_desc", odd(c, clean, c.pick(PG_DESCS))), ("backend_config", "cuda:nccl"),
                 ("pg_size", len(ranks)),
                 ("ranks", odd(c, clean, ranks if c.flag(0.8) else json.dumps(ranks)))]
        pgs.append(Obj(tuple(p for p in pairs if c.flag(0.92))))
    if not clean and c.flag(0.1):
        pgs.insert(0, c.pick((5, "pg", None, [])))
    rank = c.pick((0, 3, 1, 7))
    pairs = [("backend", "nccl"), ("rank", odd(c, clean, rank)),
             ("world_size", odd(c, clean, c.pick((8, 2, 128, 1)))),
             ("pg_count", len(pgs)), ("pg_config", pgs if clean or c.flag(0.9) else Obj(())),
             ("nccl_version", "2.17.1")]
    pairs = [p for p in pairs if c.flag(0.93)]
    if c.flag(0.1):
        pairs.insert(0, ("rank", odd(c, clean, rank + 1)))
    return Obj(tuple(pairs)) if clean or c.flag(0.93) else c.pick(([], "x", None, 5))


def devices(c, clean: bool):
    out = [Obj(tuple(p for p in (("id", odd(c, clean, i)),
                                 ("name", odd(c, clean, c.pick(("NVIDIA H100 80GB HBM3",
                                                                "NVIDIA A100-PG509-200",
                                                                "GPU \u00e9")))),
                                 ("totalGlobalMem", 42297524224), ("numSms", 108))
                     if c.flag(0.93)))
           for i in range(c.int(0, 3))]
    if not clean and c.flag(0.1):
        out.insert(0, c.pick((None, 3, "gpu")))
    return out if clean or c.flag(0.93) else c.pick((Obj(()), "x", None))


def document(c, clean: bool = False) -> Tuple[bytes, str]:
    """(the file's bytes before compression, its name). `clean`: only what PyTorch writes, spelt
    in any valid JSON (escapes, whitespace, keys repeated, 16-19 digit numbers): the compiled
    reader has no reason to decline it."""
    c.odd_rate = c.pick((0.12, 0.0, 0.01, 0.04))   # so that some odd documents are served
    evs = events(c, clean)
    writer = Writer(c.int(0, 2 ** 16), c.int(0, 2), c.int(0, 2))
    if not clean and c.flag(0.1):
        root = evs                        # a bare array of events
    else:
        pairs = [("schemaVersion", 1), ("traceEvents", evs), ("displayTimeUnit", "ms")]
        if c.flag(0.85):
            pairs.insert(c.int(0, 2), ("distributedInfo", distributed(c, clean)))
        if c.flag(0.5):
            pairs.insert(c.int(0, 3), ("deviceProperties", devices(c, clean)))
        if c.flag(0.1):                   # traceEvents twice: the last counts
            decoy = c.pick(([], evs[:1])) if clean else c.pick(([], evs[:1], "x", None, 3))
            pairs.insert(0, ("traceEvents", decoy))
        if c.flag(0.1):
            pairs.insert(0, ("distributedInfo", Obj((("rank", 99),))))
        root = Obj(tuple(pairs))
    body = writer.write(root)
    if c.flag(0.15):                      # more than 64 bytes of it: read by the text road
        body = c.pick((b" ", b"\n", b"\t\r\n", b" " * 70)) + body
    if c.flag(0.1):                       # a BOM first (after whitespace: not JSON)
        body = b"\xef\xbb\xbf" + body if clean or c.flag(0.8) else b" " + b"\xef\xbb\xbf" + body
    if c.flag(0.2):
        body += c.pick((b"\n", b"  \r\n", b"\t"))
    return body, c.pick(NAMES)
