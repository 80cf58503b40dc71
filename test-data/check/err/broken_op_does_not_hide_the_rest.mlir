func.func @f(%a: tensor<4x4xf32>) -> tensor<4x4xf32> {
  %0 = "ttnn.relu"(%a : (tensor<4x4xf32>) -> tensor<4x4xf32>
  %1 = "ttnn.exp"(%a) : (tensor<4x4xf32>) -> tensor<4x4xf32>
  %2 = "ttnn.neg"(%nope) : (tensor<4x4xf32>) -> tensor<4x4xf32>
  return %1 : tensor<4x4xf32>
}
