#!/usr/bin/env python3
"""Writes the small Planetoid, OGB and gzip fixtures under testdata/import.

Needs only the standard library (no numpy/scipy): the Planetoid pickles are
emitted opcode by opcode in the layout of the real Python-2 files (protocol 2,
SHORT_BINSTRING/BINSTRING, numpy.core.multiarray._reconstruct, scipy.sparse.csr
csr_matrix via NEWOBJ + BUILD, collections.defaultdict(list) + SETITEMS), and
the .npz members are written as .npy v1.0 files in a zip. Output is
deterministic (gzip mtime 0, fixed zip dates). Run from this directory:
    python3 gen_fixtures.py
"""
import gzip
import io
import os
import struct
import zipfile

HERE = os.path.dirname(os.path.abspath(__file__))


def sbs(s):
    b = s.encode() if isinstance(s, str) else s
    return b"U" + bytes([len(b)]) + b


def binint(v):
    return b"J" + struct.pack("<i", v)


def glob(module, name):
    return b"c" + module.encode() + b"\n" + name.encode() + b"\n"


def ndarray(shape, dtype, data):
    out = glob("numpy.core.multiarray", "_reconstruct") + glob("numpy", "ndarray")
    out += binint(0) + b"\x85" + sbs("b") + b"\x87R"
    out += b"(" + binint(1) + b"(" + b"".join(binint(d) for d in shape) + b"t"
    out += glob("numpy", "dtype") + sbs(dtype) + binint(0) + binint(1) + b"\x87R"
    out += b"(" + binint(3) + sbs("<") + b"NNN" + binint(-1) + binint(-1) + binint(0) + b"tb"
    out += b"\x89" + b"T" + struct.pack("<I", len(data)) + data + b"tb"
    return out


def csr(rows, cols, entries):
    """entries: {row: [(col, value), ...]}"""
    indptr, indices, data = [0], [], []
    for r in range(rows):
        for c, v in sorted(entries.get(r, [])):
            indices.append(c)
            data.append(v)
        indptr.append(len(indices))
    out = glob("scipy.sparse.csr", "csr_matrix") + b")\x81}("
    out += sbs("format") + sbs("csr")
    out += sbs("_shape") + binint(rows) + binint(cols) + b"\x86"
    out += sbs("indptr") + ndarray([len(indptr)], "i4", struct.pack("<%di" % len(indptr), *indptr))
    out += sbs("indices") + ndarray([len(indices)], "i4", struct.pack("<%di" % len(indices), *indices))
    out += sbs("data") + ndarray([len(data)], "f4", struct.pack("<%df" % len(data), *data))
    out += sbs("maxprint") + binint(50) + b"ub"
    return out


def onehot(classes, k):
    flat = []
    for c in classes:
        flat += [1 if j == c else 0 for j in range(k)]
    return ndarray([len(classes), k], "i4", struct.pack("<%di" % len(flat), *flat))


def defaultdict(adj):
    out = glob("collections", "defaultdict") + glob("__builtin__", "list") + b"\x85R("
    for k in sorted(adj):
        out += binint(k) + b"]"
        if adj[k]:
            out += b"(" + b"".join(binint(v) for v in adj[k]) + b"e"
    return out + b"u"


def pickle(body):
    return b"\x80\x02" + body + b"."


def write(path, data):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "wb") as f:
        f.write(data)


def gz(data):
    buf = io.BytesIO()
    with gzip.GzipFile(filename="", mode="wb", fileobj=buf, mtime=0) as f:
        f.write(data)
    return buf.getvalue()


def planetoid():
    # 503 allx rows (2 train, 500 val, 1 more), 3 test rows at ids 506, 503,
    # 505 in file order; 504 is a CiteSeer-like gap. 3 features, 3 classes.
    d = os.path.join(HERE, "planetoid-tiny")
    allx = {v: [(v % 3, float(v + 1))] for v in range(10)}
    tx = {i: [(i, float(10 + i))] for i in range(3)}
    ally = [v % 3 for v in range(503)]
    ty = [(i + 1) % 3 for i in range(3)]
    parts = {
        "x": csr(2, 3, {v: allx[v] for v in range(2)}),
        "y": onehot(ally[:2], 3),
        "allx": csr(503, 3, allx),
        "ally": onehot(ally, 3),
        "tx": csr(3, 3, tx),
        "ty": onehot(ty, 3),
        # 0-3 listed from 0 only; 503-505 listed twice from 503; 506 has a
        # self-loop; 504 is isolated.
        "graph": defaultdict({0: [1, 2, 3], 1: [0], 2: [0, 506], 503: [505, 505], 504: [], 505: [503], 506: [2, 506]}),
    }
    for name, body in parts.items():
        write(os.path.join(d, "ind.tiny." + name), pickle(body))
    write(os.path.join(d, "ind.tiny.test.index"), b"506\n503\n505\n")


def npy(dtype, shape, data):
    shp = "(" + ", ".join(str(s) for s in shape) + ("," if len(shape) == 1 else "") + ")"
    hdr = "{'descr': '%s', 'fortran_order': False, 'shape': %s, }" % (dtype, shp)
    total = 10 + len(hdr) + 1
    hdr += " " * ((64 - total % 64) % 64) + "\n"
    return b"\x93NUMPY\x01\x00" + struct.pack("<H", len(hdr)) + hdr.encode() + data


def npz(path, members):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with zipfile.ZipFile(path, "w", zipfile.ZIP_STORED) as z:
        for name, data in members:
            z.writestr(zipfile.ZipInfo(name + ".npy", date_time=(1980, 1, 1, 0, 0, 0)), data)


def ogb():
    # 5 nodes; edges with a self-loop (1,1) and a duplicate (0,1).
    edges = [(0, 1), (1, 2), (2, 0), (3, 4), (1, 1), (0, 1)]
    feats = [[0.5, -1.0], [1.5, 2.0], [0.0, 0.25], [3.0, 4.0], [-2.5, 1.0]]
    labels = [0, 1, 2, 1, 0]
    split = {"train": [1, 0], "valid": [2], "test": [4, 3]}
    d = os.path.join(HERE, "ogb-tiny")
    raw = os.path.join(d, "raw")
    write(os.path.join(raw, "edge.csv.gz"), gz("".join("%d,%d\n" % e for e in edges).encode()))
    write(os.path.join(raw, "num-node-list.csv.gz"), gz(b"5\n"))
    write(os.path.join(raw, "num-edge-list.csv.gz"), gz(b"6\n"))
    write(os.path.join(raw, "node-feat.csv.gz"), gz("".join(",".join(repr(x) for x in r) + "\n" for r in feats).encode()))
    write(os.path.join(raw, "node-label.csv.gz"), gz("".join("%d\n" % l for l in labels).encode()))
    for name in ("ogb-tiny", "ogb-tiny-npz"):
        for s, ids in split.items():
            write(os.path.join(HERE, name, "split", "time", s + ".csv.gz"), gz("".join("%d\n" % i for i in ids).encode()))
    # The binary variant (ogbn-papers100M's): float32 features, float64
    # labels with NaN for the unlabelled node 4.
    raw = os.path.join(HERE, "ogb-tiny-npz", "raw")
    src = [e[0] for e in edges]
    dst = [e[1] for e in edges]
    npz(os.path.join(raw, "data.npz"), [
        ("edge_index", npy("<i8", [2, len(edges)], struct.pack("<%dq" % (2 * len(edges)), *(src + dst)))),
        ("num_nodes_list", npy("<i8", [1], struct.pack("<q", 5))),
        ("num_edges_list", npy("<i8", [1], struct.pack("<q", len(edges)))),
        ("node_feat", npy("<f4", [5, 2], struct.pack("<10f", *[x for r in feats for x in r]))),
    ])
    lab = [0.0, 1.0, 2.0, 1.0, float("nan")]
    npz(os.path.join(raw, "node-label.npz"), [("node_label", npy("<f8", [5, 1], struct.pack("<5d", *lab)))])


def gzipped():
    # gzip copies of the plain fixtures, to import alike.
    for src, dst in [("linqs-tiny/tiny.content", "linqs-tiny-gz/tiny.content.gz"),
                     ("linqs-tiny/tiny.cites", "linqs-tiny-gz/tiny.cites.gz"),
                     ("snap-tiny.txt", "snap-tiny.txt.gz"),
                     ("geomgcn-dense/out1_node_feature_label.txt", "geomgcn-dense-gz/out1_node_feature_label.txt.gz"),
                     ("geomgcn-dense/out1_graph_edges.txt", "geomgcn-dense-gz/out1_graph_edges.txt.gz")]:
        with open(os.path.join(HERE, src), "rb") as f:
            write(os.path.join(HERE, dst), gz(f.read()))
    # A gzip stream cut short.
    with open(os.path.join(HERE, "snap-tiny.txt"), "rb") as f:
        whole = gz(f.read() * 50)
    write(os.path.join(HERE, "snap-truncated.txt.gz"), whole[: len(whole) // 2])


planetoid()
ogb()
gzipped()
