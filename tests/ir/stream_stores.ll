; ol-stream-stores (src/jit/llvm/stream_stores.cpp): in an x86 module's work-group function (`__ol_wg.*`,
; the group's x id loaded from its context at byte 32) whose vector stores include one to a row far from
; the next group's (a row computed from the id and a loop's induction variable, times a kernel argument: a
; transpose's `out`), the body after the entry block's reads is copied; the entry block computes whether
; the launch stores at least 8 MiB through those stores (the group counts at bytes 44-52 times the group
; sizes at 56-64, times 4 bytes per work-item: 2097152 work-items) and branches to the copy, in which those
; stores are non-temporal. Left alone: the load, the group memory store, the plain copy's stores; a kernel
; with an atomic (its own ordering, which would not publish non-temporal stores); a tile whose rows are
; near the next group's (the id times the group size); a module for another ISA (the CPU device's store
; fence after each range of work-groups, src/plugin/cpu/launch.rs, is x86's).
; RUN: opt -load-pass-plugin=%plugin -passes='function(ol-stream-stores)' -S %s | FileCheck %s
; RUN: sed 's/^target triple = .*/target triple = "aarch64-unknown-linux-gnu"/' %s | opt -load-pass-plugin=%plugin -passes='function(ol-stream-stores)' -S | FileCheck --check-prefix=OTHER %s
; With ol-prefetch-next-group after it (as the JIT runs them): the non-temporal store gets no write
; prefetch, which would fetch the line it writes around the caches; the plain copy's store does.
; RUN: opt -load-pass-plugin=%plugin -passes='function(ol-stream-stores,ol-prefetch-next-group)' -S %s | FileCheck --check-prefix=BOTH %s

target triple = "x86_64-unknown-linux-gnu"

; CHECK-LABEL: define void @__ol_wg.tile(
; CHECK: entry:
; CHECK: %gx = load i32, ptr %gxp
; CHECK: %[[NGX:.*]] = getelementptr inbounds i8, ptr %ctx, i64 44
; CHECK: getelementptr inbounds i8, ptr %ctx, i64 64
; CHECK: %ol.stream.large = icmp uge i64 %{{.*}}, 2097152
; CHECK-NEXT: br i1 %ol.stream.large, label %ol.stream.plain.stream, label %ol.stream.plain
; CHECK: ol.stream.plain:
; CHECK: wi:
; CHECK: %v = load <8 x float>, ptr %ip, align 4, !llvm.access.group !0{{$}}
; CHECK: store <8 x float> %v, ptr addrspace(3) %tp, align 4, !llvm.access.group !0{{$}}
; CHECK: store <8 x float> %v, ptr %op, align 4, !llvm.access.group !0{{$}}
; CHECK: ol.stream.plain.stream:
; CHECK: wi.stream:
; CHECK: %v.stream = load <8 x float>, ptr %ip.stream, align 4, !llvm.access.group !0{{$}}
; CHECK: store <8 x float> %v.stream, ptr addrspace(3) %tp.stream, align 4, !llvm.access.group !0{{$}}
; CHECK: store <8 x float> %v.stream, ptr %op.stream, align 4, !nontemporal !{{[0-9]+}}, !llvm.access.group !0
; CHECK: ret void
; OTHER-NOT: !nontemporal
; OTHER-NOT: ol.stream
; BOTH-LABEL: define void @__ol_wg.tile(
; BOTH: ol.stream.plain:
; BOTH: call void @llvm.prefetch.p0(ptr %op.next, i32 1, i32 3, i32 1)
; BOTH-NEXT: store <8 x float> %v, ptr %op, align 4
; BOTH: ol.stream.plain.stream:
; BOTH: call void @llvm.prefetch.p0(ptr %ip.stream.next, i32 0, i32 3, i32 1)
; BOTH-NOT: call void @llvm.prefetch.p0({{.*}}, i32 1,
; BOTH: store <8 x float> %v.stream, ptr %op.stream, align 4, !nontemporal !{{[0-9]+}}, !llvm.access.group !0
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


; The same tile with an atomic: left alone.
; CHECK-LABEL: define void @__ol_wg.counted(
; CHECK-NOT: !nontemporal
; CHECK-NOT: ol.stream
; CHECK: ret void
define void @__ol_wg.counted(ptr noalias %ctx) {
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
  %done = atomicrmw add ptr %out, i32 1 monotonic, align 4
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

; The tile with rows near the next group's (the id times the group size): left alone.
; CHECK-LABEL: define void @__ol_wg.near(
; CHECK-NOT: !nontemporal
; CHECK-NOT: ol.stream
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

!0 = distinct !{}
!1 = distinct !{!1, !2}
!2 = !{!"llvm.loop.parallel_accesses", !0}
