func.func @f() {
  "ttnn.x"() {name = "café"} : () -> ()
  return
}
