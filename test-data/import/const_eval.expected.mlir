// TTNN imported by ttnn-analyzer from const_eval.mlir
#dram = #ttnn.buffer_type<dram>
#ttnn_layout = #ttnn.ttnn_layout<(d0, d1) -> (d0, d1), <1x1>, memref<1x32x!ttcore.tile<32x32, bf16>, #dram>, <interleaved>>
#ttnn_layout1 = #ttnn.ttnn_layout<(d0, d1) -> (d0, d1), <1x1>, memref<32x32x!ttcore.tile<32x32, bf16>, #dram>, <interleaved>>
module {
  func.func @main(%arg0: tensor<32x1024xbf16, #ttnn_layout> {ttcore.argument_type = #ttcore.argument_type<input>}, %arg1: tensor<1024x1024xbf16, #ttnn_layout1> {ttcore.argument_type = #ttcore.argument_type<parameter>}) -> tensor<32x1024xbf16, #ttnn_layout> {
    %0 = "ttcore.load_cached"(%arg1) <{callee = @main_const_eval_0}> : (tensor<1024x1024xbf16, #ttnn_layout1>) -> tensor<1024x1024xbf16, #ttnn_layout1> loc("main_const_eval_0")
    %1 = "ttnn.matmul"(%arg0, %0) <{transpose_a = false, transpose_b = false}> : (tensor<32x1024xbf16, #ttnn_layout>, tensor<1024x1024xbf16, #ttnn_layout1>) -> tensor<32x1024xbf16, #ttnn_layout> loc("mm")
    %2 = "ttnn.relu"(%1) : (tensor<32x1024xbf16, #ttnn_layout>) -> tensor<32x1024xbf16, #ttnn_layout> loc("act")
    return %2 : tensor<32x1024xbf16, #ttnn_layout>
  }
  func.func private @main_const_eval_0(%arg0: tensor<1024x1024xbf16, #ttnn_layout1>) -> (tensor<1024x1024xbf16, #ttnn_layout1>) attributes {tt.function_type = "const_eval"} {
    %0 = "ttnn.permute"(%arg0) <{permutation = array<i64: 1, 0>}> : (tensor<1024x1024xbf16, #ttnn_layout1>) -> tensor<1024x1024xbf16, #ttnn_layout1> loc("w_t")
    return %0 : tensor<1024x1024xbf16, #ttnn_layout1>
  }
}
