// Seed 003: matmul -> d2m_subgraph -> matmul -> matmul. The subgraph is a chain boundary:
// chains {%0} and {%4, %5}; the first chain's output stays in L1 for the subgraph, and the
// second chain, fed by the subgraph, searches for its best input layout.
#dram = #ttnn.buffer_type<dram>
#a = #ttnn.ttnn_layout<(d0, d1) -> (d0, d1), <1x1>, memref<2x4x!ttcore.tile<32x32, bf16>, #dram>, <interleaved>>
#b = #ttnn.ttnn_layout<(d0, d1) -> (d0, d1), <1x1>, memref<4x8x!ttcore.tile<32x32, bf16>, #dram>, <interleaved>>
#c = #ttnn.ttnn_layout<(d0, d1) -> (d0, d1), <1x1>, memref<8x2x!ttcore.tile<32x32, bf16>, #dram>, <interleaved>>
#h = #ttnn.ttnn_layout<(d0, d1) -> (d0, d1), <1x1>, memref<2x8x!ttcore.tile<32x32, bf16>, #dram>, <interleaved>>
#s = #ttnn.ttnn_layout<(d0, d1) -> (d0, d1), <1x1>, memref<2x2x!ttcore.tile<32x32, bf16>, #dram>, <interleaved>>
module {
  func.func @dispatch_with_matmul_producer(%arg0: tensor<64x128xbf16, #a>, %arg1: tensor<128x256xbf16, #b>, %arg2: tensor<256x64xbf16, #c>, %arg3: tensor<64x256xbf16, #h>, %out: tensor<64x256xbf16, #h>) -> tensor<64x256xbf16, #h> {
    %0 = "ttnn.matmul"(%arg0, %arg1) <{transpose_a = false, transpose_b = false}> : (tensor<64x128xbf16, #a>, tensor<128x256xbf16, #b>) -> tensor<64x256xbf16, #h> loc("mm0")
    %dispatch = ttnn.d2m_subgraph @d2m_subgraph_0
        ins(%0 : tensor<64x256xbf16, #h>)
        outs(%out : tensor<64x256xbf16, #h>) : tensor<64x256xbf16, #h> loc("d2m")
    %4 = "ttnn.matmul"(%dispatch, %arg2) <{transpose_a = false, transpose_b = false}> : (tensor<64x256xbf16, #h>, tensor<256x64xbf16, #c>) -> tensor<64x64xbf16, #s> loc("mm4")
    %5 = "ttnn.matmul"(%4, %arg3) <{transpose_a = false, transpose_b = false}> : (tensor<64x64xbf16, #s>, tensor<64x256xbf16, #h>) -> tensor<64x256xbf16, #h> loc("mm5")
    return %5 : tensor<64x256xbf16, #h>
  }
  func.func private @d2m_subgraph_0(%x: tensor<64x256xbf16, #h>) -> tensor<64x256xbf16, #h> {
    %1 = "ttnn.exp"(%x) : (tensor<64x256xbf16, #h>) -> tensor<64x256xbf16, #h>
    %2 = "ttnn.neg"(%1) : (tensor<64x256xbf16, #h>) -> tensor<64x256xbf16, #h>
    %3 = "ttnn.abs"(%2) : (tensor<64x256xbf16, #h>) -> tensor<64x256xbf16, #h>
    return %3 : tensor<64x256xbf16, #h>
  }
}
