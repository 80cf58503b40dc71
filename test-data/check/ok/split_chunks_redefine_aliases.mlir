// Each `// -----` chunk is an independent module with its own aliases, as in tt-mlir's
// split-input-file tests.
#l1 = #ttnn.buffer_type<l1>
#lay = #ttnn.ttnn_layout<(d0, d1) -> (d0, d1), <2x2>, memref<1x1x!ttcore.tile<32x32, bf16>, #l1>, <block_sharded>, core_ranges = <[#ttnn.core_range<(0,0), (1,1)>]>>
func.func @first(%a: tensor<64x64xbf16, #lay>) -> tensor<64x64xbf16, #lay> {
  %0 = "ttnn.relu"(%a) : (tensor<64x64xbf16, #lay>) -> tensor<64x64xbf16, #lay>
  return %0 : tensor<64x64xbf16, #lay>
}

// -----
#l1 = #ttnn.buffer_type<dram>
#lay = #ttnn.ttnn_layout<(d0, d1) -> (d0, d1), <1x1>, memref<2x2x!ttcore.tile<32x32, f32>, #l1>, <interleaved>>
func.func @second(%a: tensor<64x64xf32, #lay>) -> tensor<64x64xf32, #lay> {
  %0:2 = "ttnn.split_like"(%a) : (tensor<64x64xf32, #lay>) -> (tensor<64x64xf32, #lay>, tensor<64x64xf32, #lay>)
  %1 = "ttnn.add"(%0#0, %0#1) : (tensor<64x64xf32, #lay>, tensor<64x64xf32, #lay>) -> tensor<64x64xf32, #lay>
  return %1 : tensor<64x64xf32, #lay>
}
