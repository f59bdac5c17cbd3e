#!/usr/bin/env python3
"""PyTorch (CPU) reference for gnnplan's mini-batch GraphSAGE training step.

The side-by-side anchor of the trainer benchmark: the same workload as the
Go trainer (trainer/train.go), written as a competent PyTorch user would
write it with plain torch + numpy (no DGL/PyG), so gnnplan's samples/s can
be read against it. It mirrors, step by step:

  sample   trainer/sample/sampler.go: uniform neighbour sampling without
           replacement, fanouts seeds' hop first; a vertex of degree <=
           fanout keeps every neighbour (fanout -1: all). DGL blocks: each
           hop's Dst is the previous hop's Src, and Src is Dst followed by
           the vertices first reached at this hop, deduplicated. Vectorised
           over whole frontiers: Floyd's k-subset draw run column by column
           for every vertex at once, and dedup through a dense N-entry
           vertex->local map (reset after each batch), as the Go sampler.
  gather   features of the outermost block's Src (index_select), seeds'
           labels. --gather in-place instead has the first layer read the
           full feature matrix by vertex id (embedding_bag over global ids),
           the analogue of the Go trainer's ReadsFeaturesInPlace.
  fwd/bwd  trainer/nn/{model,sage}.go: SAGE-mean layers
           y = x_dst W_self + mean_{sampled nbrs} x_src W_neigh + b (mean of
           no neighbours = 0), W = [W_self; W_neigh] one (2in x out) param,
           each half Glorot-uniform with ReLU's gain, bias 0. Aggregate first
           ([x_dst | mean x] @ W) when in <= out, transform first (DGL's
           lin_before_mp) when in > out. ReLU between layers, inverted
           dropout on the hidden layers' inputs (--input-dropout on the
           features, default 0) as a rand_like mask: F.dropout's bernoulli_
           is serial on CPU, 3x slower. Mean = F.embedding_bag(mode="mean"),
           the fastest CPU segment mean in torch 1.13 (faster than sparse
           COO/CSR mm, index_add_, segment_reduce). Loss: F.cross_entropy,
           mean over labelled seeds.
  optim    torch.optim.Adam(lr, weight_decay) (L2 added to the gradient).

Sampling is synchronous here (sample_s is time spent sampling); the Go
trainer samples ahead on Workers goroutines and counts only the wait.
--threads bounds OpenMP and OpenBLAS; OMP_WAIT_POLICY defaults to PASSIVE
(idle workers sleep, as idle goroutines park): with spinning workers a
shared machine ran forward/backward 3-4x slower. Set the variables to
override either.

Run by the Go benchmark with Debian's interpreter (numpy, torch CPU):
  /usr/bin/python3 trainer/testdata/torch_sage.py --dataset DIR \
      --fanouts 25,10 --batch 1024 --hidden 256 --dropout 0.5 --lr 0.003 \
      --weight-decay 5e-4 --threads 2 --warmup 3 --batches 20 --seed 1
It prints one JSON object on stdout (keys listed in main). Timed batches
follow the warmup batches; batches are consecutive mini-batches of the
shuffled training split, the last one of an epoch possibly smaller,
reshuffled every epoch. gemm_flops_per_batch counts 2*m*n*k over the dense
products of forward and backward as sage.go issues them (see gemm_flops).
"""
import argparse
import json
import os
import statistics
import sys
import time


def parse_args():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--dataset", required=True)
    p.add_argument("--fanouts", default="25,10")
    p.add_argument("--batch", type=int, default=1024)
    p.add_argument("--hidden", type=int, default=256)
    p.add_argument("--dropout", type=float, default=0.5)
    p.add_argument("--input-dropout", type=float, default=0.0)
    p.add_argument("--lr", type=float, default=0.003)
    p.add_argument("--weight-decay", type=float, default=5e-4)
    p.add_argument("--threads", type=int, default=1)
    p.add_argument("--warmup", type=int, default=3)
    p.add_argument("--batches", type=int, default=20)
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--gather", choices=["copy", "in-place"], default="copy")
    p.add_argument("--row-normalize", action="store_true")
    return p.parse_args()


ARGS = parse_args()
# OpenBLAS (torch's GEMM on Debian) has its own thread pool: bound it before
# torch loads it, as set_num_threads only reaches OpenMP.
for var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(var, str(ARGS.threads))
# Idle OpenMP workers sleep instead of spinning (as idle goroutines park):
# on a shared machine spinning workers cost 3-4x in forward/backward.
os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")

import numpy as np  # noqa: E402
import torch  # noqa: E402
import torch.nn.functional as F  # noqa: E402


class Sampler:
    """Uniform neighbour sampler over an in-memory CSR graph (sampler.go)."""

    def __init__(self, indptr, indices, fanouts, rng):
        self.indptr, self.indices, self.fanouts, self.rng = indptr, indices, fanouts, rng
        self.local = np.full(len(indptr) - 1, -1, dtype=np.int64)  # vertex -> local index

    def sample(self, seeds):
        """Returns blocks innermost first, each (offsets, src_idx, num_dst),
        and the vertex list: every block's Src is a prefix of it."""
        local, indptr = self.local, self.indptr
        local[seeds] = np.arange(len(seeds))
        parts, n_all, blocks = [seeds], len(seeds), []
        for fanout in self.fanouts:
            dst = np.concatenate(parts) if len(parts) > 1 else parts[0]
            nd = n_all
            start = indptr[dst]
            deg = indptr[dst + 1] - start
            cnt = deg if fanout < 0 else np.minimum(deg, fanout)
            offsets = np.zeros(nd + 1, dtype=np.int64)
            np.cumsum(cnt, out=offsets[1:])
            ne = int(offsets[-1])
            row = np.repeat(np.arange(nd), cnt)
            pos = np.arange(ne) - offsets[row]  # every neighbour, in CSR order
            big = np.flatnonzero(deg > cnt)
            if len(big):  # k distinct positions of [0, deg) by Floyd, all rows at once
                k, d = fanout, deg[big]
                picked = np.empty((len(big), k), dtype=np.int64)
                for i in range(k):
                    j = d - k + i
                    t = (self.rng.random(len(big)) * (j + 1)).astype(np.int64)
                    if i:
                        t = np.where((picked[:, :i] == t[:, None]).any(axis=1), j, t)
                    picked[:, i] = t
                pos[(offsets[big][:, None] + np.arange(k)).ravel()] = picked.ravel()
            nbr = self.indices[start[row] + pos].astype(np.int64, copy=False)
            new = nbr[local[nbr] < 0]
            # Dedup without sorting: each new vertex keeps the one slot whose
            # index survived in local[], then gets the next local indices.
            slot = np.arange(len(new))
            local[new] = slot
            fresh = new[local[new] == slot]
            local[fresh] = np.arange(n_all, n_all + len(fresh))
            parts.append(fresh)
            n_all += len(fresh)
            blocks.append((offsets, local[nbr], nd))
        vertices = np.concatenate(parts)
        local[vertices] = -1
        return blocks, vertices


class SAGE(torch.nn.Module):
    """GraphSAGE-mean stack as trainer/nn/model.go and sage.go."""

    def __init__(self, dims, dropout, input_dropout):
        super().__init__()
        self.dims, self.dropout, self.input_dropout = dims, dropout, input_dropout
        self.w, self.b = torch.nn.ParameterList(), torch.nn.ParameterList()
        gain = torch.nn.init.calculate_gain("relu")
        for fin, fout in zip(dims, dims[1:]):
            w = torch.empty(2 * fin, fout)
            torch.nn.init.xavier_uniform_(w[:fin], gain)  # W_self
            torch.nn.init.xavier_uniform_(w[fin:], gain)  # W_neigh
            self.w.append(torch.nn.Parameter(w))
            self.b.append(torch.nn.Parameter(torch.zeros(fout)))

    def forward(self, blocks, x, feats=None):
        """blocks innermost first, as the sampler returns them; x holds the
        outermost Src's features, or, with feats (in-place mode), the first
        layer reads feats by the global ids its block carries."""
        L = len(self.w)
        h = x
        for l in range(L):
            offsets, src_idx, nd, dst_ids = blocks[L - 1 - l]
            fin, fout = self.dims[l], self.dims[l + 1]
            p = self.input_dropout if l == 0 else self.dropout
            if p > 0:  # inverted dropout; 3x F.dropout's speed (its bernoulli_ is serial)
                h = h * torch.rand_like(h).ge_(p).mul_(1 / (1 - p))
            w, b = self.w[l], self.b[l]
            if fin > fout:  # transform, then aggregate the narrower rows
                agg = F.embedding_bag(src_idx, h @ w[fin:], offsets, mode="mean", include_last_offset=True)
                h = torch.addmm(b, h[:nd], w[:fin]) + agg
            else:
                if l == 0 and feats is not None:
                    x_dst, table = feats.index_select(0, dst_ids), feats
                else:
                    x_dst, table = h[:nd], h
                agg = F.embedding_bag(src_idx, table, offsets, mode="mean", include_last_offset=True)
                h = torch.addmm(b, torch.cat([x_dst, agg], 1), w)
            if l < L - 1:
                h = F.relu(h)
        return h


def gemm_flops(dims, sizes):
    """2*m*n*k over sage.go's GEMMs for one batch. sizes[l] = (num_dst,
    num_src) of layer l's block (outermost first). The first layer computes
    no input gradient (the features are constants), as in Go and autograd."""
    total = 0
    for l, (nd, ns) in enumerate(sizes):
        fin, fout = dims[l], dims[l + 1]
        need_input = l > 0
        if fin > fout:  # fwd: x W_neigh, x_dst W_self; bwd: both weight grads (+ both input grads)
            per = 2 * (ns + nd) * fin * fout
            total += per * (3 if need_input else 2)
        else:  # fwd: [x_dst|mean] W; bwd: weight grad (+ dz)
            per = 2 * nd * 2 * fin * fout
            total += per * (3 if need_input else 2)
    return total


def main():
    a = ARGS
    torch.set_num_threads(a.threads)
    torch.manual_seed(a.seed)
    rng = np.random.default_rng(a.seed)
    fanouts = [int(f) for f in a.fanouts.split(",")]

    d = a.dataset
    meta = json.load(open(os.path.join(d, "meta.json")))
    indptr = np.load(os.path.join(d, "indptr.npy")).astype(np.int64, copy=False)
    indices = np.load(os.path.join(d, "indices.npy"))  # int32 or int64, in memory as Go holds it
    feats = torch.from_numpy(np.load(os.path.join(d, "features.npy")))
    if a.row_normalize:
        feats.div_(feats.sum(1, keepdim=True).clamp_min(1e-12))
    labels = torch.from_numpy(np.load(os.path.join(d, "labels.npy")).astype(np.int64, copy=False))
    train = np.load(os.path.join(d, "train_idx.npy")).astype(np.int64, copy=False)

    dims = [meta["feature_dim"]] + [a.hidden] * (len(fanouts) - 1) + [meta["num_classes"]]
    model = SAGE(dims, a.dropout, a.input_dropout)
    opt = torch.optim.Adam(model.parameters(), lr=a.lr, weight_decay=a.weight_decay)
    sampler = Sampler(indptr, indices, fanouts, rng)
    in_place = a.gather == "in-place" and dims[0] <= dims[1] and a.input_dropout == 0

    order, cursor = rng.permutation(train), 0
    st = dict(sample=0.0, gather=0.0, fb=0.0, opt=0.0)
    batch_s, losses, n_in, n_edges, flops, seeds_timed = [], [], [], [], [], 0
    for step in range(a.warmup + a.batches):
        timed = step >= a.warmup
        t0 = time.perf_counter()
        if cursor >= len(order):
            order, cursor = rng.permutation(train), 0
        seeds = order[cursor:cursor + a.batch]
        cursor += len(seeds)
        blocks, vertices = sampler.sample(seeds)
        t1 = time.perf_counter()
        tblocks = []
        for h, (offsets, src_idx, nd) in enumerate(blocks):
            outer = h == len(blocks) - 1
            idx = torch.from_numpy(vertices[src_idx] if outer and in_place else src_idx)
            dst_ids = torch.from_numpy(vertices[:nd]) if outer and in_place else None
            tblocks.append((torch.from_numpy(offsets), idx, nd, dst_ids))
        n_src = len(vertices)
        x = None if in_place else feats.index_select(0, torch.from_numpy(vertices))
        y = labels.index_select(0, torch.from_numpy(seeds))
        t2 = time.perf_counter()
        logits = model(tblocks, x, feats if in_place else None)
        loss = F.cross_entropy(logits, y, ignore_index=-1)
        loss.backward()
        t3 = time.perf_counter()
        opt.step()
        opt.zero_grad(set_to_none=True)
        t4 = time.perf_counter()
        losses.append(loss.item())
        if not timed:
            continue
        st["sample"] += t1 - t0
        st["gather"] += t2 - t1
        st["fb"] += t3 - t2
        st["opt"] += t4 - t3
        batch_s.append(t4 - t0)
        seeds_timed += len(seeds)
        n_in.append(n_src)
        n_edges.append(sum(len(b[1]) for b in blocks))
        # layer l reads block L-1-l: (num_dst, num_src); num_src = next block's num_dst
        nds = [b[2] for b in blocks] + [n_src]
        flops.append(gemm_flops(dims, [(nds[h], nds[h + 1]) for h in reversed(range(len(blocks)))]))

    # The first layer's mean alone (embedding_bag over the feature matrix in
    # place, or over the gathered rows), on the last batch's block: the
    # median of 5 runs back to back.
    first_mean = []
    offsets, src_idx, nd, dst_ids = tblocks[-1]
    table = feats if in_place else x
    with torch.no_grad():
        for _ in range(5):
            t0 = time.perf_counter()
            F.embedding_bag(src_idx, table, offsets, mode="mean", include_last_offset=True)
            first_mean.append(time.perf_counter() - t0)

    out = {
        "torch_version": torch.__version__,
        "first_mean_s": statistics.median(first_mean),
        "threads": torch.get_num_threads(),
        "batches": len(batch_s),
        "samples_per_s": seeds_timed / sum(batch_s) if batch_s else 0.0,
        "sample_s": st["sample"],
        "gather_s": st["gather"],
        "forward_backward_s": st["fb"],
        "optimizer_s": st["opt"],
        "batch_s_median": statistics.median(batch_s) if batch_s else 0.0,
        "loss_first": losses[0] if losses else None,
        "loss_last": losses[-1] if losses else None,
        "input_vertices_mean": statistics.fmean(n_in) if n_in else 0.0,
        "sampled_edges_mean": statistics.fmean(n_edges) if n_edges else 0.0,
        "gemm_flops_per_batch": statistics.fmean(flops) if flops else 0.0,
        "gather_mode": "in-place" if in_place else "copy",
        "fanouts": fanouts,
        "batch_size": a.batch,
        "dims": dims,
    }
    json.dump(out, sys.stdout)
    sys.stdout.write("\n")


if __name__ == "__main__":
    main()
