#dram = #ttnn.buffer_type<dram>
#l1 = #ttnn.buffer_type<l1>
#il = #ttnn.ttnn_layout<(d0, d1) -> (d0, d1), <1x1>, memref<1x1x!ttcore.tile<32x32, bf16>, #dram>, <interleaved>>
#nogrid = #ttnn.ttnn_layout<(d0, d1) -> (d0, d1), <0x0>, memref<1x1x!ttcore.tile<32x32, bf16>, #l1>, <block_sharded>>
func.func @forward(%a: tensor<32x32xbf16, #il>, %huge: tensor<18446744073709551615x32xbf16>) -> tensor<32x32xbf16, #il> {
  %0 = "ttnn.matmul"(%a) : (tensor<32x32xbf16, #il>) -> tensor<32x32xbf16, #il> loc("one_operand")
  %1 = "ttnn.relu"(%0) : (tensor<32x32xbf16, #il>) -> tensor<32x32xbf16, #nogrid> loc("no_cores")
  %2 = "ttnn.matmul"() : () -> tensor<32x32xbf16, #il> loc("no_operands")
  return %2 : tensor<32x32xbf16, #il>
}
