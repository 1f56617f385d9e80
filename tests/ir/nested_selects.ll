; ol-nested-selects (src/jit/llvm/nested_selects.cpp): a select of a select that keeps the same value in
; both (the loop vectoriser's predication of `if (active) { if (leaves) keep; else update; }`) becomes one
; select under the logical and of the conditions: `select c1, (select c2, a, b), a` takes b under
; `c1 && !c2`, `select c1, a, (select c2, b, a)` under `!c1 && c2` (both poison-safe: `select c1, x,
; false`). Left alone: an inner select with another use, one that shares no value with the outer, a
; scalar condition of a vector select.
; RUN: opt -load-pass-plugin=%plugin -passes='function(ol-nested-selects)' -S %s | FileCheck %s

; CHECK-LABEL: define <8 x float> @in_true(
; CHECK-NEXT: %[[N:.*]] = xor <8 x i1> %c2, splat (i1 true)
; CHECK-NEXT: %[[C:.*]] = select <8 x i1> %c1, <8 x i1> %[[N]], <8 x i1> zeroinitializer
; CHECK-NEXT: %s = select <8 x i1> %[[C]], <8 x float> %new, <8 x float> %old
; CHECK-NEXT: ret <8 x float> %s
define <8 x float> @in_true(<8 x i1> %c1, <8 x i1> %c2, <8 x float> %old, <8 x float> %new) {
  %in = select <8 x i1> %c2, <8 x float> %old, <8 x float> %new
  %s = select <8 x i1> %c1, <8 x float> %in, <8 x float> %old
  ret <8 x float> %s
}

; CHECK-LABEL: define i32 @in_false(
; CHECK-NEXT: %[[N:.*]] = xor i1 %c1, true
; CHECK-NEXT: %[[C:.*]] = select i1 %[[N]], i1 %c2, i1 false
; CHECK-NEXT: %s = select i1 %[[C]], i32 %new, i32 %old
; CHECK-NEXT: ret i32 %s
define i32 @in_false(i1 %c1, i1 %c2, i32 %old, i32 %new) {
  %in = select i1 %c2, i32 %new, i32 %old
  %s = select i1 %c1, i32 %old, i32 %in
  ret i32 %s
}

; CHECK-LABEL: define <8 x float> @two_uses(
; CHECK-NEXT: %in = select
; CHECK-NEXT: %s = select <8 x i1> %c1, <8 x float> %in, <8 x float> %old
define <8 x float> @two_uses(<8 x i1> %c1, <8 x i1> %c2, <8 x float> %old, <8 x float> %new, ptr %p) {
  %in = select <8 x i1> %c2, <8 x float> %old, <8 x float> %new
  %s = select <8 x i1> %c1, <8 x float> %in, <8 x float> %old
  store <8 x float> %in, ptr %p
  ret <8 x float> %s
}

; CHECK-LABEL: define <8 x float> @nothing_shared(
; CHECK-NEXT: %in = select
; CHECK-NEXT: %s = select <8 x i1> %c1, <8 x float> %in, <8 x float> %other
define <8 x float> @nothing_shared(<8 x i1> %c1, <8 x i1> %c2, <8 x float> %old, <8 x float> %new, <8 x float> %other) {
  %in = select <8 x i1> %c2, <8 x float> %old, <8 x float> %new
  %s = select <8 x i1> %c1, <8 x float> %in, <8 x float> %other
  ret <8 x float> %s
}

; CHECK-LABEL: define <8 x float> @scalar_inner_condition(
; CHECK-NEXT: %in = select i1 %c2
; CHECK-NEXT: %s = select <8 x i1> %c1, <8 x float> %in, <8 x float> %old
define <8 x float> @scalar_inner_condition(<8 x i1> %c1, i1 %c2, <8 x float> %old, <8 x float> %new) {
  %in = select i1 %c2, <8 x float> %old, <8 x float> %new
  %s = select <8 x i1> %c1, <8 x float> %in, <8 x float> %old
  ret <8 x float> %s
}

; A chain, the outer select's block before the inner one's in the function (the pass meets the outer one
; first, then the inner one as an outer select of its own): one fold, nothing left of the other.
; CHECK-LABEL: define <8 x float> @chain(
; CHECK: use:
; CHECK-NEXT: %[[N:.*]] = xor <8 x i1> %c2, splat (i1 true)
; CHECK-NEXT: %[[C:.*]] = select <8 x i1> %c1, <8 x i1> %[[N]], <8 x i1> zeroinitializer
; CHECK-NEXT: %s = select <8 x i1> %[[C]], <8 x float> %j, <8 x float> %old
; CHECK-NEXT: ret <8 x float> %s
; CHECK: def:
; CHECK-NEXT: %j = select <8 x i1> %c3, <8 x float> %new, <8 x float> %old
; CHECK-NEXT: br label %use
define <8 x float> @chain(<8 x i1> %c1, <8 x i1> %c2, <8 x i1> %c3, <8 x float> %old, <8 x float> %new) {
entry:
  br label %def
use:
  %s = select <8 x i1> %c1, <8 x float> %in, <8 x float> %old
  ret <8 x float> %s
def:
  %j = select <8 x i1> %c3, <8 x float> %new, <8 x float> %old
  %in = select <8 x i1> %c2, <8 x float> %old, <8 x float> %j
  br label %use
}
