// An attention-like block over 128 tokens, hidden size 512, two heads of 256: LayerNorm, then
// a fork into the Q, K and V projections, per-head slices, scores with a transposed K,
// softmax, the weighted values, a concat of the heads, the output projection and a residual.
// Hand-written; every tensor in DRAM, as imported.
#dram = #ttnn.buffer_type<dram>
#act = #ttnn.ttnn_layout<(d0, d1) -> (d0, d1), <1x1>, memref<4x16x!ttcore.tile<32x32, bf16>, #dram>, <interleaved>>
#vec = #ttnn.ttnn_layout<(d0) -> (0, d0), <1x1>, memref<1x16x!ttcore.tile<32x32, bf16>, #dram>, <interleaved>>
#w = #ttnn.ttnn_layout<(d0, d1) -> (d0, d1), <1x1>, memref<16x16x!ttcore.tile<32x32, bf16>, #dram>, <interleaved>>
#head = #ttnn.ttnn_layout<(d0, d1) -> (d0, d1), <1x1>, memref<4x8x!ttcore.tile<32x32, bf16>, #dram>, <interleaved>>
#scores = #ttnn.ttnn_layout<(d0, d1) -> (d0, d1), <1x1>, memref<4x4x!ttcore.tile<32x32, bf16>, #dram>, <interleaved>>
module @attention_block {
  func.func @forward(%x: tensor<128x512xbf16, #act> loc("x"), %ln_w: tensor<512xbf16, #vec> loc("ln_w"), %ln_b: tensor<512xbf16, #vec> loc("ln_b"), %wq: tensor<512x512xbf16, #w> loc("wq"), %wk: tensor<512x512xbf16, #w> loc("wk"), %wv: tensor<512x512xbf16, #w> loc("wv"), %wo: tensor<512x512xbf16, #w> loc("wo")) -> tensor<128x512xbf16, #act> {
    %0 = "ttnn.layer_norm"(%x, %ln_w, %ln_b) <{epsilon = 9.99999974E-6 : f32, operandSegmentSizes = array<i32: 1, 1, 1>}> : (tensor<128x512xbf16, #act>, tensor<512xbf16, #vec>, tensor<512xbf16, #vec>) -> tensor<128x512xbf16, #act> loc("ln")
    %1 = "ttnn.matmul"(%0, %wq) <{transpose_a = false, transpose_b = false}> : (tensor<128x512xbf16, #act>, tensor<512x512xbf16, #w>) -> tensor<128x512xbf16, #act> loc("q_proj")
    %2 = "ttnn.matmul"(%0, %wk) <{transpose_a = false, transpose_b = false}> : (tensor<128x512xbf16, #act>, tensor<512x512xbf16, #w>) -> tensor<128x512xbf16, #act> loc("k_proj")
    %3 = "ttnn.matmul"(%0, %wv) <{transpose_a = false, transpose_b = false}> : (tensor<128x512xbf16, #act>, tensor<512x512xbf16, #w>) -> tensor<128x512xbf16, #act> loc("v_proj")
    %4 = "ttnn.slice_static"(%1) <{begins = [0 : i32, 0 : i32], ends = [128 : i32, 256 : i32], step = [1 : i32, 1 : i32]}> : (tensor<128x512xbf16, #act>) -> tensor<128x256xbf16, #head> loc("q_h0")
    %5 = "ttnn.slice_static"(%2) <{begins = [0 : i32, 0 : i32], ends = [128 : i32, 256 : i32], step = [1 : i32, 1 : i32]}> : (tensor<128x512xbf16, #act>) -> tensor<128x256xbf16, #head> loc("k_h0")
    %6 = "ttnn.slice_static"(%3) <{begins = [0 : i32, 0 : i32], ends = [128 : i32, 256 : i32], step = [1 : i32, 1 : i32]}> : (tensor<128x512xbf16, #act>) -> tensor<128x256xbf16, #head> loc("v_h0")
    %7 = "ttnn.matmul"(%4, %5) <{transpose_a = false, transpose_b = true}> : (tensor<128x256xbf16, #head>, tensor<128x256xbf16, #head>) -> tensor<128x128xbf16, #scores> loc("scores_h0")
    %8 = "ttnn.softmax"(%7) <{dimension = -1 : si32}> : (tensor<128x128xbf16, #scores>) -> tensor<128x128xbf16, #scores> loc("probs_h0")
    %9 = "ttnn.matmul"(%8, %6) <{transpose_a = false, transpose_b = false}> : (tensor<128x128xbf16, #scores>, tensor<128x256xbf16, #head>) -> tensor<128x256xbf16, #head> loc("ctx_h0")
    %10 = "ttnn.slice_static"(%1) <{begins = [0 : i32, 256 : i32], ends = [128 : i32, 512 : i32], step = [1 : i32, 1 : i32]}> : (tensor<128x512xbf16, #act>) -> tensor<128x256xbf16, #head> loc("q_h1")
    %11 = "ttnn.slice_static"(%2) <{begins = [0 : i32, 256 : i32], ends = [128 : i32, 512 : i32], step = [1 : i32, 1 : i32]}> : (tensor<128x512xbf16, #act>) -> tensor<128x256xbf16, #head> loc("k_h1")
    %12 = "ttnn.slice_static"(%3) <{begins = [0 : i32, 256 : i32], ends = [128 : i32, 512 : i32], step = [1 : i32, 1 : i32]}> : (tensor<128x512xbf16, #act>) -> tensor<128x256xbf16, #head> loc("v_h1")
    %13 = "ttnn.matmul"(%10, %11) <{transpose_a = false, transpose_b = true}> : (tensor<128x256xbf16, #head>, tensor<128x256xbf16, #head>) -> tensor<128x128xbf16, #scores> loc("scores_h1")
    %14 = "ttnn.softmax"(%13) <{dimension = -1 : si32}> : (tensor<128x128xbf16, #scores>) -> tensor<128x128xbf16, #scores> loc("probs_h1")
    %15 = "ttnn.matmul"(%14, %12) <{transpose_a = false, transpose_b = false}> : (tensor<128x128xbf16, #scores>, tensor<128x256xbf16, #head>) -> tensor<128x256xbf16, #head> loc("ctx_h1")
    %16 = "ttnn.concat"(%9, %15) <{dim = 1 : si32}> : (tensor<128x256xbf16, #head>, tensor<128x256xbf16, #head>) -> tensor<128x512xbf16, #act> loc("heads")
    %17 = "ttnn.matmul"(%16, %wo) <{transpose_a = false, transpose_b = false}> : (tensor<128x512xbf16, #act>, tensor<512x512xbf16, #w>) -> tensor<128x512xbf16, #act> loc("o_proj")
    %18 = "ttnn.add"(%x, %17) : (tensor<128x512xbf16, #act>, tensor<128x512xbf16, #act>) -> tensor<128x512xbf16, #act> loc("residual")
    return %18 : tensor<128x512xbf16, #act>
  }
}
