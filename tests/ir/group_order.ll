; ol-group-order (src/jit/llvm/group_order.cpp): a work-group function whose accesses are rows away for the
; next group along x and not along y (an element-wise tile on a grid whose x goes down the rows) is marked
; y-first (the attribute and the global the CPU plugin reads); a transpose (far along both), a stencil (far
; along y only), a kernel that does not read its y id, and a function that is not a work-group function
; are not.
; RUN: opt -load-pass-plugin=%plugin -passes='function(ol-group-order)' -S %s | FileCheck %s
; After it, ol-prefetch-next-group leaves the y-first function alone (its next group continues the same
; rows) and still prefetches the transpose's far rows:
; RUN: opt -load-pass-plugin=%plugin -passes='function(ol-group-order,ol-prefetch-next-group)' -S %s | FileCheck %s --check-prefix=PF
; PF-LABEL: define void @__ol_wg.rows(
; PF-NOT: @llvm.prefetch
; PF-LABEL: define void @__ol_wg.transpose(
; PF: call void @llvm.prefetch

; CHECK: @__ol_wg.rows.ol.groups_y_first = constant i8 1
; CHECK-NOT: @__ol_wg.transpose.ol.groups_y_first
; CHECK-NOT: @__ol_wg.stencil.ol.groups_y_first
; CHECK-NOT: @__ol_wg.onlyx.ol.groups_y_first
; CHECK-NOT: @helper.ol.groups_y_first
; CHECK: define void @__ol_wg.rows(ptr noalias %ctx) #[[Y:[0-9]+]]
; CHECK-LABEL: define void @__ol_wg.transpose(ptr noalias %ctx) {
; CHECK-LABEL: define void @__ol_wg.stencil(ptr noalias %ctx) {
; CHECK-LABEL: define void @__ol_wg.onlyx(ptr noalias %ctx) {
; CHECK-LABEL: define void @helper(ptr noalias %ctx) {
; CHECK: attributes #[[Y]] = { "ol-group-order"="y-first" }

; c[r * cols + k] = a + b, r = gx * 16 + ty, k = gy * 16 + tx
define void @__ol_wg.rows(ptr noalias %ctx) {
entry:
  %args = load ptr, ptr %ctx, align 8
  %gxp = getelementptr i8, ptr %ctx, i64 32
  %gx = load i32, ptr %gxp, align 4
  %gyp = getelementptr i8, ptr %ctx, i64 36
  %gy = load i32, ptr %gyp, align 4
  %a = load ptr, ptr %args, align 8
  %cp = getelementptr i8, ptr %args, i64 8
  %c = load ptr, ptr %cp, align 8
  %colsp = getelementptr i8, ptr %args, i64 16
  %cols = load i32, ptr %colsp, align 4
  %r0 = shl nuw i32 %gx, 4
  %k0 = shl nuw i32 %gy, 4
  br label %row

row:
  %ty = phi i32 [ 0, %entry ], [ %ty.next, %row.end ]
  %r = add i32 %r0, %ty
  %rbase = mul i32 %r, %cols
  %base = add i32 %rbase, %k0
  br label %wi

wi:
  %tx = phi i32 [ 0, %row ], [ %tx.next, %wi ]
  %i = add nuw i32 %base, %tx
  %i64 = zext i32 %i to i64
  %ap = getelementptr inbounds i32, ptr %a, i64 %i64
  %v = load <8 x i32>, ptr %ap, align 4, !llvm.access.group !0
  %s = add <8 x i32> %v, %v
  %op = getelementptr inbounds i32, ptr %c, i64 %i64
  store <8 x i32> %s, ptr %op, align 4, !llvm.access.group !0
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

; out[(gx * 16 + ty) * h + gy * 16 + tx] = in[(gy * 16 + ty) * w + gx * 16 + tx]
define void @__ol_wg.transpose(ptr noalias %ctx) {
entry:
  %args = load ptr, ptr %ctx, align 8
  %gxp = getelementptr i8, ptr %ctx, i64 32
  %gx = load i32, ptr %gxp, align 4
  %gyp = getelementptr i8, ptr %ctx, i64 36
  %gy = load i32, ptr %gyp, align 4
  %in = load ptr, ptr %args, align 8
  %outp = getelementptr i8, ptr %args, i64 8
  %out = load ptr, ptr %outp, align 8
  %wp = getelementptr i8, ptr %args, i64 16
  %w = load i32, ptr %wp, align 4
  %hp = getelementptr i8, ptr %args, i64 20
  %h = load i32, ptr %hp, align 4
  %x0 = shl nuw i32 %gx, 4
  %y0 = shl nuw i32 %gy, 4
  br label %row

row:
  %ty = phi i32 [ 0, %entry ], [ %ty.next, %row.end ]
  %irow = add i32 %y0, %ty
  %ibase0 = mul i32 %irow, %w
  %ibase = add i32 %ibase0, %x0
  %orow = add i32 %x0, %ty
  %obase0 = mul i32 %orow, %h
  %obase = add i32 %obase0, %y0
  br label %wi

wi:
  %tx = phi i32 [ 0, %row ], [ %tx.next, %wi ]
  %ii = add nuw i32 %ibase, %tx
  %ii64 = zext i32 %ii to i64
  %ip = getelementptr inbounds float, ptr %in, i64 %ii64
  %v = load <8 x float>, ptr %ip, align 4, !llvm.access.group !0
  %oi = add nuw i32 %obase, %tx
  %oi64 = zext i32 %oi to i64
  %op = getelementptr inbounds float, ptr %out, i64 %oi64
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

; out[(gy * 16 + ty) * w + gx * 16 + tx] = in[...] (rows follow y)
define void @__ol_wg.stencil(ptr noalias %ctx) {
entry:
  %args = load ptr, ptr %ctx, align 8
  %gxp = getelementptr i8, ptr %ctx, i64 32
  %gx = load i32, ptr %gxp, align 4
  %gyp = getelementptr i8, ptr %ctx, i64 36
  %gy = load i32, ptr %gyp, align 4
  %in = load ptr, ptr %args, align 8
  %outp = getelementptr i8, ptr %args, i64 8
  %out = load ptr, ptr %outp, align 8
  %wp = getelementptr i8, ptr %args, i64 16
  %w = load i32, ptr %wp, align 4
  %x0 = shl nuw i32 %gx, 4
  %y0 = shl nuw i32 %gy, 4
  br label %row

row:
  %ty = phi i32 [ 0, %entry ], [ %ty.next, %row.end ]
  %r = add i32 %y0, %ty
  %rbase = mul i32 %r, %w
  %base = add i32 %rbase, %x0
  br label %wi

wi:
  %tx = phi i32 [ 0, %row ], [ %tx.next, %wi ]
  %i = add nuw i32 %base, %tx
  %i64 = zext i32 %i to i64
  %ip = getelementptr inbounds float, ptr %in, i64 %i64
  %v = load <8 x float>, ptr %ip, align 4, !llvm.access.group !0
  %op = getelementptr inbounds float, ptr %out, i64 %i64
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

; the rows of @__ol_wg.rows from the x id, but no y id read
define void @__ol_wg.onlyx(ptr noalias %ctx) {
entry:
  %args = load ptr, ptr %ctx, align 8
  %gxp = getelementptr i8, ptr %ctx, i64 32
  %gx = load i32, ptr %gxp, align 4
  %c = load ptr, ptr %args, align 8
  %colsp = getelementptr i8, ptr %args, i64 16
  %cols = load i32, ptr %colsp, align 4
  %r0 = shl nuw i32 %gx, 4
  br label %row

row:
  %ty = phi i32 [ 0, %entry ], [ %ty.next, %row.end ]
  %r = add i32 %r0, %ty
  %base = mul i32 %r, %cols
  br label %wi

wi:
  %tx = phi i32 [ 0, %row ], [ %tx.next, %wi ]
  %i = add nuw i32 %base, %tx
  %i64 = zext i32 %i to i64
  %op = getelementptr inbounds i32, ptr %c, i64 %i64
  store <8 x i32> splat (i32 1), ptr %op, align 4, !llvm.access.group !0
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

; @__ol_wg.rows' body in a function that is not a work-group function
define void @helper(ptr noalias %ctx) {
entry:
  %args = load ptr, ptr %ctx, align 8
  %gxp = getelementptr i8, ptr %ctx, i64 32
  %gx = load i32, ptr %gxp, align 4
  %gyp = getelementptr i8, ptr %ctx, i64 36
  %gy = load i32, ptr %gyp, align 4
  %c = load ptr, ptr %args, align 8
  %colsp = getelementptr i8, ptr %args, i64 16
  %cols = load i32, ptr %colsp, align 4
  %r0 = shl nuw i32 %gx, 4
  %k0 = shl nuw i32 %gy, 4
  br label %row

row:
  %ty = phi i32 [ 0, %entry ], [ %ty.next, %row.end ]
  %r = add i32 %r0, %ty
  %rbase = mul i32 %r, %cols
  %base = add i32 %rbase, %k0
  br label %wi

wi:
  %tx = phi i32 [ 0, %row ], [ %tx.next, %wi ]
  %i = add nuw i32 %base, %tx
  %i64 = zext i32 %i to i64
  %op = getelementptr inbounds i32, ptr %c, i64 %i64
  store <8 x i32> splat (i32 1), ptr %op, align 4, !llvm.access.group !0
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

!0 = distinct !{}
!1 = distinct !{!1, !2}
!2 = !{!"llvm.loop.parallel_accesses", !0}
