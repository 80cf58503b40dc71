// A transformer MLP block in the Llama style (RMSNorm, SwiGLU, residual) over 128 tokens,
// hidden size 1024, intermediate size 2048. Hand-written; every tensor in DRAM, as imported.
#dram = #ttnn.buffer_type<dram>
#act = #ttnn.ttnn_layout<(d0, d1) -> (d0, d1), <1x1>, memref<4x32x!ttcore.tile<32x32, bf16>, #dram>, <interleaved>>
#vec = #ttnn.ttnn_layout<(d0) -> (0, d0), <1x1>, memref<1x32x!ttcore.tile<32x32, bf16>, #dram>, <interleaved>>
#w_in = #ttnn.ttnn_layout<(d0, d1) -> (d0, d1), <1x1>, memref<32x64x!ttcore.tile<32x32, bf16>, #dram>, <interleaved>>
#hidden = #ttnn.ttnn_layout<(d0, d1) -> (d0, d1), <1x1>, memref<4x64x!ttcore.tile<32x32, bf16>, #dram>, <interleaved>>
#w_out = #ttnn.ttnn_layout<(d0, d1) -> (d0, d1), <1x1>, memref<64x32x!ttcore.tile<32x32, bf16>, #dram>, <interleaved>>
module @mlp_block {
  func.func @forward(%x: tensor<128x1024xbf16, #act> loc("x"), %gamma: tensor<1024xbf16, #vec> loc("gamma"), %w_gate: tensor<1024x2048xbf16, #w_in> loc("w_gate"), %w_up: tensor<1024x2048xbf16, #w_in> loc("w_up"), %w_down: tensor<2048x1024xbf16, #w_out> loc("w_down")) -> tensor<128x1024xbf16, #act> {
    %0 = "ttnn.rms_norm"(%x, %gamma) <{epsilon = 9.99999974E-6 : f32, operandSegmentSizes = array<i32: 1, 1, 0>}> : (tensor<128x1024xbf16, #act>, tensor<1024xbf16, #vec>) -> tensor<128x1024xbf16, #act> loc("norm")
    %1 = "ttnn.matmul"(%0, %w_gate) <{transpose_a = false, transpose_b = false}> : (tensor<128x1024xbf16, #act>, tensor<1024x2048xbf16, #w_in>) -> tensor<128x2048xbf16, #hidden> loc("gate_proj")
    %2 = "ttnn.silu"(%1) : (tensor<128x2048xbf16, #hidden>) -> tensor<128x2048xbf16, #hidden> loc("gate_act")
    %3 = "ttnn.matmul"(%0, %w_up) <{transpose_a = false, transpose_b = false}> : (tensor<128x1024xbf16, #act>, tensor<1024x2048xbf16, #w_in>) -> tensor<128x2048xbf16, #hidden> loc("up_proj")
    %4 = "ttnn.multiply"(%2, %3) : (tensor<128x2048xbf16, #hidden>, tensor<128x2048xbf16, #hidden>) -> tensor<128x2048xbf16, #hidden> loc("gated")
    %5 = "ttnn.matmul"(%4, %w_down) <{transpose_a = false, transpose_b = false}> : (tensor<128x2048xbf16, #hidden>, tensor<2048x1024xbf16, #w_out>) -> tensor<128x1024xbf16, #act> loc("down_proj")
    %6 = "ttnn.add"(%x, %5) : (tensor<128x1024xbf16, #act>, tensor<128x1024xbf16, #act>) -> tensor<128x1024xbf16, #act> loc("residual")
    return %6 : tensor<128x1024xbf16, #act>
  }
}
