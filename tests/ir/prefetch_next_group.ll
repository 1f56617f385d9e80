; ol-prefetch-next-group (src/jit/llvm/prefetch_next_group.cpp): in a work-group function (`__ol_wg.*`,
; the group's x id loaded from its context at byte 32) that reaches rows far away from one group to the
; next (a row computed from the id and a loop's induction variable, times a kernel argument: a
; transpose's `out`), each vector access of global memory in the work-items' code (an access group on it)
; that depends on the id gets a prefetch of the next group's address (id + 1, copied without poison
; flags): a write prefetch before a store, a read prefetch before a load. Left alone: group memory
; (address space 3), scalar accesses (a vectorised loop's remainder); a kernel whose accesses are all near
; the next group's (the next line of each row: a stencil; the id times the group size), which the
; hardware prefetchers follow; a group per row (the id alone times the pitch); a function that is not a
; work-group function.
; RUN: opt -load-pass-plugin=%plugin -passes='function(ol-prefetch-next-group)' -S %s | FileCheck %s

; CHECK-LABEL: define void @__ol_wg.tile(
; CHECK: %gx = load i32, ptr %gxp
; CHECK-NEXT: %ol.next.group = add i32 %gx, 1
; CHECK: %x0.next = shl i32 %ol.next.group, 4
; CHECK: %orow.next = add i32 %x0.next, %ty
; CHECK: %oidx.next = mul i32 %orow.next, %h
; CHECK: %ip.next = getelementptr float, ptr %in
; CHECK: call void @llvm.prefetch.p0(ptr %ip.next, i32 0, i32 3, i32 1)
; CHECK-NEXT: %v = load <8 x float>, ptr %ip
; CHECK-NOT: @llvm.prefetch
; CHECK: store <8 x float> %v, ptr addrspace(3) %tp
; CHECK: %op.next = getelementptr float, ptr %out
; CHECK: call void @llvm.prefetch.p0(ptr %op.next, i32 1, i32 3, i32 1)
; CHECK-NEXT: store <8 x float> %v, ptr %op
define void @__ol_wg.tile(ptr noalias %ctx) {
entry:
  %args = load ptr, ptr %ctx, align 8
  %gxp = getelementptr i8, ptr %ctx, i64 32
  %gx = load i32, ptr %gxp, align 4
  %in = load ptr, ptr %args, align 8
  %outp = getelementptr i8, ptr %args, i64 8
  %out = load ptr, ptr %outp, align 8
  %wp = getelementptr i8, ptr %args, i64 16
  %w = load i32, ptr %wp, align 4
  %hp = getelementptr i8, ptr %args, i64 20
  %h = load i32, ptr %hp, align 4
  %x0 = shl nuw i32 %gx, 4
  br label %row

row:
  %ty = phi i32 [ 0, %entry ], [ %ty.next, %row.end ]
  %rbase = mul i32 %ty, %w
  %ibase = add i32 %rbase, %x0
  %orow = add i32 %x0, %ty
  %oidx = mul i32 %orow, %h
  br label %wi

wi:
  %tx = phi i32 [ 0, %row ], [ %tx.next, %wi ]
  %iidx = add nuw i32 %ibase, %tx
  %iidx64 = zext i32 %iidx to i64
  %ip = getelementptr inbounds float, ptr %in, i64 %iidx64
  %v = load <8 x float>, ptr %ip, align 4, !llvm.access.group !0
  %s = load float, ptr %ip, align 4, !llvm.access.group !0
  %tx64 = zext i32 %tx to i64
  %tp = getelementptr inbounds float, ptr addrspace(3) null, i64 %tx64
  store <8 x float> %v, ptr addrspace(3) %tp, align 4, !llvm.access.group !0
  %o = add nuw i32 %oidx, %tx
  %o64 = zext i32 %o to i64
  %op = getelementptr inbounds float, ptr %out, i64 %o64
  store <8 x float> %v, ptr %op, align 4, !llvm.access.group !0
  %tx.next = add nuw i32 %tx, 8
  %more = icmp ult i32 %tx.next, 16
  br i1 %more, label %wi, label %row.end, !llvm.loop !1

row.end:
  %ty.next = add nuw i32 %ty, 1
  %rows = icmp ult i32 %ty.next, 16
  br i1 %rows, label %row, label %exit

exit:
  ret void
}

; The same tile with rows near the next group's (the id times the group size, loaded from the context at
; byte 56: a generic version's `gx * nx + tx`): no prefetch.
; CHECK-LABEL: define void @__ol_wg.near(
; CHECK-NOT: @llvm.prefetch
; CHECK: ret void
define void @__ol_wg.near(ptr noalias %ctx) {
entry:
  %args = load ptr, ptr %ctx, align 8
  %gxp = getelementptr i8, ptr %ctx, i64 32
  %gx = load i32, ptr %gxp, align 4
  %gsp = getelementptr i8, ptr %ctx, i64 56
  %gs = load i32, ptr %gsp, align 4
  %in = load ptr, ptr %args, align 8
  %outp = getelementptr i8, ptr %args, i64 8
  %out = load ptr, ptr %outp, align 8
  %wp = getelementptr i8, ptr %args, i64 16
  %w = load i32, ptr %wp, align 4
  %x0 = mul i32 %gx, %gs
  br label %row

row:
  %ty = phi i32 [ 0, %entry ], [ %ty.next, %row.end ]
  %rbase = mul i32 %ty, %w
  %ibase = add i32 %rbase, %x0
  br label %wi

wi:
  %tx = phi i32 [ 0, %row ], [ %tx.next, %wi ]
  %iidx = add nuw i32 %ibase, %tx
  %iidx64 = zext i32 %iidx to i64
  %ip = getelementptr inbounds float, ptr %in, i64 %iidx64
  %v = load <8 x float>, ptr %ip, align 4, !llvm.access.group !0
  %op = getelementptr inbounds float, ptr %out, i64 %iidx64
  store <8 x float> %v, ptr %op, align 4, !llvm.access.group !0
  %tx.next = add nuw i32 %tx, 1
  %more = icmp ult i32 %tx.next, 16
  br i1 %more, label %wi, label %row.end, !llvm.loop !1

row.end:
  %ty.next = add nuw i32 %ty, 1
  %rows = icmp ult i32 %ty.next, 16
  br i1 %rows, label %row, label %exit

exit:
  ret void
}

; A group per row (the id alone times the pitch: the next group starts where this one ends): no prefetch.
; CHECK-LABEL: define void @__ol_wg.flat(
; CHECK-NOT: @llvm.prefetch
; CHECK: ret void
define void @__ol_wg.flat(ptr noalias %ctx) {
entry:
  %args = load ptr, ptr %ctx, align 8
  %gxp = getelementptr i8, ptr %ctx, i64 32
  %gx = load i32, ptr %gxp, align 4
  %out = load ptr, ptr %args, align 8
  %hp = getelementptr i8, ptr %args, i64 20
  %h = load i32, ptr %hp, align 4
  %obase = mul i32 %gx, %h
  br label %wi

wi:
  %tx = phi i32 [ 0, %entry ], [ %tx.next, %wi ]
  %o = add nuw i32 %obase, %tx
  %o64 = zext i32 %o to i64
  %op = getelementptr inbounds float, ptr %out, i64 %o64
  store <8 x float> splat (float 1.0), ptr %op, align 4, !llvm.access.group !0
  %tx.next = add nuw i32 %tx, 1
  %more = icmp ult i32 %tx.next, 256
  br i1 %more, label %wi, label %exit, !llvm.loop !1

exit:
  ret void
}

; Not a work-group function (its name): no prefetch.
; CHECK-LABEL: define void @helper(
; CHECK-NOT: @llvm.prefetch
; CHECK: ret void
define void @helper(ptr noalias %ctx) {
entry:
  %args = load ptr, ptr %ctx, align 8
  %gxp = getelementptr i8, ptr %ctx, i64 32
  %gx = load i32, ptr %gxp, align 4
  %out = load ptr, ptr %args, align 8
  %hp = getelementptr i8, ptr %args, i64 20
  %h = load i32, ptr %hp, align 4
  br label %row

row:
  %ty = phi i32 [ 0, %entry ], [ %ty.next, %row.end ]
  %orow = add i32 %gx, %ty
  %oidx = mul i32 %orow, %h
  br label %wi

wi:
  %tx = phi i32 [ 0, %row ], [ %tx.next, %wi ]
  %o = add nuw i32 %oidx, %tx
  %o64 = zext i32 %o to i64
  %op = getelementptr inbounds float, ptr %out, i64 %o64
  store <8 x float> splat (float 1.0), ptr %op, align 4, !llvm.access.group !0
  %tx.next = add nuw i32 %tx, 1
  %more = icmp ult i32 %tx.next, 16
  br i1 %more, label %wi, label %row.end, !llvm.loop !1

row.end:
  %ty.next = add nuw i32 %ty, 1
  %rows = icmp ult i32 %ty.next, 16
  br i1 %rows, label %row, label %exit

exit:
  ret void
}

!0 = distinct !{}
!1 = distinct !{!1, !2}
!2 = !{!"llvm.loop.parallel_accesses", !0}
