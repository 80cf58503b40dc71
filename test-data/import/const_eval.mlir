// A linear layer whose weight is a parameter: its transpose derives from nothing the caller
// feeds per inference, so tt-mlir's const-eval hoisting runs it once, at load.
module {
  func.func @main(%x: tensor<32x1024xbf16> {ttcore.argument_type = #ttcore.argument_type<input>}, %w: tensor<1024x1024xbf16> {ttcore.argument_type = #ttcore.argument_type<parameter>}) -> tensor<32x1024xbf16> {
    %0 = "ttir.transpose"(%w) <{dim0 = 0 : si32, dim1 = 1 : si32}> : (tensor<1024x1024xbf16>) -> tensor<1024x1024xbf16> loc("w_t")
    %1 = "ttir.matmul"(%x, %0) : (tensor<32x1024xbf16>, tensor<1024x1024xbf16>) -> tensor<32x1024xbf16> loc("mm")
    %2 = "ttir.relu"(%1) : (tensor<32x1024xbf16>) -> tensor<32x1024xbf16> loc("act")
    return %2 : tensor<32x1024xbf16>
  }
}
