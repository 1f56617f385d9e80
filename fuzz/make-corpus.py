#!/usr/bin/env python3
"""Writes the committed seed corpus: fuzz/corpus/{program,api_sequence}/ (run from the repo root after
`bash ffi-tests/build-device.sh`). Inputs follow the formats in fuzz/src/harness.rs."""
import os, random
random.seed(7)
dev = "build/ffi-tests/device"
out = "fuzz/corpus/program"
os.makedirs(out, exist_ok=True)
def w(d, name, data):
    open(os.path.join(d, name), "wb").write(bytes(data))
imgs = {f: open(os.path.join(dev, f), "rb").read() for f in sorted(os.listdir(dev)) if f.endswith(".bc")}
so = open("fuzz/seeds/tiny.so", "rb").read()
for f, b in imgs.items():
    if f.startswith(("kernels", "lanes", "seed_a.nvptx64")):
        w(out, "raw-" + f, b"\x00" + b)
w(out, "raw-tiny.so", b"\x00" + so)
k = imgs["seed_a.nvptx64.bc"]
w(out, "trunc-half", b"\x00" + k[: len(k) // 2])
w(out, "trunc-64", b"\x00" + k[:64])
w(out, "trunc-magic", b"\x00" + k[:4])
w(out, "trunc-elf", b"\x00" + so[:100])
for i in range(4):
    b = bytearray(k)
    for _ in range(3):
        b[random.randrange(4, len(b))] ^= 1 << random.randrange(8)
    w(out, f"flip-{i}", b"\x00" + b)
wrapper = (0x0B17C0DE).to_bytes(4, "little") + (0).to_bytes(4, "little") + (20).to_bytes(4, "little") + len(k).to_bytes(4, "little") + (7).to_bytes(4, "little") + k
w(out, "wrapped", b"\x00" + wrapper)
w(out, "empty", b"\x00")
for i in range(8):  # mutate-the-middle mode: seed i, offset, a small mask
    at = random.randrange(65536)
    w(out, f"xor-{i}", bytes([0x80 | i]) + at.to_bytes(2, "little") + bytes(random.randrange(256) for _ in range(4)))
    w(out, f"xor-{i}-zero", bytes([0x80 | i]))

out = "fuzz/corpus/api_sequence"
os.makedirs(out, exist_ok=True)
L = 0x10  # "a live handle of the expected kind" when one exists
seqs = {
    "queue-event": [0, L, 2, L, 5, L, 6, L, 1, L, 4, L, 3, L, 1, L, 4, L],
    "alloc-copy-fill-free": [7, L, 1, 2, 0, 1, 7, L, 2, 2, 0, 2, 9, 1, 0, 1, 2, 0, 0, 0, 0, 0, 0, 0, L, L, 0,
                             10, 0, 1, 0, 0, 0, 0x10, 0, 2, 8, 0, 0, 0, 8, 2, 0, 0, 8, 3],
    "program-launch": [0, L, 7, L, 1, 2, 0, 1, 14, L, 0, 0, 16, L, 1, 0, 16, L, 2, 0, 17, L, L, L, 31, 0, 0, 0, 3,
                       0, 0, 1, 1, 0, 1, 0, 0, 0, 4, L, 15, L, 15, L, 16, L, 0, 0],
    "reinit-stale": [0, L, 2, L, 14, L, 0, 0, 19, 20, 20, 1, L, 3, L, 15, L, 4, L, 19, 0, L, 11, 1, 1, 8, L],
    "info": [11, 0, 0, 8, L, 11, 1, 2, 64, L, 11, 1, 0xF5, 1, 0, 0, 0, 8, L, 0, L, 11, 2, 1, 4, L, 2, L,
             11, 3, 1, 1, L, 11, 5, 2, 8, 1, 0, 1, 0],
    "hostfn-wait": [0, L, 0, L, 18, L, 0, 2, L, 6, L, 2, L, 0x01, 18, L, 0xFF, 4, L],
    "register": [21, L, 2, 0, 0, 0x40, 0, 0, 21, L, 2, 0, 0, 0, 0, 1, 21, 0, 0, 0, 0, 0, 0, 0],
}
for n, s in seqs.items():
    w(out, n, s)
for i in range(6):
    w(out, f"random-{i}", bytes(random.randrange(256) for _ in range(96)))
