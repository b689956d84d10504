#!/usr/bin/env python3
"""Differential test: BSO's RNG, statistics and float formatting against numpy and Python.

Drives tests/numpy_oracle_peer.c with a list of commands, computes the same with numpy's
default_rng / np.sum / np.mean / np.var and Python's repr, and requires every line to be equal.
Exits 77 (ctest: skipped) when numpy is not installed.
"""
import random
import struct
import subprocess
import sys

try:
    import numpy as np
except ImportError:
    print("numpy is not installed: skipping (apt-get install python3-numpy)")
    sys.exit(77)


def hexbits(x: float) -> str:
    return "%016x" % struct.unpack("<Q", struct.pack("<d", float(x)))[0]


def json_state(g) -> str:
    import json
    return json.dumps(g.bit_generator.state)


def main() -> int:
    peer = sys.argv[1]
    cmds, expect = [], []
    rnd = random.Random(20261122)

    def seeded(seed):
        cmds.append("seed %d" % seed)
        return np.random.default_rng(seed)

    # Seeding, raw output and the state text, over small, 32-bit and 64-bit seeds.
    for seed in [0, 1, 2, 42, 123456, 2**31 - 1, 2**32 - 1, 2**32, 2**40 + 5, 2**63 - 1]:
        g = seeded(seed)
        cmds.append("state")
        expect.append(json_state(g))
        cmds.append("next64 50")
        expect += [str(v) for v in g.bit_generator.random_raw(50)]
        cmds.append("state")
        expect.append(json_state(g))
    # Entropy given as several 32-bit words (how unseeded jobs are seeded), including more
    # words than the SeedSequence pool.
    for n in [1, 3, 4, 5, 8]:
        words = [rnd.getrandbits(32) for _ in range(n)]
        while len(words) > 1 and words[-1] == 0:
            words.pop()
        value = sum(w << (32 * i) for i, w in enumerate(words))
        cmds.append("seedwords " + " ".join(map(str, words)))
        g = np.random.default_rng(value)
        cmds.append("next64 5")
        expect += [str(v) for v in g.bit_generator.random_raw(5)]

    # Standard normals, a million of them over several seeds so the ziggurat's tail is hit.
    for seed in [1, 7, 99, 2024, 31337]:
        g = seeded(seed)
        cmds.append("normal 200000")
        expect += [hexbits(v) for v in g.standard_normal(200000)]
        cmds.append("state")
        expect.append(json_state(g))
    # normal(loc, scale), including scale 0 (an arm with infinite precision).
    g = seeded(5)
    for loc, scale in [(0.0, 1.0), (-5069.230769230769, 72.6), (3.5, 0.0), (1e6, 1e-3)]:
        cmds.append("gauss %s %s 100" % (hexbits(loc), hexbits(scale)))
        expect += [hexbits(g.normal(loc, scale)) for _ in range(100)]

    # Bounded integers over 32- and 64-bit ranges, and choice without replacement of every
    # population size an arm set can have, interleaved so that the 32-bit buffer carries over.
    g = seeded(11)
    for mx in [1, 2, 3, 6, 100, 2**31, 2**32 - 2]:
        cmds.append("bounded %d 200" % mx)
        expect += [str(v) for v in g.integers(0, mx, size=200, endpoint=True, dtype=np.uint64)]
    for n in list(range(1, 40)) + [100, 256, 1000]:
        cmds.append("choice %d" % n)
        expect.append(" ".join(str(v) for v in g.choice(np.arange(n), n, replace=False)))
        cmds.append("state")
        expect.append(json_state(g))
    cmds.append("double 100")
    expect += [hexbits(v) for v in g.random(100)]

    # Pairwise sums: sizes around every unrolling and splitting boundary, values that round.
    for n in list(range(1, 40)) + [63, 64, 65, 127, 128, 129, 255, 256, 257, 1000, 5000]:
        a = np.array([rnd.uniform(-1e4, 1e4) * 10 ** rnd.randint(-3, 3) for _ in range(n)])
        cmds.append("stats " + " ".join(hexbits(x) for x in a))
        expect.append("%s %s %s" % (hexbits(np.sum(a)), hexbits(np.mean(a)), hexbits(np.var(a))))

    # Python's repr of floats: random bit patterns and the awkward decimal boundaries.
    specials = [0.0, -0.0, 1.0, 0.1, 0.5, 3000.0, 48000.0, 23157.06, 1e16, 9999999999999998.0,
                1e-4, 1e-5, 0.0001234, 123456789012345.6, 5e-324, 1.7976931348623157e308,
                float("inf"), float("-inf"), 2.0 / 3.0, 1e22, 1.5e-7, -123.456]
    for x in specials + [struct.unpack("<d", struct.pack("<Q", rnd.getrandbits(64)))[0]
                         for _ in range(3000)]:
        if x != x:
            continue  # NaN payloads print alike in both; not interesting
        cmds.append("repr " + hexbits(x))
        expect.append(repr(x))

    res = subprocess.run([peer], input="\n".join(cmds) + "\n", capture_output=True, text=True)
    if res.returncode != 0:
        print("peer failed:", res.stderr)
        return 1
    got = res.stdout.splitlines()
    if len(got) != len(expect):
        print("line count differs: got %d, expected %d" % (len(got), len(expect)))
        return 1
    bad = [(i, g_, e) for i, (g_, e) in enumerate(zip(got, expect)) if g_ != e]
    for i, g_, e in bad[:10]:
        print("line %d: got %r expected %r" % (i, g_, e))
    print("vs_numpy: %d values compared with numpy %s, %d differ" % (len(expect), np.__version__,
                                                                     len(bad)))
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
