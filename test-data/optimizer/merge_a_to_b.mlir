// An A->B merge: chain A (relu -> gelu) runs first; chain B (matmul -> add -> relu) starts
// after an exp that is in no chain, and its add reads A's output on operand 1. With chain
// merging A's output stays in L1 until the add instead of a DRAM round trip.
#dram = #ttnn.buffer_type<dram>
#l = #ttnn.ttnn_layout<(d0, d1) -> (d0, d1), <1x1>, memref<8x8x!ttcore.tile<32x32, bf16>, #dram>, <interleaved>>
func.func @forward(%x: tensor<256x256xbf16, #l>, %w: tensor<256x256xbf16, #l>, %y: tensor<256x256xbf16, #l>) -> tensor<256x256xbf16, #l> {
  %0 = "ttnn.relu"(%y) : (tensor<256x256xbf16, #l>) -> tensor<256x256xbf16, #l> loc("a_relu")
  %1 = "ttnn.gelu"(%0) : (tensor<256x256xbf16, #l>) -> tensor<256x256xbf16, #l> loc("a_gelu")
  %2 = "ttnn.exp"(%x) : (tensor<256x256xbf16, #l>) -> tensor<256x256xbf16, #l> loc("exp")
  %3 = "ttnn.matmul"(%2, %w) <{transpose_a = false, transpose_b = false}> : (tensor<256x256xbf16, #l>, tensor<256x256xbf16, #l>) -> tensor<256x256xbf16, #l> loc("b_mm")
  %4 = "ttnn.add"(%3, %1) : (tensor<256x256xbf16, #l>, tensor<256x256xbf16, #l>) -> tensor<256x256xbf16, #l> loc("b_add")
  %5 = "ttnn.relu"(%4) : (tensor<256x256xbf16, #l>) -> tensor<256x256xbf16, #l> loc("b_relu")
  return %5 : tensor<256x256xbf16, #l>
}
