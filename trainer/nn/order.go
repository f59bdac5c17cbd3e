package nn

// flopsPerRowByte is how many floating-point operations of a product cost
// as much as reading one byte of scattered feature rows in an aggregation:
// a machine's GEMM rate over its rate of gathering rows. About 100 GFLOP/s
// against 6 GB/s on the 2-core machine of docs/benchmarks.md, about 60
// TFLOP/s (FP32) against 3 TB/s on an H100: both near 16.
const flopsPerRowByte = 16

// transformFirst decides the order of a GraphSAGE or GCN layer from in to
// out features on one block: multiply every source by the weights and
// aggregate the narrower products (DGL's lin_before_mp), or aggregate the
// inputs and multiply only the destinations. DGL transforms first whenever
// in > out, which is right on a whole graph, where sources and
// destinations are the same vertices; on a sampled block the sources
// outnumber the destinations several times, and transforming them all can
// cost more than the wider aggregation saves (a 1024-d layer into 256 on
// 11k destinations of 96k sources: 112 GFLOP against 23 per step). So each
// order is costed, products (forward and weight gradient) as FLOPs and
// aggregation as bytes of rows read at flopsPerRowByte, and the cheaper
// one taken; a tie aggregates first. tfRows and afRows are the rows the
// product multiplies in each order (counting a 2in-wide product twice),
// edges the aggregation's edges. With in <= out and tfRows >= afRows,
// which every block has, it aggregates first.
func transformFirst(in, out int, tfRows, afRows, edges int) bool {
	i, o := float64(in), float64(out)
	tf := 2*2*i*o*float64(tfRows) + flopsPerRowByte*4*float64(edges)*o
	af := 2*2*i*o*float64(afRows) + flopsPerRowByte*4*float64(edges)*i
	return tf < af
}

// forcedOrder is a layer's order where the costs do not decide it: a
// layer reading the features in place (g.DstRows) aggregates first, its
// sources being the whole matrix; otherwise order says (1: transform
// first, -1: aggregate first).
func forcedOrder(kind string, g *Block, order int) bool {
	if g.DstRows != nil {
		if order > 0 {
			panic("nn: a " + kind + " layer that transforms first cannot read the features in place")
		}
		return false
	}
	return order > 0
}
