// TTNN imported by ttnn-analyzer from mixed_ops.mlir
#dram = #ttnn.buffer_type<dram>
#ttnn_layout = #ttnn.ttnn_layout<(d0, d1, d2, d3) -> (d0 * 512 + d1 * 32 + d2, d3), <1x1>, memref<16x1x!ttcore.tile<32x32, bf16>, #dram>, <interleaved>>
#ttnn_layout1 = #ttnn.ttnn_layout<(d0, d1, d2, d3) -> (d0 * 256 + d1 * 32 + d2, d3), <1x1>, memref<64x1x!ttcore.tile<32x32, bf16>, #dram>, <interleaved>>
#ttnn_layout2 = #ttnn.ttnn_layout<(d0, d1, d2, d3) -> (d0 * 32 + d1 * 32 + d2, d3), <1x1>, memref<1x1x!ttcore.tile<32x32, bf16>, #dram>, <interleaved>>
#ttnn_layout3 = #ttnn.ttnn_layout<(d0, d1) -> (d0, d1), <1x1>, memref<1x1x!ttcore.tile<32x32, si32>, #dram>, <interleaved>>
#ttnn_layout4 = #ttnn.ttnn_layout<(d0, d1) -> (d0, d1), <1x1>, memref<2x1x!ttcore.tile<32x32, bf16>, #dram>, <interleaved>>
#ttnn_layout5 = #ttnn.ttnn_layout<(d0) -> (0, d0), <1x1>, memref<1x1x!ttcore.tile<32x32, bf16>, #dram>, <interleaved>>
#ttnn_layout6 = #ttnn.ttnn_layout<(d0, d1, d2, d3) -> (d0 * 32 + d1 * 32 + d2, d3), <1x1>, memref<2x1x!ttcore.tile<32x32, bf16>, #dram>, <interleaved>>
#ttnn_layout7 = #ttnn.ttnn_layout<(d0) -> (0, d0), <1x1>, memref<1x1x!ttcore.tile<32x32, si32>, #dram>, <interleaved>>
#ttnn_layout8 = #ttnn.ttnn_layout<(d0, d1, d2, d3) -> (d0 * 256 + d1 * 32 + d2, d3), <1x1>, memref<8x1x!ttcore.tile<32x32, bf16>, #dram>, <interleaved>>
#ttnn_layout9 = #ttnn.ttnn_layout<(d0, d1, d2) -> (d0 * 32 + d1, d2), <1x1>, memref<2x1x!ttcore.tile<32x32, bf16>, #dram>, <interleaved>>
#ttnn_layout10 = #ttnn.ttnn_layout<(d0, d1, d2, d3) -> (d0 * 1024 + d1 * 32 + d2, d3), <1x1>, memref<32x1x!ttcore.tile<32x32, bf16>, #dram>, <interleaved>>
#ttnn_layout11 = #ttnn.ttnn_layout<(d0, d1, d2, d3) -> (d0 * 256 + d1 * 256 + d2, d3), <1x1>, memref<8x1x!ttcore.tile<32x32, bf16>, #dram>, <interleaved>>
#ttnn_layout12 = #ttnn.ttnn_layout<(d0, d1, d2, d3) -> (d0 * 64 + d1 * 64 + d2, d3), <1x1>, memref<2x1x!ttcore.tile<32x32, bf16>, #dram>, <interleaved>>
#ttnn_layout13 = #ttnn.ttnn_layout<(d0, d1) -> (d0, d1), <1x1>, memref<1x1x!ttcore.tile<32x32, u32>, #dram>, <interleaved>>
#ttnn_layout14 = #ttnn.ttnn_layout<(d0, d1) -> (d0, d1), <1x1>, memref<2x4xui32, #dram>, <interleaved>>
#ttnn_layout15 = #ttnn.ttnn_layout<(d0, d1, d2) -> (d0 * 32 + d1, d2), <1x1>, memref<4x1x!ttcore.tile<32x32, bf16>, #dram>, <interleaved>>
#ttnn_layout16 = #ttnn.ttnn_layout<(d0, d1, d2) -> (d0 * 32 + d1, d2), <1x1>, memref<1x1x!ttcore.tile<32x32, bf16>, #dram>, <interleaved>>
#ttnn_layout17 = #ttnn.ttnn_layout<(d0, d1) -> (d0, d1), <1x1>, memref<1x1x!ttcore.tile<32x32, bf16>, #dram>, <interleaved>>
#ttnn_layout18 = #ttnn.ttnn_layout<(d0, d1) -> (d0, d1), <1x1>, memref<4x2xbf16, #dram>, <interleaved>>
#ttnn_layout19 = #ttnn.ttnn_layout<(d0) -> (0, d0), <1x1>, memref<1x2xui32, #dram>, <interleaved>>
#ttnn_layout20 = #ttnn.ttnn_layout<(d0) -> (0, d0), <1x1>, memref<1x1x!ttcore.tile<32x32, u32>, #dram>, <interleaved>>
#ttnn_layout21 = #ttnn.ttnn_layout<(d0) -> (0, d0), <1x1>, memref<1x4xsi32, #dram>, <interleaved>>
module @mixed attributes {ttcore.meshes = #ttcore.meshes<[<"mesh" = 1x1>]>} {
  func.func @main(%arg0: tensor<1x16x16x8xbf16, #ttnn_layout> {ttir.name = "image"} loc("x"), %arg1: tensor<8x8x3x3xbf16, #ttnn_layout1>, %arg2: tensor<1x1x1x8xbf16, #ttnn_layout2>, %arg3: tensor<2x4xsi32, #ttnn_layout3>, %arg4: tensor<64x32xbf16, #ttnn_layout4>, %arg5: tensor<32xbf16, #ttnn_layout5>, %arg6: tensor<32xbf16, #ttnn_layout5>, %arg7: tensor<2x1x16x32xbf16, #ttnn_layout6>, %arg8: tensor<1xsi32, #ttnn_layout7>) -> (tensor<1x8x8x8xbf16, #ttnn_layout8>, tensor<2x4x32xbf16, #ttnn_layout9>, tensor<2x4xsi32, #ttnn_layout3>, tensor<1x32x16x16xbf16, #ttnn_layout10>) {
    %0 = "ttnn.get_device"() <{mesh_offset = #ttnn<mesh_offset 0x0>, mesh_shape = #ttnn<mesh_shape 1x1>}> : () -> !ttnn.device loc("get_device")
    %1 = "ttnn.reshape"(%arg0) <{shape = [1 : i32, 1 : i32, 256 : i32, 8 : i32]}> : (tensor<1x16x16x8xbf16, #ttnn_layout>) -> tensor<1x1x256x8xbf16, #ttnn_layout11> loc("conv_flatten")
    %2 = "ttnn.conv2d"(%1, %arg1, %arg2, %0) <{batch_size = 1 : i32, conv2d_config = #ttnn.conv2d_config<activation = <op_type = relu>>, dilation = array<i32: 1, 1>, groups = 1 : i32, in_channels = 8 : i32, input_height = 16 : i32, input_width = 16 : i32, kernel_size = array<i32: 3, 3>, out_channels = 8 : i32, padding = array<i32: 1, 1, 1, 1>, stride = array<i32: 1, 1>}> : (tensor<1x1x256x8xbf16, #ttnn_layout11>, tensor<8x8x3x3xbf16, #ttnn_layout1>, tensor<1x1x1x8xbf16, #ttnn_layout2>, !ttnn.device) -> tensor<1x1x256x8xbf16, #ttnn_layout11> loc("conv")
    %3 = "ttnn.max_pool2d"(%2) <{batch_size = 1 : si32, ceil_mode = false, channels = 8 : si32, dilation = array<i32: 1, 1>, input_height = 16 : si32, input_width = 16 : si32, kernel_size = array<i32: 2, 2>, padding = array<i32: 0, 0>, reallocate_halo_output = true, stride = array<i32: 2, 2>}> : (tensor<1x1x256x8xbf16, #ttnn_layout11>) -> tensor<1x1x64x8xbf16, #ttnn_layout12> loc("pool")
    %4 = "ttnn.reshape"(%3) <{shape = [1 : i32, 8 : i32, 8 : i32, 8 : i32]}> : (tensor<1x1x64x8xbf16, #ttnn_layout12>) -> tensor<1x8x8x8xbf16, #ttnn_layout8> loc("pool_unflatten")
    %5 = "ttnn.typecast"(%arg3) : (tensor<2x4xsi32, #ttnn_layout3>) -> tensor<2x4xui32, #ttnn_layout13> loc("ids_u32")
    %6 = "ttnn.to_layout"(%5) : (tensor<2x4xui32, #ttnn_layout13>) -> tensor<2x4xui32, #ttnn_layout14> loc("embed_in_0_layout")
    %7 = "ttnn.embedding"(%6, %arg4) : (tensor<2x4xui32, #ttnn_layout14>, tensor<64x32xbf16, #ttnn_layout4>) -> tensor<2x4x32xbf16, #ttnn_layout9> loc("embed")
    %8 = "ttnn.rms_norm"(%7, %arg5) <{epsilon = 9.99999974E-6 : f32, operandSegmentSizes = array<i32: 1, 1, 0>}> : (tensor<2x4x32xbf16, #ttnn_layout9>, tensor<32xbf16, #ttnn_layout5>) -> tensor<2x4x32xbf16, #ttnn_layout9> loc("norm")
    %9 = "ttnn.layer_norm"(%8, %arg5, %arg6) <{epsilon = 9.99999974E-6 : f32, operandSegmentSizes = array<i32: 1, 1, 1>}> : (tensor<2x4x32xbf16, #ttnn_layout9>, tensor<32xbf16, #ttnn_layout5>, tensor<32xbf16, #ttnn_layout5>) -> tensor<2x4x32xbf16, #ttnn_layout9> loc("ln")
    %10 = "ttnn.permute"(%9) <{permutation = array<i64: 1, 0, 2>}> : (tensor<2x4x32xbf16, #ttnn_layout9>) -> tensor<4x2x32xbf16, #ttnn_layout15> loc("heads")
    %11 = "ttnn.permute"(%9) <{permutation = array<i64: 1, 2, 0>}> : (tensor<2x4x32xbf16, #ttnn_layout9>) -> tensor<4x32x2xbf16, #ttnn_layout15> loc("scores_permute_rhs")
    %12 = "ttnn.matmul"(%10, %11) <{transpose_a = false, transpose_b = false}> : (tensor<4x2x32xbf16, #ttnn_layout15>, tensor<4x32x2xbf16, #ttnn_layout15>) -> tensor<4x2x2xbf16, #ttnn_layout15> loc("scores")
    %13:3 = "ttcore.load_cached"() <{callee = @main_const_eval_0}> : () -> (tensor<1x1x1xbf16, #ttnn_layout16>, tensor<2x4xsi32, #ttnn_layout3>, tensor<2x4xsi32, #ttnn_layout3>) loc("main_const_eval_0")
    %14 = "ttnn.multiply"(%12, %13#0) : (tensor<4x2x2xbf16, #ttnn_layout15>, tensor<1x1x1xbf16, #ttnn_layout16>) -> tensor<4x2x2xbf16, #ttnn_layout15> loc("scaled")
    %15 = "ttnn.softmax"(%14) <{dimension = -1 : si32}> : (tensor<4x2x2xbf16, #ttnn_layout15>) -> tensor<4x2x2xbf16, #ttnn_layout15> loc("probs")
    %16 = "ttnn.sum"(%15) <{dim_arg = [2 : i32], keep_dim = false}> : (tensor<4x2x2xbf16, #ttnn_layout15>) -> tensor<4x2xbf16, #ttnn_layout17> loc("rowsum")
    %17 = "ttnn.to_layout"(%16) : (tensor<4x2xbf16, #ttnn_layout17>) -> tensor<4x2xbf16, #ttnn_layout18> loc("best_in_0_layout")
    %18 = "ttnn.argmax"(%17) <{dim = 0 : si32, keep_dim = false}> : (tensor<4x2xbf16, #ttnn_layout18>) -> tensor<2xui32, #ttnn_layout19> loc("best")
    %19 = "ttnn.to_layout"(%18) : (tensor<2xui32, #ttnn_layout19>) -> tensor<2xui32, #ttnn_layout20> loc("best_out_layout")
    %20 = "ttnn.typecast"(%19) : (tensor<2xui32, #ttnn_layout20>) -> tensor<2xsi32, #ttnn_layout7> loc("best_out_layout_typecast")
    %21 = "ttnn.reshape"(%20) <{shape = [2 : i32, 1 : i32]}> : (tensor<2xsi32, #ttnn_layout7>) -> tensor<2x1xsi32, #ttnn_layout3> loc("best_col")
    %22 = "ttnn.eq"(%13#1, %21) : (tensor<2x4xsi32, #ttnn_layout3>, tensor<2x1xsi32, #ttnn_layout3>) -> tensor<2x4xbf16, #ttnn_layout17> loc("hit")
    %23 = "ttnn.where"(%22, %13#2, %13#1) : (tensor<2x4xbf16, #ttnn_layout17>, tensor<2x4xsi32, #ttnn_layout3>, tensor<2x4xsi32, #ttnn_layout3>) -> tensor<2x4xsi32, #ttnn_layout3> loc("pick")
    %24 = "ttnn.slice_static"(%9) <{begins = [0 : i32, 0 : i32, 0 : i32], ends = [1 : i32, 4 : i32, 32 : i32], step = [1 : i32, 1 : i32, 1 : i32]}> : (tensor<2x4x32xbf16, #ttnn_layout9>) -> tensor<1x4x32xbf16, #ttnn_layout16> loc("first")
    %25 = "ttnn.reshape"(%24) <{shape = [1 : i32, 1 : i32, 4 : i32, 32 : i32]}> : (tensor<1x4x32xbf16, #ttnn_layout16>) -> tensor<1x1x4x32xbf16, #ttnn_layout2> loc("kv")
    %26 = "ttnn.pad"(%25) <{padding = array<i32: 0, 0, 0, 0, 0, 12, 0, 0>, use_multicore = true, value = 0.000000e+00 : f32}> : (tensor<1x1x4x32xbf16, #ttnn_layout2>) -> tensor<1x1x16x32xbf16, #ttnn_layout2> loc("kv_pad")
    "ttnn.fill_cache"(%arg7, %26) <{batch_offset = 1 : i32}> : (tensor<2x1x16x32xbf16, #ttnn_layout6>, tensor<1x1x16x32xbf16, #ttnn_layout2>) -> () loc("fill")
    %27 = "ttnn.slice_static"(%arg7) <{begins = [1 : i32, 0 : i32, 0 : i32, 0 : i32], ends = [2 : i32, 1 : i32, 16 : i32, 32 : i32], step = [1 : i32, 1 : i32, 1 : i32, 1 : i32]}> : (tensor<2x1x16x32xbf16, #ttnn_layout6>) -> tensor<1x1x16x32xbf16, #ttnn_layout2> loc("last")
    %28 = "ttnn.upsample"(%27) <{mode = "nearest", scale_factor = array<i32: 16, 1>}> : (tensor<1x1x16x32xbf16, #ttnn_layout2>) -> tensor<1x16x16x32xbf16, #ttnn_layout> loc("up")
    %29 = "ttnn.permute"(%28) <{permutation = array<i64: 0, 3, 1, 2>}> : (tensor<1x16x16x32xbf16, #ttnn_layout>) -> tensor<1x32x16x16xbf16, #ttnn_layout10> loc("up_permute_out")
    %30 = "ttnn.pow_scalar"(%29) <{rhs = 2.000000e+00 : f32}> : (tensor<1x32x16x16xbf16, #ttnn_layout10>) -> tensor<1x32x16x16xbf16, #ttnn_layout10> loc("square")
    return %4, %9, %23, %30 : tensor<1x8x8x8xbf16, #ttnn_layout8>, tensor<2x4x32xbf16, #ttnn_layout9>, tensor<2x4xsi32, #ttnn_layout3>, tensor<1x32x16x16xbf16, #ttnn_layout10>
  }
  func.func private @main_const_eval_0() -> (tensor<1x1x1xbf16, #ttnn_layout16>, tensor<2x4xsi32, #ttnn_layout3>, tensor<2x4xsi32, #ttnn_layout3>) attributes {tt.function_type = "const_eval"} {
    %0 = "ttnn.get_device"() <{mesh_offset = #ttnn<mesh_offset 0x0>, mesh_shape = #ttnn<mesh_shape 1x1>}> : () -> !ttnn.device loc("get_device_1")
    %1 = "ttnn.full"(%0) <{fill_value = 1.250000e-01 : f32, shape = #ttnn.shape<1x1x1>}> : (!ttnn.device) -> tensor<1x1x1xbf16, #ttnn_layout16> loc("scale")
    %2 = "ttnn.arange"(%0) <{end = 4 : si64, start = 0 : si64, step = 1 : si64}> : (!ttnn.device) -> tensor<4xsi32, #ttnn_layout21> loc("iota")
    %3 = "ttnn.to_layout"(%2) : (tensor<4xsi32, #ttnn_layout21>) -> tensor<4xsi32, #ttnn_layout7> loc("iota_to_layout")
    %4 = "ttnn.reshape"(%3) <{shape = [1 : i32, 4 : i32]}> : (tensor<4xsi32, #ttnn_layout7>) -> tensor<1x4xsi32, #ttnn_layout3> loc("iota_reshape")
    %5 = "ttnn.repeat"(%4) <{repeat_dims = #ttnn.shape<2x1>}> : (tensor<1x4xsi32, #ttnn_layout3>) -> tensor<2x4xsi32, #ttnn_layout3> loc("iota_repeat")
    %6 = "ttnn.constant"(%0) <{value = dense<[[0, 1, 2, 3], [4, 5, 6, 7]]> : tensor<2x4xsi32>}> : (!ttnn.device) -> tensor<2x4xsi32, #ttnn_layout3> loc("table")
    return %1, %5, %6 : tensor<1x1x1xbf16, #ttnn_layout16>, tensor<2x4xsi32, #ttnn_layout3>, tensor<2x4xsi32, #ttnn_layout3>
  }
}
