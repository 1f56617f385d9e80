; ol-prefetch-streams (src/jit/llvm/prefetch_streams.cpp): in a loop of the kernel's own inside a work-item
; loop (marked llvm.loop.parallel_accesses, the loads in its access group), each stream of loads stepping
; at most 64 bytes gets one prefetch 1024 bytes ahead (a CSR row's col[] and val[]; val[k + 1] is the same
; stream as val[k]). Left alone: the work-item loops themselves, a loop inside no work-item loop (or one
; that lost its mark), group memory (address space 3), allocas, a stride over 64 bytes, a load outside the
; work-item loop's access group.
; RUN: opt -load-pass-plugin=%plugin -passes='function(ol-prefetch-streams)' -S %s | FileCheck %s

; CHECK-LABEL: define void @rows(
; CHECK: wi:
; CHECK-NOT: @llvm.prefetch
; CHECK: row:
; CHECK: %[[C:.*]] = getelementptr i8, ptr %col, i64 %[[OFF:.*]]
; CHECK: %[[V:.*]] = getelementptr i8, ptr %val, i64 %[[OFF]]
; CHECK: call void @llvm.prefetch.p0(ptr %[[C]], i32 0, i32 3, i32 1)
; CHECK-NEXT: %c = load i32, ptr %cp
; CHECK: call void @llvm.prefetch.p0(ptr %[[V]], i32 0, i32 3, i32 1)
; CHECK-NEXT: %v = load i32, ptr %vp
; CHECK-NOT: @llvm.prefetch
; CHECK: wi.end:
define void @rows(ptr %rp, ptr %col, ptr %val, ptr %out, i64 %n) {
entry:
  br label %wi

wi:
  %i = phi i64 [ 0, %entry ], [ %i.next, %wi.end ]
  %rpi = getelementptr inbounds i32, ptr %rp, i64 %i
  %b32 = load i32, ptr %rpi, align 4, !llvm.access.group !0
  %rpi1 = getelementptr inbounds i32, ptr %rpi, i64 1
  %e32 = load i32, ptr %rpi1, align 4, !llvm.access.group !0
  %b = zext i32 %b32 to i64
  %e = zext i32 %e32 to i64
  %any = icmp ult i64 %b, %e
  br i1 %any, label %row, label %wi.end

row:
  %k = phi i64 [ %b, %wi ], [ %k.next, %row ]
  %s = phi i32 [ 0, %wi ], [ %s.next, %row ]
  %cp = getelementptr inbounds i32, ptr %col, i64 %k
  %c = load i32, ptr %cp, align 4, !llvm.access.group !0
  %vp = getelementptr inbounds i32, ptr %val, i64 %k
  %v = load i32, ptr %vp, align 4, !llvm.access.group !0
  %vp1 = getelementptr inbounds i8, ptr %vp, i64 4
  %v1 = load i32, ptr %vp1, align 4, !llvm.access.group !0
  %m = mul i32 %c, %v
  %m1 = add i32 %m, %v1
  %s.next = add i32 %s, %m1
  %k.next = add nuw i64 %k, 1
  %more = icmp ult i64 %k.next, %e
  br i1 %more, label %row, label %wi.end

wi.end:
  %r = phi i32 [ 0, %wi ], [ %s.next, %row ]
  %op = getelementptr inbounds i32, ptr %out, i64 %i
  store i32 %r, ptr %op, align 4, !llvm.access.group !0
  %i.next = add nuw i64 %i, 1
  %done = icmp eq i64 %i.next, %n
  br i1 %done, label %exit, label %wi, !llvm.loop !1

exit:
  ret void
}

; group memory, an alloca, a 128-byte stride and a load outside the access group: no stream to prefetch
; CHECK-LABEL: define void @kinds(
; CHECK-NOT: @llvm.prefetch
; CHECK: ret void
define void @kinds(ptr addrspace(3) %lds, ptr %far, ptr %other, ptr %out, i64 %n, i64 %m) {
entry:
  %priv = alloca [64 x i32], align 4
  br label %wi

wi:
  %i = phi i64 [ 0, %entry ], [ %i.next, %wi.end ]
  br label %inner

inner:
  %k = phi i64 [ 0, %wi ], [ %k.next, %inner ]
  %s = phi i32 [ 0, %wi ], [ %s4, %inner ]
  %lp = getelementptr inbounds i32, ptr addrspace(3) %lds, i64 %k
  %l = load i32, ptr addrspace(3) %lp, align 4, !llvm.access.group !0
  %pp = getelementptr inbounds i32, ptr %priv, i64 %k
  %p = load i32, ptr %pp, align 4, !llvm.access.group !0
  %fp = getelementptr inbounds [32 x i32], ptr %far, i64 %k
  %f = load i32, ptr %fp, align 4, !llvm.access.group !0
  %op = getelementptr inbounds i32, ptr %other, i64 %k
  %o = load i32, ptr %op, align 4
  %s1 = add i32 %s, %l
  %s2 = add i32 %s1, %p
  %s3 = add i32 %s2, %f
  %s4 = add i32 %s3, %o
  %k.next = add nuw i64 %k, 1
  %more = icmp ult i64 %k.next, %m
  br i1 %more, label %inner, label %wi.end

wi.end:
  %outp = getelementptr inbounds i32, ptr %out, i64 %i
  store i32 %s4, ptr %outp, align 4, !llvm.access.group !0
  %i.next = add nuw i64 %i, 1
  %done = icmp eq i64 %i.next, %n
  br i1 %done, label %exit, label %wi, !llvm.loop !1

exit:
  ret void
}

; work-item loops in two dimensions (each marked, each with its own access group): the inner one's
; stream is a work-item loop's, which the hardware prefetchers follow
; CHECK-LABEL: define void @work_items_2d(
; CHECK-NOT: @llvm.prefetch
; CHECK: ret void
define void @work_items_2d(ptr %in, ptr %out, i64 %w, i64 %h) {
entry:
  br label %y

y:
  %j = phi i64 [ 0, %entry ], [ %j.next, %y.end ]
  %row = mul i64 %j, %w
  br label %x

x:
  %i = phi i64 [ 0, %y ], [ %i.next, %x ]
  %idx = add i64 %row, %i
  %ip = getelementptr inbounds float, ptr %in, i64 %idx
  %v = load float, ptr %ip, align 4, !llvm.access.group !5
  %opp = getelementptr inbounds float, ptr %out, i64 %idx
  store float %v, ptr %opp, align 4, !llvm.access.group !5
  %i.next = add nuw i64 %i, 1
  %xd = icmp eq i64 %i.next, %w
  br i1 %xd, label %y.end, label %x, !llvm.loop !6

y.end:
  %j.next = add nuw i64 %j, 1
  %yd = icmp eq i64 %j.next, %h
  br i1 %yd, label %exit, label %y, !llvm.loop !8

exit:
  ret void
}

; a nest inside no work-item loop (a group-invariant region's, or a work-item loop's copy that lost its
; mark: its loads' access group is no enclosing loop's)
; CHECK-LABEL: define void @unmarked(
; CHECK-NOT: @llvm.prefetch
; CHECK: ret void
define void @unmarked(ptr %in, ptr %out, i64 %n, i64 %m) {
entry:
  br label %outer

outer:
  %i = phi i64 [ 0, %entry ], [ %i.next, %outer.end ]
  %base = mul i64 %i, %m
  br label %inner

inner:
  %k = phi i64 [ 0, %outer ], [ %k.next, %inner ]
  %s = phi float [ 0.0, %outer ], [ %s.next, %inner ]
  %idx = add i64 %base, %k
  %ip = getelementptr inbounds float, ptr %in, i64 %idx
  %v = load float, ptr %ip, align 4, !llvm.access.group !0
  %s.next = fadd float %s, %v
  %k.next = add nuw i64 %k, 1
  %more = icmp ult i64 %k.next, %m
  br i1 %more, label %inner, label %outer.end

outer.end:
  %outp = getelementptr inbounds float, ptr %out, i64 %i
  store float %s.next, ptr %outp, align 4
  %i.next = add nuw i64 %i, 1
  %done = icmp eq i64 %i.next, %n
  br i1 %done, label %exit, label %outer

exit:
  ret void
}

!0 = distinct !{}
!1 = distinct !{!1, !2}
!2 = !{!"llvm.loop.parallel_accesses", !0}
!4 = distinct !{}
!5 = !{!4, !9}
!6 = distinct !{!6, !7}
!7 = !{!"llvm.loop.parallel_accesses", !9}
!8 = distinct !{!8, !10}
!9 = distinct !{}
!10 = !{!"llvm.loop.parallel_accesses", !4}
