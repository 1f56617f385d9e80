; ol-implied-selects (src/jit/llvm/implied_selects.cpp): in an arm of `select C', P, Q`, a select whose
; condition C' decides is its chosen arm, through instructions used only there (a warp scan's shuffle read
; with wrap-around under the kernel's own `lane >= k`; an integer form through zext and add). Kept: a select
; C' does not decide, one behind an instruction with another use, one behind a division.
; RUN: opt -load-pass-plugin=%plugin -passes='function(ol-implied-selects)' -S %s | FileCheck %s

; the wrapped read is dead where the kernel keeps v (lane < 2): the false arm reads slot[own - 2] only
; CHECK-LABEL: define float @scan_step(
; CHECK: %up = bitcast i32 %near to float
; CHECK: %r = select i1 %at, float %sum, float %v
define float @scan_step(ptr %slot, i32 %lane, float %v, i1 %inmask) {
  %below = icmp ult i32 %lane, 2
  %wrapped = getelementptr i32, ptr %slot, i64 30
  %far = load i32, ptr %wrapped, align 4
  %back = getelementptr i32, ptr %slot, i64 -2
  %near = load i32, ptr %back, align 4
  %src = select i1 %below, i32 %far, i32 %near
  %up = bitcast i32 %src to float
  %masked = select i1 %inmask, float %up, float 0.0
  %sum = fadd float %v, %masked
  %at = icmp uge i32 %lane, 2
  %r = select i1 %at, float %sum, float %v
  ret float %r
}

; `x > 10` decides `x < 5` (false) in the true arm, through zext and add
; CHECK-LABEL: define i64 @integer(
; CHECK: %w = zext i32 %b to i64
; CHECK: %r = select i1 %big, i64 %s, i64 0
define i64 @integer(i32 %x, i32 %a, i32 %b) {
  %small = icmp ult i32 %x, 5
  %m = select i1 %small, i32 %a, i32 %b
  %w = zext i32 %m to i64
  %s = add i64 %w, 7
  %big = icmp ugt i32 %x, 10
  %r = select i1 %big, i64 %s, i64 0
  ret i64 %r
}

; kept: `x > 3` does not decide `x < 5`; %w has a second use; a division between
; CHECK-LABEL: define i64 @kept(
; CHECK: %m = select i1 %small, i32 %a, i32 %b
; CHECK: %w = zext i32 %m to i64
; CHECK: %m2 = select i1 %small, i32 %a, i32 %b
; CHECK: %d = udiv i32 100, %m2
; CHECK: %m3 = select i1 %small, i32 %a, i32 %b
; CHECK: %r3 = select i1 %some, i32 %m3, i32 1
define i64 @kept(i32 %x, i32 %a, i32 %b, ptr %out) {
  %small = icmp ult i32 %x, 5
  %m = select i1 %small, i32 %a, i32 %b
  %w = zext i32 %m to i64
  store i64 %w, ptr %out, align 8
  %big = icmp ugt i32 %x, 10
  %r = select i1 %big, i64 %w, i64 0
  %m2 = select i1 %small, i32 %a, i32 %b
  %d = udiv i32 100, %m2
  %d64 = zext i32 %d to i64
  %r2 = select i1 %big, i64 %d64, i64 0
  %some = icmp ugt i32 %x, 3
  %m3 = select i1 %small, i32 %a, i32 %b
  %r3 = select i1 %some, i32 %m3, i32 1
  %r3w = zext i32 %r3 to i64
  %t = add i64 %r, %r2
  %t2 = add i64 %t, %r3w
  ret i64 %t2
}
