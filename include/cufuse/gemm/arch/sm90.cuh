/// \file PTX wrappers of sm_90a: wgmma (shared-memory and register A operands), matrix
/// descriptors, mbarriers, TMA loads and stores, bulk groups, fences, named barriers, and the
/// shared-memory loads and stores of the epilogues.
#pragma once

#include "barrier.cuh"
#include "device.cuh"

#include <cuda.h>

namespace cufuse::gemm_detail {

template <int N, class T, int TransA, int TransB>
struct wgmma_op;
/// fp16 / bf16 wgmma with A from registers (per warp, its 16 rows as the mma.sync m16n8k16 A
/// fragment: what ldmatrix.x4 reads) and B from shared memory, K-major (imm-trans-b 0).
template <int N, class T>
struct wgmma_rs16;
/// TF32 wgmma with A from registers and B from shared memory (K-major). Per thread, A holds
/// four 32-bit fragments of its warp's 16 rows: (row g, k q), (g + 8, q), (g, q + 4),
/// (g + 8, q + 4) with g = lane / 4, q = lane % 4 (the mma.sync m16n8k8 layout).
template <int N>
struct wgmma_tf32_rs;

// One wgmma.mma_async per (N, type): inline PTX takes registers one by one, so the accumulator
// operands are spelled out once per width (CUFUSE_WGMMA_D64 / _D128: the PTX list, and the
// matching "+f" constraints) and shared by the descriptor and register-A forms. scale-d is a
// predicate set from an input (always 1: accumulate; the accumulators start at zero); TransA /
// TransB are the instruction's imm-trans flags (1: that operand's tile is M/N-major).
#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
#define CUFUSE_WGMMA_R0_31                                                                         \
  "%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18, %19, "     \
  "%20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31"
#define CUFUSE_WGMMA_R32_63                                                                        \
  "%32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47, %48, %49, "     \
  "%50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63"
#define CUFUSE_WGMMA_R0_63 CUFUSE_WGMMA_R0_31 ", " CUFUSE_WGMMA_R32_63
#define CUFUSE_WGMMA_R64_127                                                                       \
  "%64, %65, %66, %67, %68, %69, %70, %71, %72, %73, %74, %75, %76, %77, %78, %79, %80, %81, "     \
  "%82, %83, %84, %85, %86, %87, %88, %89, %90, %91, %92, %93, %94, %95, %96, %97, %98, %99, "     \
  "%100, %101, %102, %103, %104, %105, %106, %107, %108, %109, %110, %111, %112, %113, %114, "     \
  "%115, %116, %117, %118, %119, %120, %121, %122, %123, %124, %125, %126, %127"
#define CUFUSE_WGMMA_OPS0_31                                                                       \
  "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]),  \
      "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]),     \
      "+f"(d[15]), "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]),   \
      "+f"(d[22]), "+f"(d[23]), "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]),   \
      "+f"(d[29]), "+f"(d[30]), "+f"(d[31])
#define CUFUSE_WGMMA_OPS32_63                                                                      \
  "+f"(d[32]), "+f"(d[33]), "+f"(d[34]), "+f"(d[35]), "+f"(d[36]), "+f"(d[37]), "+f"(d[38]),       \
      "+f"(d[39]), "+f"(d[40]), "+f"(d[41]), "+f"(d[42]), "+f"(d[43]), "+f"(d[44]), "+f"(d[45]),   \
      "+f"(d[46]), "+f"(d[47]), "+f"(d[48]), "+f"(d[49]), "+f"(d[50]), "+f"(d[51]), "+f"(d[52]),   \
      "+f"(d[53]), "+f"(d[54]), "+f"(d[55]), "+f"(d[56]), "+f"(d[57]), "+f"(d[58]), "+f"(d[59]),   \
      "+f"(d[60]), "+f"(d[61]), "+f"(d[62]), "+f"(d[63])
#define CUFUSE_WGMMA_OPS0_63 CUFUSE_WGMMA_OPS0_31, CUFUSE_WGMMA_OPS32_63
#define CUFUSE_WGMMA_OPS64_127                                                                     \
  "+f"(d[64]), "+f"(d[65]), "+f"(d[66]), "+f"(d[67]), "+f"(d[68]), "+f"(d[69]), "+f"(d[70]),       \
      "+f"(d[71]), "+f"(d[72]), "+f"(d[73]), "+f"(d[74]), "+f"(d[75]), "+f"(d[76]), "+f"(d[77]),   \
      "+f"(d[78]), "+f"(d[79]), "+f"(d[80]), "+f"(d[81]), "+f"(d[82]), "+f"(d[83]), "+f"(d[84]),   \
      "+f"(d[85]), "+f"(d[86]), "+f"(d[87]), "+f"(d[88]), "+f"(d[89]), "+f"(d[90]), "+f"(d[91]),   \
      "+f"(d[92]), "+f"(d[93]), "+f"(d[94]), "+f"(d[95]), "+f"(d[96]), "+f"(d[97]), "+f"(d[98]),   \
      "+f"(d[99]), "+f"(d[100]), "+f"(d[101]), "+f"(d[102]), "+f"(d[103]), "+f"(d[104]),           \
      "+f"(d[105]), "+f"(d[106]), "+f"(d[107]), "+f"(d[108]), "+f"(d[109]), "+f"(d[110]),          \
      "+f"(d[111]), "+f"(d[112]), "+f"(d[113]), "+f"(d[114]), "+f"(d[115]), "+f"(d[116]),          \
      "+f"(d[117]), "+f"(d[118]), "+f"(d[119]), "+f"(d[120]), "+f"(d[121]), "+f"(d[122]),          \
      "+f"(d[123]), "+f"(d[124]), "+f"(d[125]), "+f"(d[126]), "+f"(d[127])
#define CUFUSE_WGMMA_D32 "{" CUFUSE_WGMMA_R0_31 "}"
#define CUFUSE_WGMMA_D64 "{" CUFUSE_WGMMA_R0_63 "}"
#define CUFUSE_WGMMA_D64_OPS CUFUSE_WGMMA_OPS0_63
#define CUFUSE_WGMMA_D128 "{" CUFUSE_WGMMA_R0_63 ", " CUFUSE_WGMMA_R64_127 "}"
#define CUFUSE_WGMMA_D128_OPS CUFUSE_WGMMA_OPS0_63, CUFUSE_WGMMA_OPS64_127
/// Descriptor form: A and B from shared memory.
#define CUFUSE_WGMMA_SS(N, NREG, T, PTX_TYPE, SHAPE_K, DLIST, DOPS, PRED, OPERANDS)                \
  template <int TransA, int TransB>                                                                \
  struct wgmma_op<N, T, TransA, TransB> {                                                          \
    CUFUSE_DEVICE_FN static void run(float (&d)[NREG], std::uint64_t da, std::uint64_t db) {       \
      asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, " PRED ", 0;\n"                               \
                   "wgmma.mma_async.sync.aligned.m64n" #N SHAPE_K ".f32." PTX_TYPE "." PTX_TYPE    \
                   " " DLIST ", " OPERANDS ";\n}\n"                                                \
                   : DOPS                                                                          \
                   : "l"(da), "l"(db), "r"(1), "n"(TransA), "n"(TransB));                          \
    }                                                                                              \
  };
// 16-bit inputs take the transpose immediates; TF32 reads both operands K-major and has none.
// N = 64 (16-bit only): the narrow tiles of small problems (M <= 128, variants.cuh).
CUFUSE_WGMMA_SS(64, 32, __half, "f16", "k16", CUFUSE_WGMMA_D32, CUFUSE_WGMMA_OPS0_31, "%34",
                "%32, %33, p, 1, 1, %35, %36")
CUFUSE_WGMMA_SS(64, 32, __nv_bfloat16, "bf16", "k16", CUFUSE_WGMMA_D32, CUFUSE_WGMMA_OPS0_31, "%34",
                "%32, %33, p, 1, 1, %35, %36")
CUFUSE_WGMMA_SS(128, 64, __half, "f16", "k16", CUFUSE_WGMMA_D64, CUFUSE_WGMMA_D64_OPS, "%66",
                "%64, %65, p, 1, 1, %67, %68")
CUFUSE_WGMMA_SS(128, 64, __nv_bfloat16, "bf16", "k16", CUFUSE_WGMMA_D64, CUFUSE_WGMMA_D64_OPS,
                "%66", "%64, %65, p, 1, 1, %67, %68")
CUFUSE_WGMMA_SS(128, 64, float, "tf32", "k8", CUFUSE_WGMMA_D64, CUFUSE_WGMMA_D64_OPS, "%66",
                "%64, %65, p, 1, 1")
CUFUSE_WGMMA_SS(256, 128, __half, "f16", "k16", CUFUSE_WGMMA_D128, CUFUSE_WGMMA_D128_OPS, "%130",
                "%128, %129, p, 1, 1, %131, %132")
CUFUSE_WGMMA_SS(256, 128, __nv_bfloat16, "bf16", "k16", CUFUSE_WGMMA_D128, CUFUSE_WGMMA_D128_OPS,
                "%130", "%128, %129, p, 1, 1, %131, %132")
CUFUSE_WGMMA_SS(256, 128, float, "tf32", "k8", CUFUSE_WGMMA_D128, CUFUSE_WGMMA_D128_OPS, "%130",
                "%128, %129, p, 1, 1")
#undef CUFUSE_WGMMA_SS

#define CUFUSE_WGMMA_TF32_RS(N, NREG, DLIST, DOPS, PRED, OPERANDS)                                 \
  template <>                                                                                      \
  struct wgmma_tf32_rs<N> {                                                                        \
    CUFUSE_DEVICE_FN static void run(float (&d)[NREG], const unsigned (&a)[4], std::uint64_t db) { \
      asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, " PRED ", 0;\n"                               \
                   "wgmma.mma_async.sync.aligned.m64n" #N "k8.f32.tf32.tf32 " DLIST ", " OPERANDS  \
                   ", p, 1, 1;\n}\n"                                                               \
                   : DOPS                                                                          \
                   : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(db), "r"(1));                 \
    }                                                                                              \
  };
CUFUSE_WGMMA_TF32_RS(128, 64, CUFUSE_WGMMA_D64, CUFUSE_WGMMA_D64_OPS, "%69",
                     "{%64, %65, %66, %67}, %68")
CUFUSE_WGMMA_TF32_RS(256, 128, CUFUSE_WGMMA_D128, CUFUSE_WGMMA_D128_OPS, "%133",
                     "{%128, %129, %130, %131}, %132")
#undef CUFUSE_WGMMA_TF32_RS

#define CUFUSE_WGMMA_RS16(N, NREG, T, PTX_TYPE, DLIST, DOPS, PRED, OPERANDS)                       \
  template <>                                                                                      \
  struct wgmma_rs16<N, T> {                                                                        \
    CUFUSE_DEVICE_FN static void run(float (&d)[NREG], const unsigned (&a)[4], std::uint64_t db) { \
      asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, " PRED ", 0;\n"                               \
                   "wgmma.mma_async.sync.aligned.m64n" #N "k16.f32." PTX_TYPE "." PTX_TYPE         \
                   " " DLIST ", " OPERANDS ", p, 1, 1, 0;\n}\n"                                    \
                   : DOPS                                                                          \
                   : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(db), "r"(1));                 \
    }                                                                                              \
  };
CUFUSE_WGMMA_RS16(64, 32, __half, "f16", CUFUSE_WGMMA_D32, CUFUSE_WGMMA_OPS0_31, "%37",
                  "{%32, %33, %34, %35}, %36")
CUFUSE_WGMMA_RS16(64, 32, __nv_bfloat16, "bf16", CUFUSE_WGMMA_D32, CUFUSE_WGMMA_OPS0_31, "%37",
                  "{%32, %33, %34, %35}, %36")
CUFUSE_WGMMA_RS16(128, 64, __half, "f16", CUFUSE_WGMMA_D64, CUFUSE_WGMMA_D64_OPS, "%69",
                  "{%64, %65, %66, %67}, %68")
CUFUSE_WGMMA_RS16(128, 64, __nv_bfloat16, "bf16", CUFUSE_WGMMA_D64, CUFUSE_WGMMA_D64_OPS, "%69",
                  "{%64, %65, %66, %67}, %68")
#undef CUFUSE_WGMMA_RS16
#undef CUFUSE_WGMMA_D32
#undef CUFUSE_WGMMA_R0_31
#undef CUFUSE_WGMMA_OPS0_31
#undef CUFUSE_WGMMA_D64
#undef CUFUSE_WGMMA_D64_OPS
#undef CUFUSE_WGMMA_D128
#undef CUFUSE_WGMMA_D128_OPS
#undef CUFUSE_WGMMA_R0_63
#undef CUFUSE_WGMMA_R64_127
#undef CUFUSE_WGMMA_OPS0_63
#undef CUFUSE_WGMMA_OPS64_127
#endif

/// Descriptor of a 128-byte-swizzled operand tile at shared address `addr`. K-major: rows of 64
/// K-elements, 8-row groups 1024 bytes apart. M/N-major: 64-element M/N atoms 8192 bytes apart
/// (leading byte offset), 8-K-row groups 1024 bytes apart (stride byte offset).
template <bool MNMajor>
CUFUSE_DEVICE_FN std::uint64_t wgmma_desc(unsigned addr) {
  constexpr std::uint64_t lbo = MNMajor ? 8192 : 16;
  return std::uint64_t((addr & 0x3FFFF) >> 4) | ((lbo >> 4) << 16) |
         (std::uint64_t(1024 >> 4) << 32) | (std::uint64_t(1) << 62);
}

/// wgmma_desc in two words: `lo` (the start address field and the leading byte offset) and a
/// constant high word. The start address field is the address / 16 in 14 bits; shared addresses
/// lie below 2^18, so the descriptor of addr + off is lo + off / 16 (off a multiple of 16): a
/// main loop adds offsets to one descriptor instead of building each from its address
/// (bench/JOURNAL.md g35).
template <bool MNMajor>
CUFUSE_DEVICE_FN unsigned wgmma_desc_lo(unsigned addr) {
  constexpr unsigned lbo = MNMajor ? 8192 : 16;
  return ((addr & 0x3FFFFu) >> 4) | ((lbo >> 4) << 16);
}
CUFUSE_DEVICE_FN std::uint64_t wgmma_desc_of(unsigned lo) {
  return std::uint64_t(lo) | (std::uint64_t(1024 >> 4) << 32) | (std::uint64_t(1) << 62);
}

// ---- mbarrier and TMA ------------------------------------------------------------------------

CUFUSE_DEVICE_FN void mbar_init(unsigned bar, unsigned count) {
  asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;\n" ::"r"(bar), "r"(count) : "memory");
}
CUFUSE_DEVICE_FN void mbar_expect_tx(unsigned bar, unsigned bytes) {
  asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;\n" ::"r"(bar), "r"(bytes)
               : "memory");
}
CUFUSE_DEVICE_FN void mbar_arrive(unsigned bar) {
  asm volatile("mbarrier.arrive.shared::cta.b64 _, [%0];\n" ::"r"(bar) : "memory");
}
/// Spins until the phase of parity `parity` of the barrier has completed.
CUFUSE_DEVICE_FN void mbar_wait(unsigned bar, unsigned parity) {
  unsigned done = 0;
  do {
    asm volatile("{\n.reg .pred p;\n"
                 "mbarrier.try_wait.parity.shared::cta.b64 p, [%1], %2;\n"
                 "selp.u32 %0, 1, 0, p;\n}\n"
                 : "=r"(done)
                 : "r"(bar), "r"(parity)
                 : "memory");
  } while (done == 0);
}
/// TMA: copies one box at coordinates (c0, c1, c2) of `map` to shared `dst`, completing the
/// transaction on barrier `bar`.
CUFUSE_DEVICE_FN void tma_load(unsigned dst, const CUtensorMap* map, unsigned bar, int c0, int c1,
                               int c2) {
  asm volatile("cp.async.bulk.tensor.3d.shared::cluster.global.tile.mbarrier::complete_tx::bytes"
               " [%0], [%1, {%3, %4, %5}], [%2];\n" ::"r"(dst),
               "l"(reinterpret_cast<std::uint64_t>(map)), "r"(bar), "r"(c0), "r"(c1), "r"(c2)
               : "memory");
}

/// TMA load in im2col mode (4-d NHWC map, cuTensorMapEncodeIm2col): the map's pixels per column
/// (output pixels, from the window origin (w, h) of image n, walking the map's pixel box) x its
/// channels per pixel from channel c, each pixel read at its origin plus the filter offset
/// (off_w, off_h), zeros outside X, into shared `dst`; completes on mbarrier `bar`.
CUFUSE_DEVICE_FN void tma_load_im2col(unsigned dst, const CUtensorMap* map, unsigned bar, int c,
                                      int w, int h, int n, unsigned short off_w,
                                      unsigned short off_h) {
  asm volatile("cp.async.bulk.tensor.4d.shared::cluster.global.im2col.mbarrier::complete_tx::bytes"
               " [%0], [%1, {%3, %4, %5, %6}], [%2], {%7, %8};\n" ::"r"(dst),
               "l"(reinterpret_cast<std::uint64_t>(map)), "r"(bar), "r"(c), "r"(w), "r"(h), "r"(n),
               "h"(off_w), "h"(off_h)
               : "memory");
}

/// TMA store: copies the box at shared `src` to coordinates (c0, c1, c2) of `map` (elements
/// outside the tensor are not written), as part of this thread's current bulk group.
CUFUSE_DEVICE_FN void tma_store(const CUtensorMap* map, unsigned src, int c0, int c1, int c2) {
  asm volatile(
      "cp.async.bulk.tensor.3d.global.shared::cta.bulk_group [%0, {%2, %3, %4}], [%1];\n" ::"l"(
          reinterpret_cast<std::uint64_t>(map)),
      "r"(src), "r"(c0), "r"(c1), "r"(c2)
      : "memory");
}
CUFUSE_DEVICE_FN void bulk_commit() { asm volatile("cp.async.bulk.commit_group;\n" ::: "memory"); }
/// Waits until at most N of this thread's bulk groups still read shared memory.
template <int N>
CUFUSE_DEVICE_FN void bulk_wait_read() {
  asm volatile("cp.async.bulk.wait_group.read %0;\n" ::"n"(N) : "memory");
}
/// Waits until every bulk group of this thread has completed (its writes are done).
CUFUSE_DEVICE_FN void bulk_wait_all() {
  asm volatile("cp.async.bulk.wait_group 0;\n" ::: "memory");
}
/// Makes this thread's shared-memory writes visible to the async proxy (TMA).
/// Makes mbarrier initializations visible to the other threads and the async proxy (TMA).
CUFUSE_DEVICE_FN void fence_mbarrier_init() {
  asm volatile("fence.mbarrier_init.release.cluster;\n" ::: "memory");
}
/// wgmma: orders register and shared-memory accesses before the next wgmma.mma_async.
CUFUSE_DEVICE_FN void wgmma_fence() { asm volatile("wgmma.fence.sync.aligned;\n" ::: "memory"); }
/// wgmma: closes the group of wgmma.mma_async issued since the last commit.
CUFUSE_DEVICE_FN void wgmma_commit() {
  asm volatile("wgmma.commit_group.sync.aligned;\n" ::: "memory");
}
/// wgmma: waits until at most `N` committed groups are still in flight.
template <int N>
CUFUSE_DEVICE_FN void wgmma_wait() {
  asm volatile("wgmma.wait_group.sync.aligned %0;\n" ::"n"(N) : "memory");
}
/// Two consecutive 32-bit words from shared memory (one 8-byte load).
CUFUSE_DEVICE_FN void ld_shared_u32x2(unsigned addr, unsigned& x, unsigned& y) {
  asm volatile("ld.shared.v2.u32 {%0, %1}, [%2];\n" : "=r"(x), "=r"(y) : "r"(addr) : "memory");
}
CUFUSE_DEVICE_FN void fence_async_shared() {
  asm volatile("fence.proxy.async.shared::cta;\n" ::: "memory");
}
CUFUSE_DEVICE_FN void named_barrier(int id, int threads) {
  asm volatile("bar.sync %0, %1;\n" ::"r"(id), "r"(threads) : "memory");
}
CUFUSE_DEVICE_FN unsigned ld_shared_b32(unsigned addr) {
  unsigned v = 0;
  asm volatile("ld.shared.b32 %0, [%1];\n" : "=r"(v) : "r"(addr) : "memory");
  return v;
}
CUFUSE_DEVICE_FN void ld_shared_f32x2(unsigned addr, float& x, float& y) {
  asm volatile("ld.shared.v2.f32 {%0, %1}, [%2];\n" : "=f"(x), "=f"(y) : "r"(addr) : "memory");
}
CUFUSE_DEVICE_FN void st_shared_b32(unsigned addr, unsigned v) {
  asm volatile("st.shared.b32 [%0], %1;\n" ::"r"(addr), "r"(v) : "memory");
}
CUFUSE_DEVICE_FN void st_shared_f32x2(unsigned addr, float x, float y) {
  asm volatile("st.shared.v2.f32 [%0], {%1, %2};\n" ::"r"(addr), "f"(x), "f"(y) : "memory");
}

// ---- thread-block clusters (distributed shared memory) ----------------------------------------

/// The address in the shared memory of cluster block `rank` of the variable this block has at
/// shared address `addr` (for the `.shared::cluster` operations below).
CUFUSE_DEVICE_FN unsigned cluster_map(unsigned addr, unsigned rank) {
  unsigned out = 0;
  asm volatile("mapa.shared::cluster.u32 %0, %1, %2;\n" : "=r"(out) : "r"(addr), "r"(rank));
  return out;
}
/// The cluster barrier for threads that may be diverged or whose warp-mates exited: arrive
/// (release), then wait (acquire) for every non-exited thread of the cluster.
CUFUSE_DEVICE_FN void cluster_barrier() {
  asm volatile("barrier.cluster.arrive.release;\n"
               "barrier.cluster.wait.acquire;\n" ::
                   : "memory");
}
CUFUSE_DEVICE_FN void st_shared_f32x4(unsigned addr, float x, float y, float z, float w) {
  asm volatile("st.shared.v4.f32 [%0], {%1, %2, %3, %4};\n" ::"r"(addr), "f"(x), "f"(y), "f"(z),
               "f"(w)
               : "memory");
}
/// 16 bytes from the shared memory of a block of the cluster (a cluster_map address).
CUFUSE_DEVICE_FN float4 ld_cluster_f32x4(unsigned cluster_addr) {
  float4 v;
  asm volatile("ld.shared::cluster.v4.f32 {%0, %1, %2, %3}, [%4];\n"
               : "=f"(v.x), "=f"(v.y), "=f"(v.z), "=f"(v.w)
               : "r"(cluster_addr)
               : "memory");
  return v;
}

// ---- whether the code has the sm_90a features ------------------------------------------------

/// Writes whether this translation unit's code for the current device has the sm_90a features
/// (wgmma, setmaxnreg): the kernels of a translation unit built for sm_90 without `a` compile
/// to a trap, and the binary architecture alone does not tell them apart. One per epilogue type
/// (the kernels' own translation unit).
template <class Epi>
__global__ void sm90a_probe_kernel(int* out) {
#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
  *out = 1;
#else
  *out = 0;
#endif
}

/// Runs sm90a_probe_kernel once on a private stream (allowed while another stream is being
/// captured: the thread's capture mode is relaxed meanwhile).
template <class Epi>
cudaError_t probe_sm90a(bool* has) {
  cudaStreamCaptureMode mode = cudaStreamCaptureModeRelaxed;
  cudaError_t e = cudaThreadExchangeStreamCaptureMode(&mode);
  if (e != cudaSuccess) {
    return e;
  }
  int* flag = nullptr;
  cudaStream_t s = nullptr;
  e = cudaHostAlloc(&flag, sizeof(int), cudaHostAllocMapped);
  if (e == cudaSuccess) {
    *flag = 0;
    e = cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking);
  }
  int* dev = nullptr;
  if (e == cudaSuccess) {
    e = cudaHostGetDevicePointer(&dev, flag, 0);
  }
  if (e == cudaSuccess) {
    sm90a_probe_kernel<Epi><<<1, 1, 0, s>>>(dev);
    e = cudaGetLastError();
  }
  if (e == cudaSuccess) {
    e = cudaStreamSynchronize(s);
  }
  *has = e == cudaSuccess && *flag == 1;
  if (s != nullptr) {
    (void)cudaStreamDestroy(s);
  }
  if (flag != nullptr) {
    (void)cudaFreeHost(flag);
  }
  (void)cudaThreadExchangeStreamCaptureMode(&mode);
  return e;
}

} // namespace cufuse::gemm_detail
