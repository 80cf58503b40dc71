// The seeds' transformation example: conv2d -> relu becomes one L1 chain; the conv2d
// reshards its DRAM input (conv chains always do), gets a conv2d_config, and the chain's
// output spills to DRAM at the return.
#dram = #ttnn.buffer_type<dram>
#x = #ttnn.ttnn_layout<(d0, d1, d2, d3) -> (d0 * 4096 + d1 * 4096 + d2, d3), <1x1>, memref<128x2x!ttcore.tile<32x32, bf16>, #dram>, <interleaved>>
#w = #ttnn.ttnn_layout<(d0, d1, d2, d3) -> (d0 * 2048 + d1 * 32 + d2, d3), <1x1>, memref<8192x1x!ttcore.tile<32x32, bf16>, #dram>, <interleaved>>
#y = #ttnn.ttnn_layout<(d0, d1, d2, d3) -> (d0 * 4096 + d1 * 4096 + d2, d3), <1x1>, memref<128x4x!ttcore.tile<32x32, bf16>, #dram>, <interleaved>>
module {
  func.func @forward(%x: tensor<1x1x4096x64xbf16, #x>, %w: tensor<128x64x3x3xbf16, #w>) -> tensor<1x1x4096x128xbf16, #y> {
    %dev = "ttnn.get_device"() <{mesh_offset = #ttnn<mesh_offset 0x0>, mesh_shape = #ttnn<mesh_shape 1x1>}> : () -> !ttnn.device
    %0 = "ttnn.conv2d"(%x, %w, %dev) <{batch_size = 1 : i32, dilation = array<i32: 1, 1>, groups = 1 : i32, in_channels = 64 : i32, input_height = 64 : i32, input_width = 64 : i32, kernel_size = array<i32: 3, 3>, out_channels = 128 : i32, padding = array<i32: 1, 1, 1, 1>, stride = array<i32: 1, 1>}> : (tensor<1x1x4096x64xbf16, #x>, tensor<128x64x3x3xbf16, #w>, !ttnn.device) -> tensor<1x1x4096x128xbf16, #y> loc("conv")
    %1 = "ttnn.relu"(%0) : (tensor<1x1x4096x128xbf16, #y>) -> tensor<1x1x4096x128xbf16, #y> loc("relu")
    return %1 : tensor<1x1x4096x128xbf16, #y>
  }
}
