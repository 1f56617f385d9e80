; ol-reroll-loops merges interleaved chains (opt/reroll_loops.cpp, mergeChains) on this kernel (amdgcn,
; ffi-tests/kernels/reductions.c's `counts`, at 256x1x1): clang's amdgcn pipeline vectorised each integer
; reduction loop over the group's earlier items (two i32 lanes), which the JIT's scalarizer split into two
; chains. Rolled back, each loop is one chain whose other chain keeps its start value (the kernel's results:
; reduction_loops_match_the_host).
; The IR is what the JIT hands its C++ lowering (OFFLOAD_RS_JIT_DUMP_LOWERED's .prelower.ll), by hand.
; RUN: opt -load-pass-plugin=%plugin -passes='ol-lower<kernel=counts;group=256x1x1;warp=64;stats>' -disable-output %s 2>&1 | FileCheck %s --check-prefix=ON
; RUN: opt -load-pass-plugin=%plugin -passes='ol-lower<kernel=counts;group=256x1x1;warp=64;transforms=-ol-reroll-loops;stats>' -disable-output %s 2>&1 | FileCheck %s --check-prefix=OFF
; ON: ol-lower: counts: {{(.*, )?}}ol-reroll-loops {{[1-9][0-9]*}}
; OFF: ol-lower: counts:
; OFF-NOT: ol-reroll-loops

; ModuleID = 'image'
source_filename = "/work/main/ffi-tests/kernels/reductions.c"
target datalayout = "e-m:e-p270:32:32-p271:32:32-p272:64:64-i64:64-i128:128-f80:128-n8:16:32:64-S128"
target triple = "x86_64-pc-linux-gnu"

@ranks.k = internal unnamed_addr addrspace(3) global [256 x i32] zeroinitializer, align 4
@ranks.v = internal unnamed_addr addrspace(3) global [256 x float] zeroinitializer, align 4

; Function Attrs: convergent nofree norecurse nounwind
define protected amdgpu_kernel void @ranks(ptr noundef readonly captures(none) %0, ptr noundef readonly captures(none) %1, ptr noundef writeonly captures(none) %2, ptr noundef writeonly captures(none) %3) local_unnamed_addr #0 {
  %5 = addrspacecast ptr %1 to ptr addrspace(1)
  %6 = addrspacecast ptr %0 to ptr addrspace(1)
  %7 = addrspacecast ptr %3 to ptr addrspace(1)
  %8 = addrspacecast ptr %2 to ptr addrspace(1)
  %9 = tail call noundef range(i32 0, 1024) i32 @llvm.amdgcn.workitem.id.x()
  %10 = tail call noundef i32 @llvm.amdgcn.workgroup.id.x()
  %11 = tail call align 8 dereferenceable(256) ptr addrspace(4) @llvm.amdgcn.implicitarg.ptr()
  %12 = getelementptr inbounds nuw i8, ptr addrspace(4) %11, i64 12
  %13 = load i16, ptr addrspace(4) %12, align 4, !range !10, !invariant.load !11, !noundef !11
  %14 = zext nneg i16 %13 to i32
  %15 = mul i32 %10, %14
  %16 = add i32 %15, %9
  %17 = zext i32 %16 to i64
  %18 = getelementptr inbounds nuw i32, ptr addrspace(1) %6, i64 %17
  %19 = load i32, ptr addrspace(1) %18, align 4, !tbaa !6, !amdgpu.noclobber !11
  %20 = getelementptr inbounds nuw i32, ptr addrspace(3) @ranks.k, i32 %9
  store i32 %19, ptr addrspace(3) %20, align 4, !tbaa !6
  %21 = getelementptr inbounds nuw float, ptr addrspace(1) %5, i64 %17
  %22 = load float, ptr addrspace(1) %21, align 4, !tbaa !12, !amdgpu.noclobber !11
  %23 = getelementptr inbounds nuw float, ptr addrspace(3) @ranks.v, i32 %9
  store float %22, ptr addrspace(3) %23, align 4, !tbaa !12
  tail call void @llvm.amdgcn.s.barrier()
  fence syncscope("workgroup") seq_cst
  %24 = icmp eq i32 %9, 0
  br i1 %24, label %64, label %25

25:                                               ; preds = %4
  %26 = and i32 %9, 7
  %27 = icmp samesign ult i32 %9, 8
  br i1 %27, label %32, label %28

28:                                               ; preds = %25
  %29 = and i32 %9, 1016
  br label %80

30:                                               ; preds = %80
  %31 = icmp eq i32 %26, 0
  br i1 %31, label %64, label %32

32:                                               ; preds = %30, %25
  %33 = phi i32 [ 0, %25 ], [ %191, %30 ]
  %34 = phi float [ 1.000000e+00, %25 ], [ %187, %30 ]
  %35 = phi float [ 0.000000e+00, %25 ], [ %186, %30 ]
  %36 = phi i32 [ 0, %25 ], [ %190, %30 ]
  %37 = phi i32 [ 0, %25 ], [ %188, %30 ]
  %38 = phi i32 [ 0, %25 ], [ %183, %30 ]
  %39 = icmp ne i32 %26, 0
  tail call void @llvm.assume(i1 %39)
  br label %40

40:                                               ; preds = %40, %32
  %41 = phi i32 [ %60, %40 ], [ %33, %32 ]
  %42 = phi float [ %56, %40 ], [ %34, %32 ]
  %43 = phi float [ %55, %40 ], [ %35, %32 ]
  %44 = phi i32 [ %59, %40 ], [ %36, %32 ]
  %45 = phi i32 [ %57, %40 ], [ %37, %32 ]
  %46 = phi i32 [ %52, %40 ], [ %38, %32 ]
  %47 = phi i32 [ %61, %40 ], [ 0, %32 ]
  %48 = getelementptr inbounds nuw i32, ptr addrspace(3) @ranks.k, i32 %41
  %49 = load i32, ptr addrspace(3) %48, align 4, !tbaa !6
  %50 = icmp eq i32 %49, %19
  %51 = zext i1 %50 to i32
  %52 = add i32 %46, %51
  %53 = getelementptr inbounds nuw float, ptr addrspace(3) @ranks.v, i32 %41
  %54 = load float, ptr addrspace(3) %53, align 4, !tbaa !12
  %55 = fadd float %43, %54
  %56 = fsub float %42, %54
  %57 = tail call i32 @llvm.umax.i32(i32 %45, i32 %49)
  %58 = mul i32 %49, -1640531535
  %59 = xor i32 %58, %44
  %60 = add nuw nsw i32 %41, 1
  %61 = add i32 %47, 1
  %62 = icmp eq i32 %61, %26
  br i1 %62, label %63, label %40, !llvm.loop !14

63:                                               ; preds = %40
  br label %64

64:                                               ; preds = %63, %30, %4
  %65 = phi i32 [ 0, %4 ], [ %183, %30 ], [ %52, %63 ]
  %66 = phi i32 [ 0, %4 ], [ %188, %30 ], [ %57, %63 ]
  %67 = phi i32 [ 0, %4 ], [ %190, %30 ], [ %59, %63 ]
  %.i0 = phi float [ 0.000000e+00, %4 ], [ %186, %30 ], [ %55, %63 ]
  %.i1 = phi float [ 1.000000e+00, %4 ], [ %187, %30 ], [ %56, %63 ]
  %68 = mul i32 %16, 3
  %69 = zext i32 %68 to i64
  %70 = getelementptr inbounds nuw i32, ptr addrspace(1) %8, i64 %69
  store i32 %65, ptr addrspace(1) %70, align 4, !tbaa !6
  %71 = add i32 %68, 1
  %72 = zext i32 %71 to i64
  %73 = getelementptr inbounds nuw i32, ptr addrspace(1) %8, i64 %72
  store i32 %66, ptr addrspace(1) %73, align 4, !tbaa !6
  %74 = add i32 %68, 2
  %75 = zext i32 %74 to i64
  %76 = getelementptr inbounds nuw i32, ptr addrspace(1) %8, i64 %75
  store i32 %67, ptr addrspace(1) %76, align 4, !tbaa !6
  %77 = shl i32 %16, 1
  %78 = zext i32 %77 to i64
  %79 = getelementptr inbounds nuw float, ptr addrspace(1) %7, i64 %78
  store float %.i0, ptr addrspace(1) %79, align 4, !tbaa !12
  %.i11 = getelementptr float, ptr addrspace(1) %79, i32 1
  store float %.i1, ptr addrspace(1) %.i11, align 4, !tbaa !12
  ret void

80:                                               ; preds = %80, %28
  %81 = phi i32 [ 0, %28 ], [ %191, %80 ]
  %82 = phi float [ 1.000000e+00, %28 ], [ %187, %80 ]
  %83 = phi float [ 0.000000e+00, %28 ], [ %186, %80 ]
  %84 = phi i32 [ 0, %28 ], [ %190, %80 ]
  %85 = phi i32 [ 0, %28 ], [ %188, %80 ]
  %86 = phi i32 [ 0, %28 ], [ %183, %80 ]
  %87 = phi i32 [ 0, %28 ], [ %192, %80 ]
  %88 = getelementptr inbounds nuw i32, ptr addrspace(3) @ranks.k, i32 %81
  %89 = load i32, ptr addrspace(3) %88, align 4, !tbaa !6
  %90 = icmp eq i32 %89, %19
  %91 = zext i1 %90 to i32
  %92 = add i32 %86, %91
  %93 = getelementptr inbounds nuw float, ptr addrspace(3) @ranks.v, i32 %81
  %94 = load float, ptr addrspace(3) %93, align 4, !tbaa !12
  %95 = fadd float %83, %94
  %96 = fsub float %82, %94
  %97 = tail call i32 @llvm.umax.i32(i32 %85, i32 %89)
  %98 = mul i32 %89, -1640531535
  %99 = xor i32 %98, %84
  %100 = or disjoint i32 %81, 1
  %101 = getelementptr inbounds nuw i32, ptr addrspace(3) @ranks.k, i32 %100
  %102 = load i32, ptr addrspace(3) %101, align 4, !tbaa !6
  %103 = icmp eq i32 %102, %19
  %104 = zext i1 %103 to i32
  %105 = add i32 %92, %104
  %106 = getelementptr inbounds nuw float, ptr addrspace(3) @ranks.v, i32 %100
  %107 = load float, ptr addrspace(3) %106, align 4, !tbaa !12
  %108 = fadd float %95, %107
  %109 = fsub float %96, %107
  %110 = tail call i32 @llvm.umax.i32(i32 %97, i32 %102)
  %111 = mul i32 %102, -1640531535
  %112 = xor i32 %111, %99
  %113 = or disjoint i32 %81, 2
  %114 = getelementptr inbounds nuw i32, ptr addrspace(3) @ranks.k, i32 %113
  %115 = load i32, ptr addrspace(3) %114, align 4, !tbaa !6
  %116 = icmp eq i32 %115, %19
  %117 = zext i1 %116 to i32
  %118 = add i32 %105, %117
  %119 = getelementptr inbounds nuw float, ptr addrspace(3) @ranks.v, i32 %113
  %120 = load float, ptr addrspace(3) %119, align 4, !tbaa !12
  %121 = fadd float %108, %120
  %122 = fsub float %109, %120
  %123 = tail call i32 @llvm.umax.i32(i32 %110, i32 %115)
  %124 = mul i32 %115, -1640531535
  %125 = xor i32 %124, %112
  %126 = or disjoint i32 %81, 3
  %127 = getelementptr inbounds nuw i32, ptr addrspace(3) @ranks.k, i32 %126
  %128 = load i32, ptr addrspace(3) %127, align 4, !tbaa !6
  %129 = icmp eq i32 %128, %19
  %130 = zext i1 %129 to i32
  %131 = add i32 %118, %130
  %132 = getelementptr inbounds nuw float, ptr addrspace(3) @ranks.v, i32 %126
  %133 = load float, ptr addrspace(3) %132, align 4, !tbaa !12
  %134 = fadd float %121, %133
  %135 = fsub float %122, %133
  %136 = tail call i32 @llvm.umax.i32(i32 %123, i32 %128)
  %137 = mul i32 %128, -1640531535
  %138 = xor i32 %137, %125
  %139 = or disjoint i32 %81, 4
  %140 = getelementptr inbounds nuw i32, ptr addrspace(3) @ranks.k, i32 %139
  %141 = load i32, ptr addrspace(3) %140, align 4, !tbaa !6
  %142 = icmp eq i32 %141, %19
  %143 = zext i1 %142 to i32
  %144 = add i32 %131, %143
  %145 = getelementptr inbounds nuw float, ptr addrspace(3) @ranks.v, i32 %139
  %146 = load float, ptr addrspace(3) %145, align 4, !tbaa !12
  %147 = fadd float %134, %146
  %148 = fsub float %135, %146
  %149 = tail call i32 @llvm.umax.i32(i32 %136, i32 %141)
  %150 = mul i32 %141, -1640531535
  %151 = xor i32 %150, %138
  %152 = or disjoint i32 %81, 5
  %153 = getelementptr inbounds nuw i32, ptr addrspace(3) @ranks.k, i32 %152
  %154 = load i32, ptr addrspace(3) %153, align 4, !tbaa !6
  %155 = icmp eq i32 %154, %19
  %156 = zext i1 %155 to i32
  %157 = add i32 %144, %156
  %158 = getelementptr inbounds nuw float, ptr addrspace(3) @ranks.v, i32 %152
  %159 = load float, ptr addrspace(3) %158, align 4, !tbaa !12
  %160 = fadd float %147, %159
  %161 = fsub float %148, %159
  %162 = tail call i32 @llvm.umax.i32(i32 %149, i32 %154)
  %163 = mul i32 %154, -1640531535
  %164 = xor i32 %163, %151
  %165 = or disjoint i32 %81, 6
  %166 = getelementptr inbounds nuw i32, ptr addrspace(3) @ranks.k, i32 %165
  %167 = load i32, ptr addrspace(3) %166, align 4, !tbaa !6
  %168 = icmp eq i32 %167, %19
  %169 = zext i1 %168 to i32
  %170 = add i32 %157, %169
  %171 = getelementptr inbounds nuw float, ptr addrspace(3) @ranks.v, i32 %165
  %172 = load float, ptr addrspace(3) %171, align 4, !tbaa !12
  %173 = fadd float %160, %172
  %174 = fsub float %161, %172
  %175 = tail call i32 @llvm.umax.i32(i32 %162, i32 %167)
  %176 = mul i32 %167, -1640531535
  %177 = xor i32 %176, %164
  %178 = or disjoint i32 %81, 7
  %179 = getelementptr inbounds nuw i32, ptr addrspace(3) @ranks.k, i32 %178
  %180 = load i32, ptr addrspace(3) %179, align 4, !tbaa !6
  %181 = icmp eq i32 %180, %19
  %182 = zext i1 %181 to i32
  %183 = add i32 %170, %182
  %184 = getelementptr inbounds nuw float, ptr addrspace(3) @ranks.v, i32 %178
  %185 = load float, ptr addrspace(3) %184, align 4, !tbaa !12
  %186 = fadd float %173, %185
  %187 = fsub float %174, %185
  %188 = tail call i32 @llvm.umax.i32(i32 %175, i32 %180)
  %189 = mul i32 %180, -1640531535
  %190 = xor i32 %189, %177
  %191 = add nuw nsw i32 %81, 8
  %192 = add i32 %87, 8
  %193 = icmp eq i32 %192, %29
  br i1 %193, label %30, label %80, !llvm.loop !16
}

; Function Attrs: nofree norecurse nosync nounwind memory(argmem: readwrite)
define protected amdgpu_kernel void @rows(ptr noundef readonly captures(none) %0, i32 noundef %1, i32 noundef %2, ptr noundef writeonly captures(none) %3, ptr noundef writeonly captures(none) %4) local_unnamed_addr #1 {
  %6 = addrspacecast ptr %0 to ptr addrspace(1)
  %7 = addrspacecast ptr %4 to ptr addrspace(1)
  %8 = addrspacecast ptr %3 to ptr addrspace(1)
  %9 = tail call noundef i32 @llvm.amdgcn.workgroup.id.x()
  %10 = tail call align 8 dereferenceable(256) ptr addrspace(4) @llvm.amdgcn.implicitarg.ptr()
  %11 = getelementptr inbounds nuw i8, ptr addrspace(4) %10, i64 12
  %12 = load i16, ptr addrspace(4) %11, align 4, !range !10, !invariant.load !11, !noundef !11
  %13 = zext nneg i16 %12 to i32
  %14 = mul i32 %9, %13
  %15 = tail call noundef range(i32 0, 1024) i32 @llvm.amdgcn.workitem.id.x()
  %16 = add i32 %14, %15
  %17 = zext i32 %16 to i64
  %18 = zext i32 %1 to i64
  %19 = mul nuw i64 %17, %18
  %20 = getelementptr inbounds float, ptr addrspace(1) %6, i64 %19
  %21 = icmp ult i32 %2, %1
  br i1 %21, label %27, label %22

22:                                               ; preds = %27, %5
  %23 = phi float [ 0.000000e+00, %5 ], [ %34, %27 ]
  %24 = phi i32 [ 0, %5 ], [ %37, %27 ]
  %25 = getelementptr inbounds nuw float, ptr addrspace(1) %8, i64 %17
  store float %23, ptr addrspace(1) %25, align 4, !tbaa !12
  %26 = getelementptr inbounds nuw i32, ptr addrspace(1) %7, i64 %17
  store i32 %24, ptr addrspace(1) %26, align 4, !tbaa !6
  ret void

27:                                               ; preds = %27, %5
  %28 = phi i32 [ %38, %27 ], [ %2, %5 ]
  %29 = phi i32 [ %37, %27 ], [ 0, %5 ]
  %30 = phi float [ %34, %27 ], [ 0.000000e+00, %5 ]
  %31 = zext i32 %28 to i64
  %32 = getelementptr inbounds nuw float, ptr addrspace(1) %20, i64 %31
  %33 = load float, ptr addrspace(1) %32, align 4, !tbaa !12, !amdgpu.noclobber !11
  %34 = fadd float %30, %33
  %35 = fcmp olt float %33, 0.000000e+00
  %36 = zext i1 %35 to i32
  %37 = add i32 %29, %36
  %38 = add nuw i32 %28, 1
  %39 = icmp ult i32 %38, %1
  br i1 %39, label %27, label %22, !llvm.loop !18
}

; Function Attrs: nofree norecurse nosync nounwind memory(argmem: readwrite)
define protected amdgpu_kernel void @counts(ptr noundef readonly captures(none) %0, ptr noundef writeonly captures(none) %1) local_unnamed_addr #1 {
  %3 = addrspacecast ptr %0 to ptr addrspace(1)
  %4 = addrspacecast ptr %1 to ptr addrspace(1)
  %5 = tail call align 8 dereferenceable(256) ptr addrspace(4) @llvm.amdgcn.implicitarg.ptr()
  %6 = getelementptr inbounds nuw i8, ptr addrspace(4) %5, i64 12
  %7 = load i16, ptr addrspace(4) %6, align 4, !range !10, !invariant.load !11, !noundef !11
  %8 = zext nneg i16 %7 to i32
  %9 = tail call noundef i32 @llvm.amdgcn.workgroup.id.x()
  %10 = mul i32 %9, %8
  %11 = tail call noundef range(i32 0, 1024) i32 @llvm.amdgcn.workitem.id.x()
  %12 = add i32 %10, %11
  %13 = zext i32 %12 to i64
  %14 = getelementptr inbounds nuw i32, ptr addrspace(1) %3, i64 %13
  %15 = load i32, ptr addrspace(1) %14, align 4, !tbaa !6, !amdgpu.noclobber !11
  %16 = icmp ult i32 %10, %12
  br i1 %16, label %17, label %36

17:                                               ; preds = %2
  %18 = icmp samesign ult i32 %11, 2
  br i1 %18, label %33, label %19

19:                                               ; preds = %17
  %20 = and i32 %11, 1022
  %21 = add i32 %10, %20
  br label %22

22:                                               ; preds = %22, %19
  %23 = phi i32 [ 0, %19 ], [ %28, %22 ]
  %.i0 = phi i32 [ 0, %19 ], [ %.i01, %22 ]
  %.i1 = phi i32 [ 0, %19 ], [ %.i12, %22 ]
  %24 = add i32 %10, %23
  %25 = zext i32 %24 to i64
  %26 = getelementptr inbounds nuw i32, ptr addrspace(1) %3, i64 %25
  %.i03 = load i32, ptr addrspace(1) %26, align 4, !tbaa !6
  %.i14 = getelementptr i32, ptr addrspace(1) %26, i32 1
  %.i15 = load i32, ptr addrspace(1) %.i14, align 4, !tbaa !6
  %.i06 = icmp eq i32 %.i03, %15
  %.i17 = icmp eq i32 %.i15, %15
  %.i08 = zext i1 %.i06 to i32
  %.i19 = zext i1 %.i17 to i32
  %.i01 = add i32 %.i0, %.i08
  %.i12 = add i32 %.i1, %.i19
  %.upto060 = insertelement <2 x i32> poison, i32 %.i01, i64 0
  %27 = insertelement <2 x i32> %.upto060, i32 %.i12, i64 1
  %28 = add nuw i32 %23, 2
  %29 = icmp eq i32 %28, %20
  br i1 %29, label %30, label %22, !llvm.loop !19

30:                                               ; preds = %22
  %31 = tail call i32 @llvm.vector.reduce.add.v2i32(<2 x i32> %27)
  %32 = icmp eq i32 %11, %20
  br i1 %32, label %36, label %33

33:                                               ; preds = %30, %17
  %34 = phi i32 [ %10, %17 ], [ %21, %30 ]
  %35 = phi i32 [ 0, %17 ], [ %31, %30 ]
  br label %57

36:                                               ; preds = %57, %30, %2
  %37 = phi i32 [ 0, %2 ], [ %31, %30 ], [ %65, %57 ]
  br i1 %16, label %38, label %68

38:                                               ; preds = %36
  %39 = icmp samesign ult i32 %11, 2
  br i1 %39, label %54, label %40

40:                                               ; preds = %38
  %41 = and i32 %11, 1022
  %42 = add i32 %10, %41
  %.i012 = add nuw i32 %10, 0
  %.i113 = add nuw i32 %10, 1
  br label %43

43:                                               ; preds = %43, %40
  %44 = phi i32 [ 0, %40 ], [ %49, %43 ]
  %.i014 = phi i32 [ %.i012, %40 ], [ %.i016, %43 ]
  %.i115 = phi i32 [ %.i113, %40 ], [ %.i117, %43 ]
  %.i018 = phi i32 [ 0, %40 ], [ %.i020, %43 ]
  %.i119 = phi i32 [ 0, %40 ], [ %.i121, %43 ]
  %45 = add i32 %10, %44
  %46 = zext i32 %45 to i64
  %47 = getelementptr inbounds nuw i32, ptr addrspace(1) %3, i64 %46
  %.i022 = load i32, ptr addrspace(1) %47, align 4, !tbaa !6
  %.i123 = getelementptr i32, ptr addrspace(1) %47, i32 1
  %.i124 = load i32, ptr addrspace(1) %.i123, align 4, !tbaa !6
  %.i025 = and i32 %.i014, 7
  %.i126 = and i32 %.i115, 7
  %.i027 = shl i32 %.i022, %.i025
  %.i128 = shl i32 %.i124, %.i126
  %.i020 = or i32 %.i027, %.i018
  %.i121 = or i32 %.i128, %.i119
  %.upto069 = insertelement <2 x i32> poison, i32 %.i020, i64 0
  %48 = insertelement <2 x i32> %.upto069, i32 %.i121, i64 1
  %49 = add nuw i32 %44, 2
  %.i016 = add nuw i32 %.i014, 2
  %.i117 = add nuw i32 %.i115, 2
  %50 = icmp eq i32 %49, %41
  br i1 %50, label %51, label %43, !llvm.loop !21

51:                                               ; preds = %43
  %52 = tail call i32 @llvm.vector.reduce.or.v2i32(<2 x i32> %48)
  %53 = icmp eq i32 %11, %41
  br i1 %53, label %68, label %54

54:                                               ; preds = %51, %38
  %55 = phi i32 [ %10, %38 ], [ %42, %51 ]
  %56 = phi i32 [ 0, %38 ], [ %52, %51 ]
  br label %89

57:                                               ; preds = %57, %33
  %58 = phi i32 [ %66, %57 ], [ %34, %33 ]
  %59 = phi i32 [ %65, %57 ], [ %35, %33 ]
  %60 = zext i32 %58 to i64
  %61 = getelementptr inbounds nuw i32, ptr addrspace(1) %3, i64 %60
  %62 = load i32, ptr addrspace(1) %61, align 4, !tbaa !6, !amdgpu.noclobber !11
  %63 = icmp eq i32 %62, %15
  %64 = zext i1 %63 to i32
  %65 = add i32 %59, %64
  %66 = add nuw i32 %58, 1
  %67 = icmp eq i32 %66, %12
  br i1 %67, label %36, label %57, !llvm.loop !22

68:                                               ; preds = %89, %51, %36
  %69 = phi i32 [ 0, %36 ], [ %52, %51 ], [ %97, %89 ]
  br i1 %16, label %70, label %100

70:                                               ; preds = %68
  %71 = icmp samesign ult i32 %11, 2
  br i1 %71, label %86, label %72

72:                                               ; preds = %70
  %73 = and i32 %11, 1022
  %74 = add i32 %10, %73
  br label %75

75:                                               ; preds = %75, %72
  %76 = phi i32 [ 0, %72 ], [ %81, %75 ]
  %.i033 = phi i32 [ 0, %72 ], [ %.i035, %75 ]
  %.i134 = phi i32 [ 0, %72 ], [ %.i136, %75 ]
  %77 = add i32 %10, %76
  %78 = zext i32 %77 to i64
  %79 = getelementptr inbounds nuw i32, ptr addrspace(1) %3, i64 %78
  %.i037 = load i32, ptr addrspace(1) %79, align 4, !tbaa !6
  %.i138 = getelementptr i32, ptr addrspace(1) %79, i32 1
  %.i139 = load i32, ptr addrspace(1) %.i138, align 4, !tbaa !6
  %.i040 = mul i32 %.i037, 3
  %.i141 = mul i32 %.i139, 3
  %.i035 = call i32 @llvm.umax.i32(i32 %.i033, i32 %.i040)
  %.i136 = call i32 @llvm.umax.i32(i32 %.i134, i32 %.i141)
  %.upto074 = insertelement <2 x i32> poison, i32 %.i035, i64 0
  %80 = insertelement <2 x i32> %.upto074, i32 %.i136, i64 1
  %81 = add nuw i32 %76, 2
  %82 = icmp eq i32 %81, %73
  br i1 %82, label %83, label %75, !llvm.loop !24

83:                                               ; preds = %75
  %84 = tail call i32 @llvm.vector.reduce.umax.v2i32(<2 x i32> %80)
  %85 = icmp eq i32 %11, %73
  br i1 %85, label %100, label %86

86:                                               ; preds = %83, %70
  %87 = phi i32 [ %10, %70 ], [ %74, %83 ]
  %88 = phi i32 [ 0, %70 ], [ %84, %83 ]
  br label %121

89:                                               ; preds = %89, %54
  %90 = phi i32 [ %98, %89 ], [ %55, %54 ]
  %91 = phi i32 [ %97, %89 ], [ %56, %54 ]
  %92 = zext i32 %90 to i64
  %93 = getelementptr inbounds nuw i32, ptr addrspace(1) %3, i64 %92
  %94 = load i32, ptr addrspace(1) %93, align 4, !tbaa !6, !amdgpu.noclobber !11
  %95 = and i32 %90, 7
  %96 = shl i32 %94, %95
  %97 = or i32 %96, %91
  %98 = add nuw i32 %90, 1
  %99 = icmp eq i32 %98, %12
  br i1 %99, label %68, label %89, !llvm.loop !25

100:                                              ; preds = %121, %83, %68
  %101 = phi i32 [ 0, %68 ], [ %84, %83 ], [ %128, %121 ]
  br i1 %16, label %102, label %131

102:                                              ; preds = %100
  %103 = icmp samesign ult i32 %11, 2
  br i1 %103, label %118, label %104

104:                                              ; preds = %102
  %105 = and i32 %11, 1022
  %106 = add i32 %10, %105
  br label %107

107:                                              ; preds = %107, %104
  %108 = phi i32 [ 0, %104 ], [ %113, %107 ]
  %.i044 = phi i32 [ 0, %104 ], [ %.i046, %107 ]
  %.i145 = phi i32 [ 0, %104 ], [ %.i147, %107 ]
  %109 = add i32 %10, %108
  %110 = zext i32 %109 to i64
  %111 = getelementptr inbounds nuw i32, ptr addrspace(1) %3, i64 %110
  %.i048 = load i32, ptr addrspace(1) %111, align 4, !tbaa !6
  %.i149 = getelementptr i32, ptr addrspace(1) %111, i32 1
  %.i150 = load i32, ptr addrspace(1) %.i149, align 4, !tbaa !6
  %.i051 = mul i32 %.i048, -1640531535
  %.i152 = mul i32 %.i150, -1640531535
  %.i046 = xor i32 %.i051, %.i044
  %.i147 = xor i32 %.i152, %.i145
  %.upto078 = insertelement <2 x i32> poison, i32 %.i046, i64 0
  %112 = insertelement <2 x i32> %.upto078, i32 %.i147, i64 1
  %113 = add nuw i32 %108, 2
  %114 = icmp eq i32 %113, %105
  br i1 %114, label %115, label %107, !llvm.loop !26

115:                                              ; preds = %107
  %116 = tail call i32 @llvm.vector.reduce.xor.v2i32(<2 x i32> %112)
  %117 = icmp eq i32 %11, %105
  br i1 %117, label %131, label %118

118:                                              ; preds = %115, %102
  %119 = phi i32 [ %10, %102 ], [ %106, %115 ]
  %120 = phi i32 [ 0, %102 ], [ %116, %115 ]
  br label %145

121:                                              ; preds = %121, %86
  %122 = phi i32 [ %129, %121 ], [ %87, %86 ]
  %123 = phi i32 [ %128, %121 ], [ %88, %86 ]
  %124 = zext i32 %122 to i64
  %125 = getelementptr inbounds nuw i32, ptr addrspace(1) %3, i64 %124
  %126 = load i32, ptr addrspace(1) %125, align 4, !tbaa !6, !amdgpu.noclobber !11
  %127 = mul i32 %126, 3
  %128 = tail call i32 @llvm.umax.i32(i32 %123, i32 %127)
  %129 = add nuw i32 %122, 1
  %130 = icmp eq i32 %129, %12
  br i1 %130, label %100, label %121, !llvm.loop !27

131:                                              ; preds = %145, %115, %100
  %132 = phi i32 [ 0, %100 ], [ %116, %115 ], [ %152, %145 ]
  %133 = shl i32 %12, 2
  %134 = zext i32 %133 to i64
  %135 = getelementptr inbounds nuw i32, ptr addrspace(1) %4, i64 %134
  store i32 %37, ptr addrspace(1) %135, align 4, !tbaa !6
  %136 = or disjoint i32 %133, 1
  %137 = zext i32 %136 to i64
  %138 = getelementptr inbounds nuw i32, ptr addrspace(1) %4, i64 %137
  store i32 %69, ptr addrspace(1) %138, align 4, !tbaa !6
  %139 = or disjoint i32 %133, 2
  %140 = zext i32 %139 to i64
  %141 = getelementptr inbounds nuw i32, ptr addrspace(1) %4, i64 %140
  store i32 %101, ptr addrspace(1) %141, align 4, !tbaa !6
  %142 = or disjoint i32 %133, 3
  %143 = zext i32 %142 to i64
  %144 = getelementptr inbounds nuw i32, ptr addrspace(1) %4, i64 %143
  store i32 %132, ptr addrspace(1) %144, align 4, !tbaa !6
  ret void

145:                                              ; preds = %145, %118
  %146 = phi i32 [ %153, %145 ], [ %119, %118 ]
  %147 = phi i32 [ %152, %145 ], [ %120, %118 ]
  %148 = zext i32 %146 to i64
  %149 = getelementptr inbounds nuw i32, ptr addrspace(1) %3, i64 %148
  %150 = load i32, ptr addrspace(1) %149, align 4, !tbaa !6, !amdgpu.noclobber !11
  %151 = mul i32 %150, -1640531535
  %152 = xor i32 %151, %147
  %153 = add nuw i32 %146, 1
  %154 = icmp eq i32 %153, %12
  br i1 %154, label %131, label %145, !llvm.loop !28
}

; Function Attrs: nocallback nofree nosync nounwind speculatable willreturn memory(none)
declare noundef range(i32 0, 1024) i32 @llvm.amdgcn.workitem.id.x() #2

; Function Attrs: nocallback nofree nosync nounwind speculatable willreturn memory(none)
declare noundef i32 @llvm.amdgcn.workgroup.id.x() #2

; Function Attrs: nocallback nofree nosync nounwind speculatable willreturn memory(none)
declare noundef align 4 ptr addrspace(4) @llvm.amdgcn.implicitarg.ptr() #2

; Function Attrs: convergent nocallback nofree nounwind willreturn
declare void @llvm.amdgcn.s.barrier() #3

; Function Attrs: nocallback nocreateundeforpoison nofree nosync nounwind speculatable willreturn memory(none)
declare i32 @llvm.umax.i32(i32, i32) #4

; Function Attrs: nocallback nofree nosync nounwind willreturn memory(inaccessiblemem: write)
declare void @llvm.assume(i1 noundef) #5

; Function Attrs: nocallback nofree nosync nounwind speculatable willreturn memory(none)
declare i32 @llvm.vector.reduce.add.v2i32(<2 x i32>) #2

; Function Attrs: nocallback nofree nosync nounwind speculatable willreturn memory(none)
declare i32 @llvm.vector.reduce.or.v2i32(<2 x i32>) #2

; Function Attrs: nocallback nocreateundeforpoison nofree nosync nounwind speculatable willreturn memory(none)
declare <2 x i32> @llvm.umax.v2i32(<2 x i32>, <2 x i32>) #4

; Function Attrs: nocallback nofree nosync nounwind speculatable willreturn memory(none)
declare i32 @llvm.vector.reduce.umax.v2i32(<2 x i32>) #2

; Function Attrs: nocallback nofree nosync nounwind speculatable willreturn memory(none)
declare i32 @llvm.vector.reduce.xor.v2i32(<2 x i32>) #2

define void @__ol_rs_init() {
entry:
  ret void
}

define void @__ol_rs_fini() {
entry:
  ret void
}

attributes #0 = { convergent nofree norecurse nounwind "no-trapping-math"="true" "stack-protector-buffer-size"="8" "target-cpu"="rocketlake" "target-features"="+prfchw,+cldemote,+avx,+aes,+sahf,+pclmul,-xop,+crc32,-amx-fp8,+xsaves,+avx512fp16,-usermsr,-sm4,-egpr,+sse4.1,+avx10.1,+avx512ifma,+xsave,+sse4.2,+tsxldtrk,-sm3,-ptwrite,-widekl,-movrs,+invpcid,+64bit,+xsavec,+avx512vpopcntdq,+cmov,-avx512vp2intersect,+avx512cd,+movbe,-avxvnniint8,-ccmp,+amx-int8,-kl,-sha512,+avxvnni,+rtm,+adx,+avx2,-hreset,+movdiri,+serialize,+vpclmulqdq,+avx512vl,-uintr,-cf,+clflushopt,-raoint,-cmpccxadd,+bmi,+amx-tile,+sse,+gfni,-avxvnniint16,-amx-fp16,-zu,-ndd,+xsaveopt,+rdrnd,+avx512f,+amx-bf16,+avx512bf16,+avx512vnni,-push2pop2,+cx8,+avx512bw,+sse3,-pku,-nf,-amx-tf32,-amx-avx512,+fsgsbase,-clzero,-mwaitx,-lwp,+lzcnt,+sha,+movdir64b,-ppx,-wbnoinvd,-enqcmd,-avxneconvert,-tbm,-pconfig,-amx-complex,+ssse3,+cx16,-avx10.2,+bmi2,+fma,+popcnt,-avxifma,+f16c,+avx512bitalg,-rdpru,+clwb,+mmx,+sse2,+rdseed,+avx512vbmi2,+prefetchi,-amx-movrs,+rdpid,-fma4,+avx512vbmi,-shstk,+vaes,-waitpkg,-sgx,+fxsr,+avx512dq,-sse4a" }
attributes #1 = { nofree norecurse nosync nounwind memory(argmem: readwrite) "no-trapping-math"="true" "stack-protector-buffer-size"="8" "target-cpu"="rocketlake" "target-features"="+prfchw,+cldemote,+avx,+aes,+sahf,+pclmul,-xop,+crc32,-amx-fp8,+xsaves,+avx512fp16,-usermsr,-sm4,-egpr,+sse4.1,+avx10.1,+avx512ifma,+xsave,+sse4.2,+tsxldtrk,-sm3,-ptwrite,-widekl,-movrs,+invpcid,+64bit,+xsavec,+avx512vpopcntdq,+cmov,-avx512vp2intersect,+avx512cd,+movbe,-avxvnniint8,-ccmp,+amx-int8,-kl,-sha512,+avxvnni,+rtm,+adx,+avx2,-hreset,+movdiri,+serialize,+vpclmulqdq,+avx512vl,-uintr,-cf,+clflushopt,-raoint,-cmpccxadd,+bmi,+amx-tile,+sse,+gfni,-avxvnniint16,-amx-fp16,-zu,-ndd,+xsaveopt,+rdrnd,+avx512f,+amx-bf16,+avx512bf16,+avx512vnni,-push2pop2,+cx8,+avx512bw,+sse3,-pku,-nf,-amx-tf32,-amx-avx512,+fsgsbase,-clzero,-mwaitx,-lwp,+lzcnt,+sha,+movdir64b,-ppx,-wbnoinvd,-enqcmd,-avxneconvert,-tbm,-pconfig,-amx-complex,+ssse3,+cx16,-avx10.2,+bmi2,+fma,+popcnt,-avxifma,+f16c,+avx512bitalg,-rdpru,+clwb,+mmx,+sse2,+rdseed,+avx512vbmi2,+prefetchi,-amx-movrs,+rdpid,-fma4,+avx512vbmi,-shstk,+vaes,-waitpkg,-sgx,+fxsr,+avx512dq,-sse4a" }
attributes #2 = { nocallback nofree nosync nounwind speculatable willreturn memory(none) }
attributes #3 = { convergent nocallback nofree nounwind willreturn }
attributes #4 = { nocallback nocreateundeforpoison nofree nosync nounwind speculatable willreturn memory(none) }
attributes #5 = { nocallback nofree nosync nounwind willreturn memory(inaccessiblemem: write) }

!llvm.module.flags = !{!0, !1, !2, !3, !4}
!llvm.ident = !{!5}
!llvm.errno.tbaa = !{!6}

!0 = !{i32 1, !"amdhsa_code_object_version", i32 600}
!1 = !{i32 1, !"wchar_size", i32 4}
!2 = !{i32 8, !"PIC Level", i32 2}
!3 = !{i32 1, !"ThinLTO", i32 0}
!4 = !{i32 1, !"EnableSplitLTOUnit", i32 1}
!5 = !{!"Debian clang version 22.1.8 (1~deb12u1)"}
!6 = !{!7, !7, i64 0}
!7 = !{!"int", !8, i64 0}
!8 = !{!"omnipotent char", !9, i64 0}
!9 = !{!"Simple C/C++ TBAA"}
!10 = !{i16 1, i16 1025}
!11 = !{}
!12 = !{!13, !13, i64 0}
!13 = !{!"float", !8, i64 0}
!14 = distinct !{!14, !15}
!15 = !{!"llvm.loop.unroll.disable"}
!16 = distinct !{!16, !17}
!17 = !{!"llvm.loop.mustprogress"}
!18 = distinct !{!18, !17}
!19 = distinct !{!19, !17, !20}
!20 = !{!"llvm.loop.isvectorized", i32 1}
!21 = distinct !{!21, !17, !20}
!22 = distinct !{!22, !17, !23, !20}
!23 = !{!"llvm.loop.unroll.runtime.disable"}
!24 = distinct !{!24, !17, !20}
!25 = distinct !{!25, !17, !23, !20}
!26 = distinct !{!26, !17, !20}
!27 = distinct !{!27, !17, !23, !20}
!28 = distinct !{!28, !17, !23, !20}
