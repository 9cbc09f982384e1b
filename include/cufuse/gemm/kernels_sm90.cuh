/// \file Hopper (sm_90a) GEMM kernels: TMA loads into a multi-stage shared-memory ring, driven
/// by a producer warp, and warpgroup MMAs (`wgmma.mma_async`) issued by one or two consumer
/// warpgroups that read both operands from shared memory through matrix descriptors. Also the
/// TF32 mma.sync kernel whose stages a producer warpgroup fills by TMA (mma_tma_gemm_kernel, at
/// the end of this file).
///
/// Data flow per block (warp specialization):
///   producer (warpgroup 0, one thread): for each K tile, wait until the ring slot is free
///     (`empty` mbarrier), announce the slot's byte count on its `full` mbarrier, issue the TMA
///     copies of the A and B tiles (they complete the transaction on `full`).
///   consumers (warpgroups 1..): wait on `full`, issue the tile's wgmma group, keep one group in
///     flight, and release the previous tile's slot on `empty` once its MMAs completed.
///   The epilogue runs in the consumers: through shared memory and TMA stores when beta == 0
///   and C suits TMA, else straight from the accumulators (see wgmma_gemm_kernel).
///
/// Both operands land in the 128-byte-swizzled layout the descriptors name. A K-major operand
/// (A as M x K, B as N x K) is one TMA box of 128 bytes of K (64 16-bit elements, 32 TF32) x
/// rows; a 16-bit M/N-major operand (A as K x M, B as K x N) is rows/64 boxes of 64
/// M/N-elements x 64 K-rows, and its descriptor sets the transpose bit, so every 16-bit layout
/// (NN, NT, TN, TT) runs here; TF32 reads B K-major only (NT directly, TT with A through
/// registers, NN as C^T = B^T A^T; TN stays on mma.sync). TMA zero-fills whatever lies
/// outside the matrix, so M, N and K tails need no special path. Persistent: a block walks
/// tiles until the problem (all batches) is done. Compiled only for sm_90a (src/CMakeLists.txt).
#pragma once

#include "kernels.cuh"

#include <cuda.h> // CUtensorMap (a plain 128-byte struct; nothing here calls the driver)

namespace cufuse::gemm_detail {

/// wgmma tile: BM x BN x BK with `Stages` ring slots; `MinBlocks` blocks share an SM (it
/// bounds the registers per thread).
///  - cooperative (PingPong = false): BM = 64 uses one consumer warpgroup; BM = 128 or 256 use
///    two that split the tile's rows, each owning BM/2 rows as (BM/2)/64 m64 MMAs.
///  - ping-pong (PingPong = true): two consumer warpgroups each own a whole BM x BN tile and
///    take the block's tiles in turn; their main loops alternate (named barriers), so one
///    warpgroup's epilogue runs while the other keeps the tensor cores busy.
template <class T, int BM_, int BN_, int Stages_, int MinBlocks_ = 1, bool PingPong_ = false>
struct wgmma_config {
  using element = T;
  /// One 128-byte swizzled row of K per tile row: 64 16-bit elements or 32 TF32 ones.
  static constexpr int BM = BM_, BN = BN_, BK = 128 / int(sizeof(T)), stages = Stages_;
  static constexpr int min_blocks = MinBlocks_;
  static constexpr bool pingpong = PingPong_;
  static constexpr int splits = 1;
  static constexpr int consumers = (BM == 64 && !pingpong) ? 1 : 2;
  static constexpr int WG = consumers;
  static constexpr int m_atoms = pingpong ? BM / 64 : BM / consumers / 64; // m64 MMAs per K step
  static constexpr int threads = 128 * (consumers + 1);
  static constexpr bool tf32 = sizeof(T) == 4;      // float inputs on TF32 tensor cores
  static constexpr int mma_k = tf32 ? 8 : 16;       // K of one wgmma
  static constexpr int chunk = 16 / int(sizeof(T)); // TMA: 16-byte aligned bases and strides
  static constexpr int a_bytes = BM * 128, b_bytes = BN * 128;
  static constexpr int stage_bytes = a_bytes + b_bytes;
  /// Epilogue staging (TMA-store path): per consumer warpgroup, `epi_bufs` buffers of 8 KiB,
  /// each one 64-row MMA atom x 128 bytes of columns. Two let a warpgroup fill one while the
  /// previous store still reads the other; a 2-blocks-per-SM tile has room for one.
  static constexpr int epi_buf_bytes = 8192;
  static constexpr int epi_bufs = MinBlocks_ == 1 ? 2 : 1;
  static constexpr int epi_bytes = consumers * epi_bufs * epi_buf_bytes;
  /// mbarriers: full[stages], empty[stages], then one per epilogue buffer (its C load, beta != 0).
  static constexpr int bar_bytes = (2 * stages + consumers * epi_bufs) * 8;
  static constexpr int smem_bytes = stages * stage_bytes + epi_bytes + 1024 + bar_bytes;
  static_assert(m_atoms * BN <= 256, "cufuse: a wgmma consumer holds at most 128 accumulators");
  static_assert(BM == 64 || BM == 128 || BM == 256, "cufuse: wgmma tiles are 64, 128 or 256 rows");
  static_assert(BN == 128 || BN == 256, "cufuse: wgmma tiles are 128 or 256 columns wide");
  static_assert(smem_bytes <= 227 * 1024,
                "cufuse: wgmma tile ring exceeds 227 KiB of shared memory");
  static_assert(min_blocks * (smem_bytes + 1024) <= 228 * 1024,
                "cufuse: wgmma blocks per SM do not fit the SM's 228 KiB of shared memory");
};

template <int N, class T, int TransA, int TransB>
struct wgmma_op;

// One wgmma.mma_async per (N, type): inline PTX takes registers one by one, so the accumulator
// operands are spelled out once per width (CUFUSE_WGMMA_D64 / _D128: the PTX list, and the
// matching "+f" constraints) and shared by the descriptor and register-A forms. scale-d is a
// predicate set from an input (always 1: accumulate; the accumulators start at zero); TransA /
// TransB are the instruction's imm-trans flags (1: that operand's tile is M/N-major).
#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
#define CUFUSE_WGMMA_R0_63                                                                         \
  "%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18, %19, "     \
  "%20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31, %32, %33, %34, %35, %36, %37, "     \
  "%38, %39, %40, %41, %42, %43, %44, %45, %46, %47, %48, %49, %50, %51, %52, %53, %54, %55, "     \
  "%56, %57, %58, %59, %60, %61, %62, %63"
#define CUFUSE_WGMMA_R64_127                                                                       \
  "%64, %65, %66, %67, %68, %69, %70, %71, %72, %73, %74, %75, %76, %77, %78, %79, %80, %81, "     \
  "%82, %83, %84, %85, %86, %87, %88, %89, %90, %91, %92, %93, %94, %95, %96, %97, %98, %99, "     \
  "%100, %101, %102, %103, %104, %105, %106, %107, %108, %109, %110, %111, %112, %113, %114, "     \
  "%115, %116, %117, %118, %119, %120, %121, %122, %123, %124, %125, %126, %127"
#define CUFUSE_WGMMA_OPS0_63                                                                       \
  "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]),  \
      "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]),     \
      "+f"(d[15]), "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]),   \
      "+f"(d[22]), "+f"(d[23]), "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]),   \
      "+f"(d[29]), "+f"(d[30]), "+f"(d[31]), "+f"(d[32]), "+f"(d[33]), "+f"(d[34]), "+f"(d[35]),   \
      "+f"(d[36]), "+f"(d[37]), "+f"(d[38]), "+f"(d[39]), "+f"(d[40]), "+f"(d[41]), "+f"(d[42]),   \
      "+f"(d[43]), "+f"(d[44]), "+f"(d[45]), "+f"(d[46]), "+f"(d[47]), "+f"(d[48]), "+f"(d[49]),   \
      "+f"(d[50]), "+f"(d[51]), "+f"(d[52]), "+f"(d[53]), "+f"(d[54]), "+f"(d[55]), "+f"(d[56]),   \
      "+f"(d[57]), "+f"(d[58]), "+f"(d[59]), "+f"(d[60]), "+f"(d[61]), "+f"(d[62]), "+f"(d[63])
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

/// TF32 wgmma with A from registers and B from shared memory (K-major). Per thread, A holds
/// four 32-bit fragments of its warp's 16 rows: (row g, k q), (g + 8, q), (g, q + 4),
/// (g + 8, q + 4) with g = lane / 4, q = lane % 4 (the mma.sync m16n8k8 layout).
template <int N>
struct wgmma_tf32_rs;
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

/// C = alpha * op(A) op(B) + beta * C. TA: A is stored K x M (M-major); TB: B is stored N x K
/// (K-major). `map_a` / `map_b` describe A and B as stored (3-D: inner, outer, batch).
///
/// TF32 reads B K-major only. An M-major TF32 A (layout TT) goes through registers: each thread
/// loads its wgmma A fragments from the swizzled tile with 8-byte shared loads. Its fragment
/// rows g and g + 8 are mapped to two adjacent tile rows (`rs_row`), which makes each pair one
/// load and spreads a half-warp over all 32 banks; the epilogue follows the same map. SwapC:
/// the kernel computes C^T = op(B)^T op(A)^T, i.e. the host passed B as A and A as B with m
/// and n exchanged (layout NN on TF32 becomes TT), and C is written transposed.
///
/// Epilogue. With `p.epi_tma` (set by the host when C suits TMA: 16-byte aligned base, leading
/// dimension and batch stride, and rows of whole 16-byte units, since a TMA store writes whole
/// 16-byte units even past a row's end) each consumer warpgroup converts its accumulators to C's
/// type into a 128-byte-swizzled shared buffer, one 64-row MMA atom x 128 bytes of columns at a
/// time, and one thread stores the buffer with a TMA copy (`map_c`: C as stored, boxes of 128
/// bytes x 64 rows; SwapC: two 32 x 32 boxes of the transposed tile). The stores run
/// asynchronously under the next chunk and the next tile's main loop. With beta != 0 the same
/// thread first loads the chunk of C into the buffer by TMA (the same boxes), and every thread
/// reads back the elements it then overwrites. Otherwise the accumulators go straight to global
/// memory (beta != 0 reads C there: 8 rows per warp access, 0.69-0.82x cuBLAS at 4096^3 where
/// the staged path runs at 0.98-1.01x; NOTES g25).
template <class Cfg, bool TA, bool TB, class Epi, bool SwapC = false>
__global__ void __launch_bounds__(Cfg::threads, Cfg::min_blocks)
    wgmma_gemm_kernel(const __grid_constant__ CUtensorMap map_a,
                      const __grid_constant__ CUtensorMap map_b,
                      const __grid_constant__ CUtensorMap map_c, gemm_args p) {
#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
  using T = typename Cfg::element;
  constexpr int BM = Cfg::BM, BN = Cfg::BN, BK = Cfg::BK, S = Cfg::stages;
  constexpr bool a_mn = TA;  // A stored K x M: M-major tiles
  constexpr bool b_mn = !TB; // B stored K x N: N-major tiles
  static_assert(!Cfg::tf32 || !b_mn,
                "cufuse: TF32 wgmma reads B K-major (stored N x K); swap the operands for NN");
  static_assert(!SwapC || (Cfg::tf32 && a_mn), "cufuse: SwapC is the TF32 NN form (A M-major)");
  // TF32 with an M-major A: A fragments from registers (see above).
  constexpr bool rs = Cfg::tf32 && a_mn;
  // An M/N-major operand is loaded as boxes of 128 bytes of M/N (BK elements) x BK K-rows.
  constexpr int mn_box = BK, mn_box_bytes = BK * 128;
  extern __shared__ unsigned char wgmma_smem_raw[];
  // Swizzle atoms must start on 1024-byte boundaries.
  unsigned char* base = reinterpret_cast<unsigned char*>(
      (reinterpret_cast<std::uintptr_t>(wgmma_smem_raw) + 1023) & ~std::uintptr_t(1023));
  const unsigned ring = smem_addr(base);
  const unsigned epi_smem = ring + S * Cfg::stage_bytes; // epilogue buffers (1024-aligned)
  const unsigned bars = epi_smem + Cfg::epi_bytes; // full[S], empty[S], C loaded[consumers][EB]
  auto full = [&](int s) { return bars + 8u * unsigned(s); };
  auto empty = [&](int s) { return bars + 8u * unsigned(S + s); };
  auto c_loaded = [&](int b) { return bars + 8u * unsigned(2 * S + b); };
  auto slot_a = [&](int s) { return ring + unsigned(s * Cfg::stage_bytes); };
  auto slot_b = [&](int s) { return ring + unsigned(s * Cfg::stage_bytes + Cfg::a_bytes); };

  const int tid = static_cast<int>(threadIdx.x);
  const int wg = tid / 128;
  const int ktiles = (p.k + BK - 1) / BK;
  const int tiles = ((p.m + BM - 1) / BM) * ((p.n + BN - 1) / BN);
  const int work = tiles * p.batch;

  if (tid == 0) {
    for (int s = 0; s < S; ++s) {
      mbar_init(full(s), 1); // the producer's expect_tx arrival
      // One arrival per warp of the warpgroup(s) that consume a slot.
      mbar_init(empty(s), Cfg::pingpong ? 4 : 4 * Cfg::consumers);
    }
    for (int b = 0; b < Cfg::consumers * Cfg::epi_bufs; ++b) {
      mbar_init(c_loaded(b), 1); // the epilogue leader's expect_tx arrival
    }
    asm volatile("fence.mbarrier_init.release.cluster;\n" ::: "memory");
    asm volatile("fence.proxy.async.shared::cta;\n" ::: "memory");
  }
  __syncthreads();

  // Persistent: the block walks tiles blockIdx.x, + gridDim.x, ...; ring slot and phase follow
  // one K-tile counter `it` that runs on across tiles, so the producer fills the next tile's
  // first slots while the consumers are still in the previous tile's epilogue.
  if (wg == 0) {
    // Producer warpgroup: gives registers back to the consumers; one thread issues every copy.
    if constexpr (Cfg::consumers == 2) {
      asm volatile("setmaxnreg.dec.sync.aligned.u32 40;\n");
    }
    if (tid == 0) {
      int it = 0;
      for (int tile = static_cast<int>(blockIdx.x); tile < work; tile += gridDim.x) {
        const int batch = tile / tiles;
        const block_work w = locate_tile<BM, BN, int(sizeof(T)), 2>(p, tile - batch * tiles, batch);
        const int ba = p.stride_a != 0 ? batch : 0;
        const int bb = p.stride_b != 0 ? batch : 0;
        for (int t = 0; t < ktiles; ++t, ++it) {
          const int s = it % S;
          mbar_wait(empty(s), ((it / S) & 1) ^ 1); // first round: passes at once
          mbar_expect_tx(full(s), Cfg::stage_bytes);
          const int k0 = t * BK;
          if constexpr (a_mn) {
            for (int j = 0; j < BM / mn_box; ++j) {
              tma_load(slot_a(s) + j * mn_box_bytes, &map_a, full(s), w.m0 + mn_box * j, k0, ba);
            }
          } else {
            tma_load(slot_a(s), &map_a, full(s), k0, w.m0, ba);
          }
          if constexpr (b_mn) {
            for (int j = 0; j < BN / mn_box; ++j) {
              tma_load(slot_b(s) + j * mn_box_bytes, &map_b, full(s), w.n0 + mn_box * j, k0, bb);
            }
          } else {
            tma_load(slot_b(s), &map_b, full(s), k0, w.n0, bb);
          }
        }
      }
    }
    return;
  }

  if constexpr (Cfg::consumers == 2) {
    asm volatile("setmaxnreg.inc.sync.aligned.u32 232;\n");
  }
  constexpr int MA = Cfg::m_atoms;
  constexpr bool PP = Cfg::pingpong;
  const int cw = wg - 1;
  const int lane = tid & 31, warp = (tid % 128) / 32;
  const int g = lane >> 2, q = lane & 3;
  // Register-A path: the tile row (within a 64-row MMA) that holds this thread's fragment row
  // g; row g + 8 is the next one. Warp w covers rows 32 (w / 2) + 8 (w % 2) + {0..7, 16..23};
  // lanes 0-15 then read 16-byte chunks {c, c ^ 4} of every K row, all 8 chunks per row.
  const int rs_row =
      32 * (warp >> 1) + 8 * (warp & 1) + 16 * ((g >> 1) & 1) + 4 * (g >> 2) + 2 * (g & 1);
  // Byte offset of (row rs_row, k = kk) in an M-major TF32 tile of one 64-row MMA: boxes of 32
  // rows x BK K-rows of 128 bytes, 16-byte chunks XOR-swizzled with the K row.
  const auto rs_offset = [&](int kk) {
    const int m = rs_row & 31;
    return unsigned((rs_row >> 5) * mn_box_bytes + kk * 128 +
                    ((((m >> 2) ^ (kk & 7)) << 4) | ((m & 3) << 2)));
  };
  // Ping-pong: warpgroup cw takes the block's tiles i = cw, cw + 2, ...; named barrier 1 + cw
  // opens its main loop once the other warpgroup has issued its previous tile's MMAs, which
  // also keeps every slot it waits on at most one phase ahead.
  const int step = PP ? 2 : 1;
  int i = PP ? cw : 0; // the block's tile counter
  int it = 0;
  // TMA-store epilogue: this warpgroup's buffers, its chunk counter (buffer = chunk % bufs),
  // the thread that issues its stores, and its named barrier (1 and 2 are the ping-pong's).
  constexpr int EB = Cfg::epi_bufs;
  const unsigned epi_base = epi_smem + unsigned(cw * EB * Cfg::epi_buf_bytes);
  const bool epi_leader = tid % 128 == 0;
  const int epi_bar = 3 + cw;
  int epi_n = 0;
  // beta != 0: the TMA epilogue loads C's chunks into its buffers first. A tile's chunks, in the
  // order the epilogue fills them: 64-row atom ma (of this warpgroup) x 128-byte column pieces,
  // `ch` (SwapC: 32 C rows, two 32 x 32 boxes). Chunk c of the tile has buffer (epi_n + c) % EB.
  // The first EB loads go out before the tile's main loop, so they land under it; with two
  // buffers each chunk then loads the next one as soon as that buffer's last store has read it.
  const bool read_c = p.epi_tma && p.beta != 0.0f;
  const int cw_cols = SwapC ? 32 : 128 / (p.out_type == int(dtype::f32) ? 4 : 2);
  const int chunks = MA * (BN / cw_cols);
  // Loads chunk c of the tile at `w` into the buffer of the warpgroup's chunk number `n` and
  // arms that buffer's barrier (the leader only).
  auto load_c = [&](const block_work& w, int bc, int c, int n) {
    const int slot = n % EB;
    const unsigned buf = epi_base + unsigned(slot * Cfg::epi_buf_bytes);
    const unsigned bar = c_loaded(cw * EB + slot);
    const int ma = c / (BN / cw_cols), ch = c % (BN / cw_cols);
    const int r0 = ((PP ? 0 : cw) * MA + ma) * 64;
    mbar_expect_tx(bar, Cfg::epi_buf_bytes);
    if constexpr (SwapC) {
      tma_load(buf, &map_c, bar, w.m0 + r0, w.n0 + ch * 32, bc);
      tma_load(buf + 4096, &map_c, bar, w.m0 + r0 + 32, w.n0 + ch * 32, bc);
    } else {
      tma_load(buf, &map_c, bar, w.n0 + ch * cw_cols, w.m0 + r0, bc);
    }
  };
  for (int tile = static_cast<int>(blockIdx.x) + i * static_cast<int>(gridDim.x); tile < work;
       tile += step * static_cast<int>(gridDim.x), i += step) {
    const int batch = tile / tiles;
    const block_work w = locate_tile<BM, BN, int(sizeof(T)), 2>(p, tile - batch * tiles, batch);
    const int bc = p.stride_c != 0 ? batch : 0;
    if (read_c && epi_leader) {
      bulk_wait_read<0>(); // the previous tile's last stores have read their buffers
      for (int c = 0; c < EB && c < chunks; ++c) {
        load_c(w, bc, c, epi_n + c);
      }
    }
    if constexpr (PP) {
      it = i * ktiles;
      if (i > 0) {
        asm volatile("bar.sync %0, 256;\n" ::"r"(1 + cw) : "memory");
      }
    }
    float acc[MA][BN / 2];
    CUFUSE_UNROLL
    for (int r = 0; r < MA; ++r) {
      CUFUSE_UNROLL
      for (int j = 0; j < BN / 2; ++j) {
        acc[r][j] = 0.0f;
      }
    }
    if constexpr (rs) {
      // One MMA group per K step: a step's A fragments stay live until its group completes,
      // which the wait of the step after next guarantees, so two fragment sets alternate
      // (registers of a whole tile in flight would not fit beside 128 accumulators).
      constexpr int KS = BK / Cfg::mma_k;
      static_assert(KS % 2 == 0, "cufuse: the register-A path alternates two fragment sets");
      unsigned fa[2][MA][4];
      for (int t = 0; t < ktiles; ++t, ++it) {
        const int s = it % S;
        mbar_wait(full(s), (it / S) & 1);
        CUFUSE_UNROLL
        for (int ks = 0; ks < KS; ++ks) {
          unsigned(&f)[MA][4] = fa[ks & 1];
          CUFUSE_UNROLL
          for (int ma = 0; ma < MA; ++ma) {
            const unsigned atom =
                slot_a(s) + unsigned(((PP ? 0 : cw) * MA + ma) * (64 / mn_box) * mn_box_bytes);
            asm volatile("ld.shared.v2.u32 {%0, %1}, [%2];\n"
                         : "=r"(f[ma][0]), "=r"(f[ma][1])
                         : "r"(atom + rs_offset(ks * 8 + q))
                         : "memory");
            asm volatile("ld.shared.v2.u32 {%0, %1}, [%2];\n"
                         : "=r"(f[ma][2]), "=r"(f[ma][3])
                         : "r"(atom + rs_offset(ks * 8 + q + 4))
                         : "memory");
          }
          asm volatile("wgmma.fence.sync.aligned;\n" ::: "memory");
          CUFUSE_UNROLL
          for (int ma = 0; ma < MA; ++ma) {
            wgmma_tf32_rs<BN>::run(acc[ma], f[ma], wgmma_desc<false>(slot_b(s) + ks * 32));
          }
          asm volatile("wgmma.commit_group.sync.aligned;\n" ::: "memory");
          asm volatile("wgmma.wait_group.sync.aligned 1;\n" ::: "memory");
          // After the first step's wait, the previous tile's last group is complete.
          if (ks == 0 && t > 0 && lane == 0) {
            mbar_arrive(empty((it - 1) % S));
          }
        }
      }
    } else {
      for (int t = 0; t < ktiles; ++t, ++it) {
        const int s = it % S;
        mbar_wait(full(s), (it / S) & 1);
        asm volatile("wgmma.fence.sync.aligned;\n" ::: "memory");
        CUFUSE_UNROLL
        for (int ks = 0; ks < BK / Cfg::mma_k; ++ks) {
          // K-major: 16 K-elements are 32 bytes along the swizzled row; M/N-major: 16 K-rows of
          // 128 bytes.
          const unsigned b_addr = slot_b(s) + (b_mn ? ks * 2048 : ks * 32);
          CUFUSE_UNROLL
          for (int ma = 0; ma < MA; ++ma) {
            const int row0 = ((PP ? 0 : cw) * MA + ma) * 64; // first tile row of this MMA
            const unsigned a_addr =
                slot_a(s) + (a_mn ? (row0 / 64) * 8192 + ks * 2048 : row0 * 128 + ks * 32);
            wgmma_op<BN, T, a_mn ? 1 : 0, b_mn ? 1 : 0>::run(acc[ma], wgmma_desc<a_mn>(a_addr),
                                                             wgmma_desc<b_mn>(b_addr));
          }
        }
        asm volatile("wgmma.commit_group.sync.aligned;\n" ::: "memory");
        asm volatile("wgmma.wait_group.sync.aligned 1;\n" ::: "memory");
        // The previous K tile's MMAs completed: its slot may be refilled.
        if (t > 0 && lane == 0) {
          mbar_arrive(empty((it - 1) % S));
        }
      }
    }
    if constexpr (PP) {
      if (tile + static_cast<int>(gridDim.x) < work) {
        asm volatile("bar.arrive %0, 256;\n" ::"r"(2 - cw) : "memory"); // the other may start
      }
    }
    asm volatile("wgmma.wait_group.sync.aligned 0;\n" ::: "memory");
    if (ktiles > 0 && lane == 0) {
      mbar_arrive(empty((it - 1) % S));
    }

    // Accumulator j * 4 + e sits at MMA row r (e < 2) or r' (e >= 2), column j * 8 + 2q + e % 2
    // (register-A path: rows rs_row and rs_row + 1).
    if (p.epi_tma) {
      // A chunk: wait until its buffer's previous store has read it (beta != 0: until C's chunk
      // has landed in it, and load the next chunk), fill it, publish it to the async proxy, and
      // let the warpgroup's leader store it.
      int c_local = 0; // this chunk's number in the tile
      auto begin_chunk = [&](auto with_c) {
        constexpr bool RC = decltype(with_c)::value;
        const unsigned buf = epi_base + unsigned((epi_n % EB) * Cfg::epi_buf_bytes);
        if (epi_leader) {
          if constexpr (!RC) {
            bulk_wait_read<EB - 1>();
          } else if constexpr (EB == 1) {
            if (c_local > 0) { // chunk 0 was loaded before the main loop
              bulk_wait_read<0>();
              load_c(w, bc, c_local, epi_n);
            }
          } else if (c_local > 0 && c_local + 1 < chunks) {
            // Chunks 0 and 1 were loaded before the main loop; the next chunk's buffer is the
            // previous chunk's, once its store has read it.
            bulk_wait_read<0>();
            load_c(w, bc, c_local + 1, epi_n + 1);
          }
        }
        named_barrier(epi_bar, 128);
        if constexpr (RC) {
          mbar_wait(c_loaded(cw * EB + epi_n % EB), unsigned(epi_n / EB) & 1u);
        }
        ++c_local;
        return buf;
      };
      auto end_chunk = [&]() {
        fence_async_shared();
        named_barrier(epi_bar, 128);
        ++epi_n;
      };
      // The epilogue of two accumulators, written to shared memory at `addr` as one 32-bit pair
      // of 16-bit elements or two floats; RC: their C values sit there (beta != 0). beta = 0 is
      // a separate instantiation, so its stores carry no C arithmetic (with a run-time beta,
      // FP16 4096x4096x128 ran 18% slower).
      auto out16 = [&](auto with_c, int ma, int e0, int e1, unsigned addr) {
        if constexpr (decltype(with_c)::value) {
          const unsigned c = ld_shared_b32(addr); // C's pair, as stored
          return pack_out16(Epi{}(acc[ma][e0], p.alpha, p.beta, &c, 0, p.out_type),
                            Epi{}(acc[ma][e1], p.alpha, p.beta, &c, 1, p.out_type), p.out_type);
        } else {
          return pack_out16(Epi{}(acc[ma][e0], p.alpha, 0.0f, nullptr, 0, 0),
                            Epi{}(acc[ma][e1], p.alpha, 0.0f, nullptr, 0, 0), p.out_type);
        }
      };
      auto st_out32 = [&](auto with_c, int ma, int e0, int e1, unsigned addr) {
        if constexpr (decltype(with_c)::value) {
          float c[2];
          ld_shared_f32x2(addr, c[0], c[1]);
          st_shared_f32x2(addr, Epi{}(acc[ma][e0], p.alpha, p.beta, c, 0, int(dtype::f32)),
                          Epi{}(acc[ma][e1], p.alpha, p.beta, c, 1, int(dtype::f32)));
        } else {
          st_shared_f32x2(addr, Epi{}(acc[ma][e0], p.alpha, 0.0f, nullptr, 0, 0),
                          Epi{}(acc[ma][e1], p.alpha, 0.0f, nullptr, 0, 0));
        }
      };
      auto store_tiles = [&](auto out_size, auto with_c) {
        [[maybe_unused]] constexpr int OS = decltype(out_size)::value; // bytes per C element
        CUFUSE_UNROLL
        for (int ma = 0; ma < MA; ++ma) {
          const int r0 = ((PP ? 0 : cw) * MA + ma) * 64; // the atom's first row in the tile
          if constexpr (SwapC) {
            // MMA rows are C's columns: a chunk is 32 MMA columns (C rows) x 64 MMA rows, held
            // as two 32 x 32 boxes of C; rows rs_row, rs_row + 1 are adjacent C columns.
            const int box = rs_row >> 5, rr = rs_row & 31;
            const auto off = [&](int cr) {
              return unsigned(box * 4096 + cr * 128 + (((rr >> 2) ^ (cr & 7)) << 4) + (rr & 3) * 4);
            };
            CUFUSE_UNROLL
            for (int ch = 0; ch < BN / 32; ++ch) {
              const unsigned buf = begin_chunk(with_c);
              CUFUSE_UNROLL
              for (int jj = 0; jj < 4; ++jj) {
                const int j = ch * 4 + jj, c = jj * 8 + 2 * q;
                st_out32(with_c, ma, j * 4 + 0, j * 4 + 2, buf + off(c));
                st_out32(with_c, ma, j * 4 + 1, j * 4 + 3, buf + off(c + 1));
              }
              end_chunk();
              if (epi_leader) {
                tma_store(&map_c, buf, w.m0 + r0, w.n0 + ch * 32, bc);
                tma_store(&map_c, buf + 4096, w.m0 + r0 + 32, w.n0 + ch * 32, bc);
                bulk_commit();
              }
            }
          } else {
            // A chunk is the atom's 64 rows x 128 bytes of columns; 16-byte units XOR-swizzled
            // with the row (the map's 128-byte swizzle), so a warp's stores hit distinct banks.
            constexpr int CW = 128 / OS;
            const int ra = rs ? rs_row : warp * 16 + g;
            const int rb = rs ? ra + 1 : ra + 8;
            CUFUSE_UNROLL
            for (int ch = 0; ch < BN / CW; ++ch) {
              const unsigned buf = begin_chunk(with_c);
              CUFUSE_UNROLL
              for (int jj = 0; jj < CW / 8; ++jj) {
                const int j = ch * (CW / 8) + jj;
                if constexpr (OS == 2) {
                  const unsigned lo = buf + unsigned(ra * 128 + ((jj ^ (ra & 7)) << 4) + 4 * q);
                  const unsigned hi = buf + unsigned(rb * 128 + ((jj ^ (rb & 7)) << 4) + 4 * q);
                  st_shared_b32(lo, out16(with_c, ma, j * 4 + 0, j * 4 + 1, lo));
                  st_shared_b32(hi, out16(with_c, ma, j * 4 + 2, j * 4 + 3, hi));
                } else {
                  const int u = 2 * jj + (q >> 1), within = (q & 1) * 8;
                  st_out32(with_c, ma, j * 4 + 0, j * 4 + 1,
                           buf + unsigned(ra * 128 + ((u ^ (ra & 7)) << 4) + within));
                  st_out32(with_c, ma, j * 4 + 2, j * 4 + 3,
                           buf + unsigned(rb * 128 + ((u ^ (rb & 7)) << 4) + within));
                }
              }
              end_chunk();
              if (epi_leader) {
                tma_store(&map_c, buf, w.n0 + ch * CW, w.m0 + r0, bc);
                bulk_commit();
              }
            }
          }
        }
      };
      auto by_type = [&](auto with_c) {
        if (p.out_type == int(dtype::f32)) {
          store_tiles(std::integral_constant<int, 4>{}, with_c);
        } else if constexpr (!SwapC) {
          store_tiles(std::integral_constant<int, 2>{}, with_c);
        }
      };
      if (read_c) {
        by_type(std::true_type{});
      } else {
        by_type(std::false_type{});
      }
    } else {
      // Direct stores from the accumulators (beta != 0 reads C here).
      CUFUSE_UNROLL
      for (int ma = 0; ma < MA; ++ma) {
        const int r0 = ((PP ? 0 : cw) * MA + ma) * 64;
        const std::int64_t r = w.m0 + r0 + (rs ? rs_row : warp * 16 + g);
        const std::int64_t r_hi = rs ? r + 1 : r + 8;
        CUFUSE_UNROLL
        for (int j = 0; j < BN / 8; ++j) {
          const int col = w.n0 + j * 8 + 2 * q;
          if constexpr (SwapC) {
            // MMA rows are columns of C (r, r + 1: adjacent), MMA columns its rows.
            gemm_args pc = p;
            pc.m = p.n;
            pc.n = p.m;
            const float c0[2] = {acc[ma][j * 4 + 0], acc[ma][j * 4 + 2]};
            const float c1[2] = {acc[ma][j * 4 + 1], acc[ma][j * 4 + 3]};
            store_group<2>(pc, w.c, col, int(r), c0, w.vec_ok, Epi{});
            store_group<2>(pc, w.c, col + 1, int(r), c1, w.vec_ok, Epi{});
          } else {
            const float lo[2] = {acc[ma][j * 4 + 0], acc[ma][j * 4 + 1]};
            const float hi[2] = {acc[ma][j * 4 + 2], acc[ma][j * 4 + 3]};
            store_group<2>(p, w.c, r, col, lo, w.vec_ok, Epi{});
            store_group<2>(p, w.c, r_hi, col, hi, w.vec_ok, Epi{});
          }
        }
      }
    }
  }
  if (epi_leader) {
    bulk_wait_all(); // the block's shared memory must outlive its last stores
  }
#else
  (void)map_a;
  (void)map_b;
  (void)map_c;
  (void)p;
  __trap(); // never launched: the host checks the kernel's binary architecture first
#endif
}

/// TF32 mma.sync with TMA loads (sm_90a): the main loop and epilogue of mma_gemm_kernel, with
/// the stages filled by TMA instead of every thread's cp.async copies. B is K-major (stored
/// N x K, layout NT or TT; TF32 NN runs as TT with `Swap`, C^T = B^T A^T, see kernel_of). A
/// K-major A is one box of 32 K-elements (128 bytes) x BM rows, an M-major A BM / 32 boxes of
/// 32 M-rows x 32 K-rows, both 128-byte swizzled (mma_frag_layout::a_box). TMA zero-fills what
/// lies outside the matrices, so edge tiles take the same path.
///
/// Warp specialization, as in wgmma_gemm_kernel: one thread of a producer warpgroup issues the
/// copies of every K tile into an S-stage ring (`full` mbarriers); the WM x WN mma warps wait
/// only for the stage they read next, and each releases a stage (`empty`) once it has issued
/// its last read of it. No block-wide barrier in the main loop. The producer warpgroup gives its
/// registers to the mma warps (setmaxnreg). Tried first (bench/JOURNAL.md g31): thread 0 of an
/// mma warp issuing the copies, after a __syncthreads per K tile (TF32 NN 4096^3 -12%, NT -5%
/// against cp.async), then with the barrier replaced by a count of warps done with the stage
/// (NT level, NN -10%, 256x128 NN -22%): each TMA instruction holds its warp for a long time,
/// so the copies must not be issued by a warp that computes.
template <class Cfg, bool TA, class Epi, bool Swap = false>
__global__ void __launch_bounds__(Cfg::threads, Cfg::min_blocks)
    mma_tma_gemm_kernel(const __grid_constant__ CUtensorMap map_a,
                        const __grid_constant__ CUtensorMap map_b, gemm_args p) {
#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
  static_assert(Cfg::tma && Cfg::tf32, "cufuse: mma_tma_gemm_kernel runs TMA TF32 tiles");
  using T = float;
  constexpr bool TB = true;
  constexpr int BM = Cfg::BM, BN = Cfg::BN, BK = Cfg::BK, S = Cfg::stages;
  constexpr int mma_warps = Cfg::mma_threads / 32;
  static_assert(mma_warps == 4 || mma_warps == 8,
                "cufuse: TMA mma tiles have 4 or 8 mma warps (one or two warpgroups)");
  // Registers: the producer warpgroup keeps 24 per thread, the mma warps take the rest of the
  // block's share (2 blocks per SM for 4 mma warps): 8 warps 240, 4 warps 232.
  constexpr int mma_regs = mma_warps == 8 ? 240 : 232;
  constexpr int a_elems = BM * BK, b_elems = BN * BK;
  constexpr unsigned a_stage = a_elems * 4, b_stage = b_elems * 4;
  constexpr int box_bytes = 32 * BK * 4; // one 32-row box of an M-major A
  extern __shared__ unsigned char mma_tma_smem_raw[];
  // The ring starts on a 1024-byte boundary. An offset into the shared array (not an integer
  // cast), so that the fragment reads through `sa` stay LDS: through a pointer rebuilt from an
  // integer, ptxas emitted generic loads with 64-bit addresses (TF32 NN 4096^3: 237 TFLOP/s).
  unsigned char* base =
      mma_tma_smem_raw + ((1024u - (smem_addr(mma_tma_smem_raw) & 1023u)) & 1023u);
  T* sa = reinterpret_cast<T*>(base); // [S][a_elems], then [S][b_elems]
  T* sb = sa + S * a_elems;
  const unsigned s_a = smem_addr(base), s_b = s_a + S * a_stage;
  const unsigned bars = s_b + S * b_stage; // full[S], empty[S]
  auto full = [&](int s) { return bars + 8u * unsigned(s); };
  auto empty = [&](int s) { return bars + 8u * unsigned(S + s); };

  const int tid = static_cast<int>(threadIdx.x);
  if (tid == 0) {
    for (int s = 0; s < S; ++s) {
      mbar_init(full(s), 1);          // the producer's expect_tx arrival
      mbar_init(empty(s), mma_warps); // one arrival per mma warp
    }
    asm volatile("fence.mbarrier_init.release.cluster;\n" ::: "memory");
    asm volatile("fence.proxy.async.shared::cta;\n" ::: "memory");
  }
  __syncthreads();

  const block_work w = locate_block<BM, BN, 4, 2>(p);
  const int tiles = w.k_tiles<BK>();
  if (tid < 128) { // producer warpgroup
    asm volatile("setmaxnreg.dec.sync.aligned.u32 24;\n");
    if (tid == 0) {
      const int batch = static_cast<int>(blockIdx.z);
      const int ba = p.stride_a != 0 ? batch : 0, bb = p.stride_b != 0 ? batch : 0;
      for (int t = 0; t < tiles; ++t) {
        const int s = t % S;
        mbar_wait(empty(s), unsigned((t / S) & 1) ^ 1u); // the first round passes at once
        mbar_expect_tx(full(s), a_stage + b_stage);
        const int k0 = w.k_begin + t * BK;
        if constexpr (TA) {
          for (int j = 0; j < BM / 32; ++j) {
            tma_load(s_a + s * a_stage + j * box_bytes, &map_a, full(s), w.m0 + 32 * j, k0, ba);
          }
        } else {
          tma_load(s_a + s * a_stage, &map_a, full(s), k0, w.m0, ba);
        }
        tma_load(s_b + s * b_stage, &map_b, full(s), k0, w.n0, bb);
      }
    }
    return;
  }
  asm volatile("setmaxnreg.inc.sync.aligned.u32 %0;\n" ::"n"(mma_regs));

  const int mtid = tid - 128; // among the mma warps
  const int lane = mtid & 31, warp = mtid >> 5;
  const int wm = warp / Cfg::WN, wn = warp % Cfg::WN;
  float acc[Cfg::MI][Cfg::NI][4];
  zero_acc(acc);

  using L = mma_frag_layout<Cfg, TA, TB>;
  const int a_base = L::a_base(wm, lane), b_base = L::b_base(wn, lane);
  constexpr int KS = BK / Cfg::MMA_K;
  static_assert(KS % 2 == 0, "cufuse: BK must hold an even number of MMA k-steps");
  unsigned fa[2][Cfg::MI][4];
  unsigned fb[2][Cfg::NI][2];
  if (tiles > 0) {
    mbar_wait(full(0), 0);
    mma_fragments<Cfg, TA, TB>(s_a, s_b, sa, sb, a_base, b_base, 0, fa[0], fb[0]);
  }
  int rs = 0; // the stage this tile reads: t % S
  for (int t = 0; t < tiles; ++t) {
    const int cs = rs;
    const unsigned ra = s_a + rs * a_stage, rb = s_b + rs * b_stage;
    const T* pa = sa + rs * a_elems;
    const T* pb = sb + rs * b_elems;
    rs = rs + 1 == S ? 0 : rs + 1;
    CUFUSE_UNROLL
    for (int ks = 0; ks < KS; ++ks) {
      const bool last = ks + 1 == KS; // the next step is step 0 of the next stage
      if (last) {
        // This warp has issued every read of stage cs (step KS - 1's during step KS - 2).
        __syncwarp();
        if (lane == 0) {
          mbar_arrive(empty(cs));
        }
        if (t + 1 < tiles) {
          mbar_wait(full(rs), unsigned((t + 1) / S) & 1u);
        }
      }
      const unsigned na = last ? s_a + rs * a_stage : ra, nb = last ? s_b + rs * b_stage : rb;
      const T* npa = last ? sa + rs * a_elems : pa;
      const T* npb = last ? sb + rs * b_elems : pb;
      mma_step<Cfg, TA, TB>(acc, fa[ks & 1], fb[ks & 1], na, nb, npa, npb, a_base, b_base,
                            last ? 0 : ks + 1, fa[(ks + 1) & 1], fb[(ks + 1) & 1]);
    }
  }
  // Every copy the producer issued was waited on here, so the ring is free for the epilogue's
  // staging once every mma warp is done reading (its first barrier: named, mma warps only).
  mma_epilogue<Cfg, TA, TB, Epi, Swap>(acc, base, p, p, w, mtid, 1);
#else
  (void)map_a;
  (void)map_b;
  (void)p;
  __trap(); // never launched: the host checks the kernel's binary architecture first
#endif
}

} // namespace cufuse::gemm_detail
