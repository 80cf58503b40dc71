#dram = #ttnn.buffer_type<dram>
#bad = #ttnn.ttnn_layout<(d0, d1) -> (d0, d1), <1x1>, memref<2x4x!ttcore.tile<32x32, bf17>, #dram>, <interleaved>>
#block_in_dram = #ttnn.ttnn_layout<(d0, d1) -> (d0, d1), <1x1>, memref<2x4x!ttcore.tile<32x32, bf16>, #dram>, <block_sharded>>
func.func @f(%a: tensor<64x128xbf16, #undefined_alias>) -> tensor<64x128xbf16, #undefined_alias> {
  return %a : tensor<64x128xbf16, #undefined_alias>
}
