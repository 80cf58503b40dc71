#l1 = #ttnn.buffer_type<l1>
#lay = #ttnn.ttnn_layout<(d0, d1) -> (d0, d1), <1x1>, memref<2x2x!ttcore.tile<32x32, bf16>, #l1>, <block_sharded>, core_ranges = <[#ttnn.core_range<(0,0), (0,0)>]>>
module {
  func.func @main(%x: tensor<64x64xbf16, #lay>, %out: tensor<64x64xbf16, #lay>) -> tensor<64x64xbf16, #lay> {
    %0 = ttnn.d2m_subgraph @d2m_subgraph_0
        ins(%x : tensor<64x64xbf16, #lay>)
        outs(%out : tensor<64x64xbf16, #lay>) : tensor<64x64xbf16, #lay>
    return %0 : tensor<64x64xbf16, #lay>
  }
  func.func private @d2m_subgraph_0(%a: tensor<64x64xbf16, #lay>) -> tensor<64x64xbf16, #lay> {
    %1 = "ttnn.exp"(%a) : (tensor<64x64xbf16, #lay>) -> tensor<64x64xbf16, #lay>
    return %1 : tensor<64x64xbf16, #lay>
  }
}
