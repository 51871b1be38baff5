#!/usr/bin/env python3
"""Cuts seeds for the `terms` fuzz target out of small indices that WriteTermsIndex.java wrote
(test/unit/lucene/java/rfs/lucenetest, run with a DOCS argument of 700), one per postings format:

    make_terms_seeds.py INDEX_DIR SEED_FILE

The seed is laid out as terms_fuzz.cpp reads it: the format, the dictionary version, max_doc / 8,
the lengths of the field entries and of `.tim`, then the field entries (from `.tmd` after its
headers, or `.tim`'s directory before Lucene 8.6), `.tim` and `.doc`."""
import os
import struct
import sys

FORMATS = ["Lucene50", "Lucene84", "Lucene90", "Lucene99", "Lucene912", "Lucene101",
           "Lucene103", "Lucene104"]


def index_header_end(data, at=0):
    """The offset after a Lucene index header (magic, name, version, id, suffix) at `at`."""
    name_length = data[at + 4]
    at += 4 + 1 + name_length + 4 + 16
    return at + 1 + data[at]


def vint_end(data, at):
    while data[at] & 0x80:
        at += 1
    return at + 1


def main(index_dir, seed_file):
    names = os.listdir(index_dir)
    tim_name = next(n for n in names if n.endswith(".tim"))
    base = tim_name[:-4]
    fmt = base.split("_")[2]
    read = lambda ext: open(os.path.join(index_dir, base + ext), "rb").read()
    tim, doc = read(".tim"), read(".doc")
    version = struct.unpack(">i", tim[5 + tim[4]:9 + tim[4]])[0]
    if os.path.exists(os.path.join(index_dir, base + ".tmd")):
        tmd = read(".tmd")
        at = index_header_end(tmd)
        at = vint_end(tmd, index_header_end(tmd, at))  # postings header, then its block size
        entries = tmd[at:len(tmd) - 16]
    else:
        directory = struct.unpack(">q", tim[len(tim) - 24:len(tim) - 16])[0]
        entries = tim[directory:len(tim) - 24]
    max_doc = 700
    header = bytes([FORMATS.index(fmt), version, max_doc // 8 + 1,
                    len(entries) >> 8, len(entries) & 255, len(tim) >> 8, len(tim) & 255])
    with open(seed_file, "wb") as out:
        out.write(header + entries + tim + doc)


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])
