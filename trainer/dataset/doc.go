// Package dataset is a graph dataset on disk and in memory (docs/architecture.md
// section 8): a directory holding meta.json and NumPy .npy arrays (CSR
// indptr and indices, float32 row-major features, labels, and the
// train/val/test splits), the format IGB and most Python GNN tools use.
//
// LoadGraph reads the structure, labels and splits into a Graph, checking
// every length and index against meta.json; features, which can be far
// larger, are read row by row with a FeatureReader. ArrayWriter, WriteMeta,
// StageDir and Stage.Commit write a dataset so that a failed or interrupted
// build leaves nothing under the name asked for (a killed build's staging
// directory is removed by the next). ImportLINQS, ImportSNAP,
// ImportGeomGCN, ImportPlanetoid and ImportOGB convert public formats
// (plain or gzip text, Planetoid's pickles, OGB's CSV and npz), Synth
// generates a power-law graph with class-correlated features that streams
// to disk and scales past memory, and InfoOf describes a dataset (sizes,
// degrees, skew).
//
// Units: vertex and edge counts (an undirected edge is stored both ways
// and counts as two CSR entries), bytes in files, float32 features.
package dataset
