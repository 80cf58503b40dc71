// Two chains feed a width concat: the concat prefers height-sharded inputs, both producers
// pick height sharding (64 tile rows, one per core), and with chain merging both stay in L1
// for the concat.
#dram = #ttnn.buffer_type<dram>
#l = #ttnn.ttnn_layout<(d0, d1) -> (d0, d1), <1x1>, memref<64x8x!ttcore.tile<32x32, bf16>, #dram>, <interleaved>>
#c = #ttnn.ttnn_layout<(d0, d1) -> (d0, d1), <1x1>, memref<64x16x!ttcore.tile<32x32, bf16>, #dram>, <interleaved>>
func.func @forward(%x: tensor<2048x256xbf16, #l>, %y: tensor<2048x256xbf16, #l>) -> tensor<2048x512xbf16, #c> {
  %0 = "ttnn.relu"(%x) : (tensor<2048x256xbf16, #l>) -> tensor<2048x256xbf16, #l> loc("a_relu")
  %1 = "ttnn.neg"(%0) : (tensor<2048x256xbf16, #l>) -> tensor<2048x256xbf16, #l> loc("a_neg")
  %2 = "ttnn.gelu"(%y) : (tensor<2048x256xbf16, #l>) -> tensor<2048x256xbf16, #l> loc("b_gelu")
  %3 = "ttnn.concat"(%1, %2) <{dim = 1 : si32}> : (tensor<2048x256xbf16, #l>, tensor<2048x256xbf16, #l>) -> tensor<2048x512xbf16, #c> loc("cat")
  return %3 : tensor<2048x512xbf16, #c>
}
