; ol-stop-points (src/jit/llvm/stop_points.cpp): every CFG cycle counts its trips and calls the runtime's
; poll every 4096 of them; code without a cycle is left alone.
; RUN: opt -load-pass-plugin=%plugin -passes='function(ol-stop-points)' -S %s | FileCheck %s

; CHECK-LABEL: define void @counted(
; CHECK: ol.stop.poll:
; CHECK-NEXT: call void @__ol_rs_rt_poll()
define void @counted(ptr %p, i64 %n) {
entry:
  br label %loop
loop:
  %i = phi i64 [ 0, %entry ], [ %i.next, %loop ]
  %g = getelementptr i32, ptr %p, i64 %i
  store i32 0, ptr %g, align 4
  %i.next = add i64 %i, 1
  %c = icmp ult i64 %i.next, %n
  br i1 %c, label %loop, label %exit
exit:
  ret void
}

; an endless self-loop polls too
; CHECK-LABEL: define void @endless(
; CHECK: call void @__ol_rs_rt_poll()
define void @endless() {
entry:
  br label %spin
spin:
  br label %spin
}

; CHECK-LABEL: define void @straight(
; CHECK-NOT: __ol_rs_rt_poll
; CHECK: ret void
define void @straight(ptr %p) {
  store i32 1, ptr %p, align 4
  ret void
}
