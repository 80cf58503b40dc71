// A 3-way merge: the add joins chain A (matmul -> relu) on operand 0 and chain C
// (matmul -> gelu) on operand 1; both outputs stay in L1 for the join.
#dram = #ttnn.buffer_type<dram>
#l = #ttnn.ttnn_layout<(d0, d1) -> (d0, d1), <1x1>, memref<8x8x!ttcore.tile<32x32, bf16>, #dram>, <interleaved>>
func.func @forward(%x: tensor<256x256xbf16, #l>, %w: tensor<256x256xbf16, #l>, %v: tensor<256x256xbf16, #l>) -> tensor<256x256xbf16, #l> {
  %0 = "ttnn.matmul"(%x, %w) <{transpose_a = false, transpose_b = false}> : (tensor<256x256xbf16, #l>, tensor<256x256xbf16, #l>) -> tensor<256x256xbf16, #l> loc("a_mm")
  %1 = "ttnn.relu"(%0) : (tensor<256x256xbf16, #l>) -> tensor<256x256xbf16, #l> loc("a_relu")
  %2 = "ttnn.matmul"(%x, %v) <{transpose_a = false, transpose_b = false}> : (tensor<256x256xbf16, #l>, tensor<256x256xbf16, #l>) -> tensor<256x256xbf16, #l> loc("c_mm")
  %3 = "ttnn.gelu"(%2) : (tensor<256x256xbf16, #l>) -> tensor<256x256xbf16, #l> loc("c_gelu")
  %4 = "ttnn.add"(%1, %3) : (tensor<256x256xbf16, #l>, tensor<256x256xbf16, #l>) -> tensor<256x256xbf16, #l> loc("join")
  %5 = "ttnn.neg"(%4) : (tensor<256x256xbf16, #l>) -> tensor<256x256xbf16, #l> loc("b_neg")
  return %5 : tensor<256x256xbf16, #l>
}
