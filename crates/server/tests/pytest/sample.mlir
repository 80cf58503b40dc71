#dram = #ttnn.buffer_type<dram>
#ttnn_layout = #ttnn.ttnn_layout<(d0, d1) -> (d0, d1), <1x1>, memref<8x32x!ttcore.tile<32x32, bf16>, #dram>, <interleaved>>
#ttnn_layout1 = #ttnn.ttnn_layout<(d0, d1) -> (d0, d1), <1x1>, memref<32x128x!ttcore.tile<32x32, bf16>, #dram>, <interleaved>>
#ttnn_layout2 = #ttnn.ttnn_layout<(d0, d1) -> (d0, d1), <1x1>, memref<1x128x!ttcore.tile<32x32, bf16>, #dram>, <interleaved>>
#ttnn_layout3 = #ttnn.ttnn_layout<(d0, d1) -> (d0, d1), <1x1>, memref<128x32x!ttcore.tile<32x32, bf16>, #dram>, <interleaved>>
#ttnn_layout4 = #ttnn.ttnn_layout<(d0, d1) -> (d0, d1), <1x1>, memref<8x128x!ttcore.tile<32x32, bf16>, #dram>, <interleaved>>
module @ffn attributes {} {
  func.func @forward(%arg0: tensor<256x1024xbf16, #ttnn_layout> {ttcore.argument_type = #ttcore.argument_type<input>} loc("x"), %arg1: tensor<1024x4096xbf16, #ttnn_layout1> {ttcore.argument_type = #ttcore.argument_type<parameter>} loc("w_up"), %arg2: tensor<1x4096xbf16, #ttnn_layout2> {ttcore.argument_type = #ttcore.argument_type<parameter>} loc("b_up"), %arg3: tensor<4096x1024xbf16, #ttnn_layout3> {ttcore.argument_type = #ttcore.argument_type<parameter>} loc("w_down")) -> tensor<256x1024xbf16, #ttnn_layout> attributes {tt.function_type = "forward_device"} {
    %0 = "ttnn.matmul"(%arg0, %arg1) <{transpose_a = false, transpose_b = false}> : (tensor<256x1024xbf16, #ttnn_layout>, tensor<1024x4096xbf16, #ttnn_layout1>) -> tensor<256x4096xbf16, #ttnn_layout4> loc(#loc1)
    %1 = "ttnn.add"(%0, %arg2) : (tensor<256x4096xbf16, #ttnn_layout4>, tensor<1x4096xbf16, #ttnn_layout2>) -> tensor<256x4096xbf16, #ttnn_layout4> loc(#loc2)
    %2 = "ttnn.gelu"(%1) : (tensor<256x4096xbf16, #ttnn_layout4>) -> tensor<256x4096xbf16, #ttnn_layout4> loc(#loc3)
    %3 = "ttnn.matmul"(%2, %arg3) <{transpose_a = false, transpose_b = false}> : (tensor<256x4096xbf16, #ttnn_layout4>, tensor<4096x1024xbf16, #ttnn_layout3>) -> tensor<256x1024xbf16, #ttnn_layout> loc(#loc4)
    %4 = "ttnn.add"(%3, %arg0) : (tensor<256x1024xbf16, #ttnn_layout>, tensor<256x1024xbf16, #ttnn_layout>) -> tensor<256x1024xbf16, #ttnn_layout> loc(#loc5)
    %5 = "ttnn.relu"(%4) : (tensor<256x1024xbf16, #ttnn_layout>) -> tensor<256x1024xbf16, #ttnn_layout> loc(#loc6)
    return %5 : tensor<256x1024xbf16, #ttnn_layout> loc(#loc)
  } loc(#loc)
} loc(#loc)
#loc = loc(unknown)
#loc1 = loc("ffn.up"("model.py":12:0))
#loc2 = loc("ffn.up_bias"("model.py":12:0))
#loc3 = loc("ffn.act"("model.py":13:0))
#loc4 = loc("ffn.down"("model.py":14:0))
#loc5 = loc("ffn.residual"("model.py":15:0))
#loc6 = loc("ffn.out"("model.py":16:0))
