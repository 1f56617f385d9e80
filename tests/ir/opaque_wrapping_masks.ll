; ol-opaque-wrapping-masks (src/jit/llvm/workarounds/opaque_wrapping_masks.cpp): a masked induction
; variable that wraps ((i + c) & (2^k - 1)) is frozen before the vectoriser sees it (LLVM 22.1 treats it as
; consecutive under a no-wrap check of the wrong width); masks ScalarEvolution folds, of invariant values,
; not of low bits, or outside any loop are left alone.
; RUN: opt -load-pass-plugin=%plugin -passes='function(ol-opaque-wrapping-masks)' -S %s | FileCheck %s

; CHECK-LABEL: define void @ring(
; CHECK: %m.ol.opaque = freeze i32 %m
; CHECK-NEXT: %idx = or disjoint i32 %m.ol.opaque, %base
define void @ring(ptr noalias %out, ptr noalias %in, i32 %w, i64 %n) {
entry:
  %base = shl i32 %w, 6
  %go = icmp ne i64 %n, 0
  br i1 %go, label %loop, label %exit
loop:
  %i = phi i64 [ 0, %entry ], [ %i.next, %loop ]
  %i32 = trunc i64 %i to i32
  %s = add i32 %i32, 63
  %m = and i32 %s, 63
  %idx = or disjoint i32 %m, %base
  %idx64 = zext i32 %idx to i64
  %p = getelementptr inbounds nuw i64, ptr %in, i64 %idx64
  %v = load i64, ptr %p, align 8
  %po = getelementptr inbounds nuw i64, ptr %out, i64 %i
  store i64 %v, ptr %po, align 8
  %i.next = add nuw nsw i64 %i, 1
  %ec = icmp eq i64 %i.next, %n
  br i1 %ec, label %exit, label %loop
exit:
  ret void
}

; CHECK-LABEL: define i32 @folded(
; CHECK-NOT: freeze
; CHECK: ret i32 %outside
define i32 @folded(ptr noalias %out, i32 %a) {
entry:
  %outside = and i32 %a, 15
  br label %loop
loop:
  %i = phi i32 [ 0, %entry ], [ %i.next, %loop ]
  %lane = and i32 %i, 63
  %inv = and i32 %a, 7
  %bits = and i32 %i, 12
  %t = add i32 %lane, %inv
  %t2 = add i32 %t, %bits
  %po = getelementptr inbounds i32, ptr %out, i32 %i
  store i32 %t2, ptr %po, align 4
  %i.next = add nuw nsw i32 %i, 1
  %ec = icmp eq i32 %i.next, 64
  br i1 %ec, label %exit, label %loop
exit:
  ret i32 %outside
}
