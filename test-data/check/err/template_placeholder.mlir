func.func @f() {
  %0 = "emitc.constant"() <{value = insert_src_dev_id : i16}> : () -> i16
  return
}
