// A fork: the relu's output has two users. With chain merging the sharded output stays in
// L1 for both instead of spilling to DRAM.
#dram = #ttnn.buffer_type<dram>
#l = #ttnn.ttnn_layout<(d0, d1) -> (d0, d1), <1x1>, memref<8x8x!ttcore.tile<32x32, bf16>, #dram>, <interleaved>>
func.func @forward(%x: tensor<256x256xbf16, #l>, %w: tensor<256x256xbf16, #l>, %y: tensor<256x256xbf16, #l>) -> (tensor<256x256xbf16, #l>, tensor<256x256xbf16, #l>) {
  %0 = "ttnn.matmul"(%x, %w) <{transpose_a = false, transpose_b = false}> : (tensor<256x256xbf16, #l>, tensor<256x256xbf16, #l>) -> tensor<256x256xbf16, #l> loc("mm")
  %1 = "ttnn.relu"(%0) : (tensor<256x256xbf16, #l>) -> tensor<256x256xbf16, #l> loc("relu")
  %2 = "ttnn.add"(%1, %y) : (tensor<256x256xbf16, #l>, tensor<256x256xbf16, #l>) -> tensor<256x256xbf16, #l> loc("add")
  %3 = "ttnn.multiply"(%1, %y) : (tensor<256x256xbf16, #l>, tensor<256x256xbf16, #l>) -> tensor<256x256xbf16, #l> loc("mul")
  return %2, %3 : tensor<256x256xbf16, #l>, tensor<256x256xbf16, #l>
}
