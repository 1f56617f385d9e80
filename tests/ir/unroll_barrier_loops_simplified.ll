; ol-unroll-barrier-loops on a loop already in LLVM's loop-simplify form (a preheader, one latch, dedicated
; exits): the transform puts a loop in that form itself and must not take "nothing to change" for "cannot".
; The kernel and IR are tests/ir/lowering/ol-unroll-barrier-loops.fires.ll's (a tree by halves from N / 2,
; specialised for 256x1x1), simplified first (loop-simplify, lcssa), and the lowering must still unroll it.
; RUN: opt -load-pass-plugin=%plugin -passes='function(loop-simplify,lcssa),ol-lower<kernel=k;group=256x1x1;warp=32;stats>' -disable-output %s 2>&1 | FileCheck %s
; CHECK: ol-lower: k: {{(.*, )?}}ol-unroll-barrier-loops 1

source_filename = "k.c"
target datalayout = "e-m:e-p270:32:32-p271:32:32-p272:64:64-i64:64-i128:128-f80:128-n8:16:32:64-S128"
target triple = "x86_64-pc-linux-gnu"

@k.s = internal unnamed_addr addrspace(3) global [256 x float] zeroinitializer, align 4

define protected ptx_kernel void @k(ptr noundef writeonly captures(none) %0, ptr noundef readonly captures(none) %1) local_unnamed_addr #0 {
  %3 = tail call noundef range(i32 0, 2147483647) i32 @llvm.nvvm.read.ptx.sreg.ctaid.x()
  %4 = tail call noundef range(i32 1, 1025) i32 @llvm.nvvm.read.ptx.sreg.ntid.x()
  %5 = mul i32 %3, %4
  %6 = tail call noundef range(i32 0, 1024) i32 @llvm.nvvm.read.ptx.sreg.tid.x()
  %7 = add i32 %5, %6
  %8 = zext i32 %7 to i64
  %9 = getelementptr inbounds nuw float, ptr %1, i64 %8
  %10 = load float, ptr %9, align 4, !tbaa !9
  %11 = zext nneg i32 %6 to i64
  %12 = getelementptr inbounds nuw float, ptr addrspace(3) @k.s, i64 %11
  store float %10, ptr addrspace(3) %12, align 4, !tbaa !9
  tail call void @llvm.nvvm.barrier.cta.sync.aligned.all(i32 0)
  %13 = lshr i32 %4, 1
  %14 = icmp eq i32 %13, 0
  br i1 %14, label %15, label %17

15:                                               ; preds = %27, %2
  %16 = icmp eq i32 %6, 0
  br i1 %16, label %30, label %34

17:                                               ; preds = %27, %2
  %18 = phi i32 [ %28, %27 ], [ %13, %2 ]
  %19 = icmp samesign ult i32 %6, %18
  br i1 %19, label %20, label %27

20:                                               ; preds = %17
  %21 = add nuw nsw i32 %18, %6
  %22 = zext nneg i32 %21 to i64
  %23 = getelementptr inbounds nuw float, ptr addrspace(3) @k.s, i64 %22
  %24 = load float, ptr addrspace(3) %23, align 4, !tbaa !9
  %25 = load float, ptr addrspace(3) %12, align 4, !tbaa !9
  %26 = fadd float %24, %25
  store float %26, ptr addrspace(3) %12, align 4, !tbaa !9
  br label %27

27:                                               ; preds = %20, %17
  tail call void @llvm.nvvm.barrier.cta.sync.aligned.all(i32 0)
  %28 = lshr i32 %18, 1
  %29 = icmp eq i32 %28, 0
  br i1 %29, label %15, label %17, !llvm.loop !11

30:                                               ; preds = %15
  %31 = zext nneg i32 %3 to i64
  %32 = getelementptr inbounds nuw float, ptr %0, i64 %31
  %33 = load float, ptr addrspace(3) @k.s, align 4, !tbaa !9
  store float %33, ptr %32, align 4, !tbaa !9
  br label %34

34:                                               ; preds = %30, %15
  ret void
}

declare noundef range(i32 0, 2147483647) i32 @llvm.nvvm.read.ptx.sreg.ctaid.x() #1

declare noundef range(i32 1, 1025) i32 @llvm.nvvm.read.ptx.sreg.ntid.x() #1

declare noundef range(i32 0, 1024) i32 @llvm.nvvm.read.ptx.sreg.tid.x() #1

declare void @llvm.nvvm.barrier.cta.sync.aligned.all(i32) #2

define void @__ol_rs_init() {
entry:
  ret void
}

define void @__ol_rs_fini() {
entry:
  ret void
}

attributes #0 = { convergent norecurse nounwind "frame-pointer"="all" "no-trapping-math"="true" "stack-protector-buffer-size"="8" "target-cpu"="x86-64-v3" }
attributes #1 = { nocallback nofree nosync nounwind speculatable willreturn memory(none) }
attributes #2 = { convergent nocallback nounwind }

!llvm.module.flags = !{!0, !1, !2, !3}
!llvm.ident = !{!4}
!llvm.errno.tbaa = !{!5}

!0 = !{i32 1, !"wchar_size", i32 4}
!1 = !{i32 7, !"frame-pointer", i32 2}
!2 = !{i32 1, !"ThinLTO", i32 0}
!3 = !{i32 1, !"EnableSplitLTOUnit", i32 1}
!4 = !{!"Debian clang version 22.1.8 (1~deb12u1)"}
!5 = !{!6, !6, i64 0}
!6 = !{!"int", !7, i64 0}
!7 = !{!"omnipotent char", !8, i64 0}
!8 = !{!"Simple C/C++ TBAA"}
!9 = !{!10, !10, i64 0}
!10 = !{!"float", !7, i64 0}
!11 = distinct !{!11, !12}
!12 = !{!"llvm.loop.mustprogress"}
