#!/usr/bin/env python3
"""Operand reuse of the tensor-core instructions in a cubin, without cuobjdump.

    nvcc ... -gencode arch=compute_90,code=sm_90 -cubin -o k.cubin k.cu
    python3 bench/cubin_reuse.py k.cubin [name-filter]

For each kernel (.text.<name> section): its instruction count, its HMMA count, and per group
of 128 HMMAs in address order (an mma.sync main loop of 128 MMAs per K tile is one group) how
many carry an operand-reuse flag. ptxas schedules the same main loop differently in different
kernel bodies (bench/JOURNAL.md g19, g28): a drop here (112 -> 73 of 128) went with a 9% slower
kernel. Reads SASS control bits of sm_80/sm_90 encodings: 16-byte instructions, opcode in
the low 12 bits (HMMA: 0x23c), reuse flags in bits 58-61 of the high word.
"""
import struct
import sys


def text_sections(path):
    d = open(path, "rb").read()
    if d[:4] != b"\x7fELF":
        sys.exit(f"{path}: not an ELF cubin")
    shoff = struct.unpack_from("<Q", d, 0x28)[0]
    shentsize, shnum, shstrndx = struct.unpack_from("<HHH", d, 0x3A)
    secs = [struct.unpack_from("<IIQQQQ", d, shoff + i * shentsize) for i in range(shnum)]
    names = secs[shstrndx][4]
    for name, _, _, _, off, size in secs:
        n = d[names + name : d.index(b"\0", names + name)].decode()
        if n.startswith(".text."):
            yield n[6:], d[off : off + size]


def main():
    if len(sys.argv) < 2:
        sys.exit(__doc__)
    flt = sys.argv[2] if len(sys.argv) > 2 else ""
    for name, code in text_sections(sys.argv[1]):
        if flt not in name:
            continue
        reuse = []
        for i in range(0, len(code), 16):
            lo, hi = struct.unpack_from("<QQ", code, i)
            if lo & 0xFFF == 0x23C:
                reuse.append(((hi >> 58) & 0xF) != 0)
        groups = [sum(reuse[k : k + 128]) for k in range(0, len(reuse), 128)]
        print(f"{len(code) // 16:6d} instructions, {len(reuse):4d} HMMA, reuse per 128: {groups}  {name}")


if __name__ == "__main__":
    main()
