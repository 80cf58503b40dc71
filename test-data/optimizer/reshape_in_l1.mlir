// A chain's output feeds a reshape right after it: the chain spills to L1 interleaved
// instead of DRAM, and the reshape's own output is kept in L1 interleaved for its consumer.
#dram = #ttnn.buffer_type<dram>
#l = #ttnn.ttnn_layout<(d0, d1) -> (d0, d1), <1x1>, memref<8x8x!ttcore.tile<32x32, bf16>, #dram>, <interleaved>>
#r = #ttnn.ttnn_layout<(d0, d1) -> (d0, d1), <1x1>, memref<4x16x!ttcore.tile<32x32, bf16>, #dram>, <interleaved>>
func.func @forward(%x: tensor<256x256xbf16, #l>) -> tensor<128x512xbf16, #r> {
  %0 = "ttnn.relu"(%x) : (tensor<256x256xbf16, #l>) -> tensor<256x256xbf16, #l> loc("relu")
  %1 = "ttnn.reshape"(%0) <{shape = [128 : i32, 512 : i32]}> : (tensor<256x256xbf16, #l>) -> tensor<128x512xbf16, #r> loc("reshape")
  %2 = "ttnn.exp"(%1) : (tensor<128x512xbf16, #r>) -> tensor<128x512xbf16, #r> loc("exp")
  %3 = "ttnn.sum"(%2) <{keep_dim = true, dim_arg = [1 : i32]}> : (tensor<128x512xbf16, #r>) -> tensor<128x512xbf16, #r> loc("sum")
  return %3 : tensor<128x512xbf16, #r>
}
