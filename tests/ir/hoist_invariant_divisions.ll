; ol-hoist-invariant-divisions (src/jit/llvm/workarounds/hoist_invariant_divisions.cpp): a loop-invariant
; division by a run-time divisor under a condition in a loop leaves the loop, its divisor made safe (LLVM
; 22.1's vectoriser gives every lane lane 0's predicated result: shared/evidence/lv-predicated-urem-gather);
; a division outside any loop, or by the induction variable, stays where it is.
; RUN: opt -load-pass-plugin=%plugin -passes='function(ol-hoist-invariant-divisions)' -S %s | FileCheck %s

; CHECK-LABEL: define void @f(
; CHECK: entry:
; CHECK: icmp eq i32 %n.fr, 0
; CHECK: %idx = urem i32 %j5, %ol.safe.divisor
; CHECK: loop:
; CHECK: then:
; CHECK-NOT: urem i32 %j5
; CHECK: latch:
define void @f(ptr noalias %out, ptr noalias %tile, i32 %j, i32 %n) {
entry:
  %j5 = mul i32 %j, 5
  br label %loop
loop:
  %i = phi i64 [ 0, %entry ], [ %i.next, %latch ]
  %i32 = trunc nuw nsw i64 %i to i32
  %s = add i32 %j, %i32
  %r = urem i32 %s, 3
  %c = icmp eq i32 %r, 0
  br i1 %c, label %then, label %latch
then:
  %idx = urem i32 %j5, %n
  %idx64 = zext nneg i32 %idx to i64
  %p = getelementptr inbounds nuw i32, ptr %tile, i64 %idx64
  %v = load i32, ptr %p, align 4
  br label %latch
latch:
  %x = phi i32 [ %v, %then ], [ -1, %loop ]
  %po = getelementptr inbounds nuw i32, ptr %out, i64 %i
  store i32 %x, ptr %po, align 4
  %i.next = add nuw nsw i64 %i, 1
  %ec = icmp eq i64 %i.next, 96
  br i1 %ec, label %exit, label %loop
exit:
  ret void
}

; the remainder by the induction variable stays under its condition
; CHECK-LABEL: define void @varying(
; CHECK: then:
; CHECK-NEXT: %w = urem i32 %a, %i
define void @varying(ptr noalias %out, i32 %a) {
entry:
  br label %loop
loop:
  %i = phi i32 [ 1, %entry ], [ %i.next, %latch ]
  %odd = and i32 %i, 1
  %c = icmp eq i32 %odd, 0
  br i1 %c, label %then, label %latch
then:
  %w = urem i32 %a, %i
  %po = getelementptr inbounds i32, ptr %out, i32 %i
  store i32 %w, ptr %po, align 4
  br label %latch
latch:
  %i.next = add nuw nsw i32 %i, 1
  %ec = icmp eq i32 %i.next, 64
  br i1 %ec, label %exit, label %loop
exit:
  ret void
}

; no loop: nothing to do
; CHECK-LABEL: define i32 @plain(
; CHECK-NEXT: %q = udiv i32 %a, %b
; CHECK-NEXT: ret i32 %q
define i32 @plain(i32 %a, i32 %b) {
  %q = udiv i32 %a, %b
  ret i32 %q
}
