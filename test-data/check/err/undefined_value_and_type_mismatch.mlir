func.func @f(%a: tensor<4x4xf32>) -> tensor<4x4xf32> {
  %0 = "ttnn.relu"(%missing) : (tensor<4x4xf32>) -> tensor<4x4xf32>
  %1 = "ttnn.exp"(%a) : (tensor<4x4xbf16>) -> tensor<4x4xf32>
  return %1 : tensor<4x4xf32>
}
