// relu -> neg on a 43 MB tensor: each op alone fits L1 sharded over 64 cores, but the edge
// needs the relu's shard resident while the neg writes its own, and no reshard of a tensor
// this size fits either. ShardSolver fails the chain on that edge and both ops stay in DRAM.
#dram = #ttnn.buffer_type<dram>
#big = #ttnn.ttnn_layout<(d0, d1) -> (d0, d1), <1x1>, memref<128x164x!ttcore.tile<32x32, bf16>, #dram>, <interleaved>>
func.func @forward(%x: tensor<4096x5248xbf16, #big>) -> tensor<4096x5248xbf16, #big> {
  %0 = "ttnn.relu"(%x) : (tensor<4096x5248xbf16, #big>) -> tensor<4096x5248xbf16, #big> loc("relu")
  %1 = "ttnn.neg"(%0) : (tensor<4096x5248xbf16, #big>) -> tensor<4096x5248xbf16, #big> loc("neg")
  return %1 : tensor<4096x5248xbf16, #big>
}
