// A ResNet basic block on a 32x32 image with 64 channels (NHWC, flattened to 1x1x(N*H*W)xC as
// tt-mlir hands convolutions to TTNN): conv 3x3, relu, conv 3x3, add the block's input, relu.
// Hand-written; every tensor in DRAM, as imported.
#dram = #ttnn.buffer_type<dram>
#act = #ttnn.ttnn_layout<(d0, d1, d2, d3) -> (d0 * 1024 + d1 * 1024 + d2, d3), <1x1>, memref<32x2x!ttcore.tile<32x32, bf16>, #dram>, <interleaved>>
#weight = #ttnn.ttnn_layout<(d0, d1, d2, d3) -> (d0 * 2048 + d1 * 32 + d2, d3), <1x1>, memref<4096x1x!ttcore.tile<32x32, bf16>, #dram>, <interleaved>>
#bias = #ttnn.ttnn_layout<(d0, d1, d2, d3) -> (d0 * 32 + d1 * 32 + d2, d3), <1x1>, memref<1x2x!ttcore.tile<32x32, bf16>, #dram>, <interleaved>>
module @residual_conv_block {
  func.func @forward(%x: tensor<1x1x1024x64xbf16, #act> loc("x"), %w1: tensor<64x64x3x3xbf16, #weight> loc("w1"), %b1: tensor<1x1x1x64xbf16, #bias> loc("b1"), %w2: tensor<64x64x3x3xbf16, #weight> loc("w2"), %b2: tensor<1x1x1x64xbf16, #bias> loc("b2")) -> tensor<1x1x1024x64xbf16, #act> {
    %0 = "ttnn.get_device"() <{mesh_offset = #ttnn<mesh_offset 0x0>, mesh_shape = #ttnn<mesh_shape 1x1>}> : () -> !ttnn.device loc("device")
    %1 = "ttnn.conv2d"(%x, %w1, %b1, %0) <{batch_size = 1 : i32, dilation = array<i32: 1, 1>, groups = 1 : i32, in_channels = 64 : i32, input_height = 32 : i32, input_width = 32 : i32, kernel_size = array<i32: 3, 3>, out_channels = 64 : i32, padding = array<i32: 1, 1, 1, 1>, stride = array<i32: 1, 1>}> : (tensor<1x1x1024x64xbf16, #act>, tensor<64x64x3x3xbf16, #weight>, tensor<1x1x1x64xbf16, #bias>, !ttnn.device) -> tensor<1x1x1024x64xbf16, #act> loc("conv1")
    %2 = "ttnn.relu"(%1) : (tensor<1x1x1024x64xbf16, #act>) -> tensor<1x1x1024x64xbf16, #act> loc("relu1")
    %3 = "ttnn.conv2d"(%2, %w2, %b2, %0) <{batch_size = 1 : i32, dilation = array<i32: 1, 1>, groups = 1 : i32, in_channels = 64 : i32, input_height = 32 : i32, input_width = 32 : i32, kernel_size = array<i32: 3, 3>, out_channels = 64 : i32, padding = array<i32: 1, 1, 1, 1>, stride = array<i32: 1, 1>}> : (tensor<1x1x1024x64xbf16, #act>, tensor<64x64x3x3xbf16, #weight>, tensor<1x1x1x64xbf16, #bias>, !ttnn.device) -> tensor<1x1x1024x64xbf16, #act> loc("conv2")
    %4 = "ttnn.add"(%3, %x) : (tensor<1x1x1024x64xbf16, #act>, tensor<1x1x1024x64xbf16, #act>) -> tensor<1x1x1024x64xbf16, #act> loc("residual")
    %5 = "ttnn.relu"(%4) : (tensor<1x1x1024x64xbf16, #act>) -> tensor<1x1x1024x64xbf16, #act> loc("out")
    return %5 : tensor<1x1x1024x64xbf16, #act>
  }
}
