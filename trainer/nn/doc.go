// Package nn holds the GNN models gnnplan trains: GraphSAGE with the mean
// aggregator (Hamilton et al. 2017), GCN (Kipf and Welling 2017) and GAT
// (Velickovic et al. 2018), defined as DGL's SAGEConv, GraphConv and
// GATConv define them and computed on sampled blocks (the sampler's
// output: per hop, destination vertices first among the sources), with
// hand-written backward passes, Glorot initialisation, dropout, softmax
// cross-entropy and Adam (docs/architecture.md section 10).
//
// Every computation goes through a kernels.Backend, so the same model runs
// on the CPU backend or a device backend. Matrices are float32 rows of
// vertices; parameters and their gradients live on the backend.
//
// GCN's normalisation uses each vertex's degree in the whole graph plus
// its self-loop, 1/sqrt((d_i+1)(d_u+1)), so a block sampled with every
// neighbour computes exactly the full-graph GCN of the paper; when a
// destination keeps k of its d neighbours, their weights are scaled by
// d/k, an unbiased estimate of the full sum.
package nn
