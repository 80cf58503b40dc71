// ViT's patch embedding: a 16x16 stride-16 conv2d over eight 224x224 RGB images, its input tiled
// in DRAM. Whole in L1 it needs 3.1 MB per core, so no layout fits; the optimizer gives it a DRAM
// output and a dram_height slice config in place of the l1_full one tt-mlir writes, the op model
// runs it in the fewest slices that fit, and the verifier accepts the sliced conv.
#dram = #ttnn.buffer_type<dram>
#x = #ttnn.ttnn_layout<(d0, d1, d2, d3) -> (d0 * 401408 + d1 * 401408 + d2, d3), <1x1>, memref<12544x1x!ttcore.tile<32x32, bf16>, #dram>, <interleaved>>
#w = #ttnn.ttnn_layout<(d0, d1, d2, d3) -> (d0 * 48 + d1 * 16 + d2, d3), <1x1>, memref<2304x1x!ttcore.tile<32x32, bf16>, #dram>, <interleaved>>
#y = #ttnn.ttnn_layout<(d0, d1, d2, d3) -> (d0 * 1568 + d1 * 1568 + d2, d3), <1x1>, memref<49x24x!ttcore.tile<32x32, bf16>, #dram>, <interleaved>>
module {
  func.func @forward(%x: tensor<1x1x401408x3xbf16, #x>, %w: tensor<768x3x16x16xbf16, #w>) -> tensor<1x1x1568x768xbf16, #y> {
    %dev = "ttnn.get_device"() <{mesh_offset = #ttnn<mesh_offset 0x0>, mesh_shape = #ttnn<mesh_shape 1x1>}> : () -> !ttnn.device
    %0 = "ttnn.conv2d"(%x, %w, %dev) <{batch_size = 8 : i32, conv2d_slice_config = #ttnn.conv2d_slice_config<l1_full, 0>, dilation = array<i32: 1, 1>, groups = 1 : i32, in_channels = 3 : i32, input_height = 224 : i32, input_width = 224 : i32, kernel_size = array<i32: 16, 16>, out_channels = 768 : i32, padding = array<i32: 0, 0, 0, 0>, stride = array<i32: 16, 16>}> : (tensor<1x1x401408x3xbf16, #x>, tensor<768x3x16x16xbf16, #w>, !ttnn.device) -> tensor<1x1x1568x768xbf16, #y> loc("patch_embedding")
    %1 = "ttnn.relu"(%0) : (tensor<1x1x1568x768xbf16, #y>) -> tensor<1x1x1568x768xbf16, #y> loc("relu")
    return %1 : tensor<1x1x1568x768xbf16, #y>
  }
}
