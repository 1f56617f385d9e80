; ol-realign-lane-reads (src/jit/llvm/realign_lane_reads.cpp): a vector read of a warp's exchange area at a
; lane distance that is not a multiple of the vector length (tagged by the lowering's readLane with the
; scope "ol.lane.offset.read") becomes the two aligned vector loads around it, frozen, and a shuffle. Kept:
; an aligned read, an untagged one, a volatile one.
; RUN: opt -load-pass-plugin=%plugin -passes='function(ol-realign-lane-reads)' -S %s | FileCheck %s

; lane - 1 over lanes 8i..8i+7: lanes 8i-8..8i-1 and 8i..8i+7, elements 7..14
; CHECK-LABEL: define <8 x float> @below(
; CHECK: %[[LO:.*]] = getelementptr i8, ptr %own, i64 -32
; CHECK: %[[A:.*]] = load <8 x float>, ptr %[[LO]], align 4, !alias.scope
; CHECK: %[[FA:.*]] = freeze <8 x float> %[[A]]
; CHECK: %[[B:.*]] = load <8 x float>, ptr %own, align 4, !alias.scope
; CHECK: %[[FB:.*]] = freeze <8 x float> %[[B]]
; CHECK: shufflevector <8 x float> %[[FA]], <8 x float> %[[FB]], <8 x i32> <i32 7, i32 8, i32 9, i32 10, i32 11, i32 12, i32 13, i32 14>
define <8 x float> @below(ptr %own) {
  %p = getelementptr i8, ptr %own, i64 -4
  %v = load <8 x float>, ptr %p, align 4, !alias.scope !2
  ret <8 x float> %v
}

; lane + 2 (a shuffle down): lanes 8i..8i+7 and 8i+8..8i+15, elements 2..9
; CHECK-LABEL: define <8 x i32> @above(
; CHECK: %[[A:.*]] = load <8 x i32>, ptr %own, align 4
; CHECK: %[[H:.*]] = getelementptr i8, ptr %own, i64 32
; CHECK: %[[B:.*]] = load <8 x i32>, ptr %[[H]], align 4
; CHECK: shufflevector <8 x i32> %{{.*}}, <8 x i32> %{{.*}}, <8 x i32> <i32 2, i32 3, i32 4, i32 5, i32 6, i32 7, i32 8, i32 9>
define <8 x i32> @above(ptr %own) {
  %p = getelementptr i32, ptr %own, i64 2
  %v = load <8 x i32>, ptr %p, align 4, !alias.scope !2
  ret <8 x i32> %v
}

; a whole vector away, untagged, volatile: as they were
; CHECK-LABEL: define <8 x float> @kept(
; CHECK-NOT: shufflevector
; CHECK: ret <8 x float>
define <8 x float> @kept(ptr %own) {
  %p = getelementptr i8, ptr %own, i64 -32
  %a = load <8 x float>, ptr %p, align 4, !alias.scope !2
  %q = getelementptr i8, ptr %own, i64 -4
  %b = load <8 x float>, ptr %q, align 4
  %c = load volatile <8 x float>, ptr %q, align 4, !alias.scope !2
  %s = fadd <8 x float> %a, %b
  %t = fadd <8 x float> %s, %c
  ret <8 x float> %t
}

!0 = !{!"ol.lane.offset.reads"}
!1 = !{!"ol.lane.offset.read", !0}
!2 = !{!1}
