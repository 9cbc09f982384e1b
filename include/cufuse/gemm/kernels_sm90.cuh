/// \file Hopper (sm_90a) GEMM kernels: warpgroup MMA (`wgmma.mma_async`) reading both operands
/// from shared memory through matrix descriptors. Tiles are filled by a multi-stage cp.async
/// pipeline in the 128-byte-swizzled K-major layout that the descriptors name (16-byte chunk c
/// of row r stored at c ^ (r % 8), rows of 64 elements, 8-row atoms 1024 bytes apart), so these
/// variants take A as M x K and B as its transpose (N x K), both contiguous along K (layout NT;
/// other layouts use the mma.sync variants). Compiled only for sm_90a (src/CMakeLists.txt).
#pragma once

#include "kernels.cuh"

namespace cufuse::gemm_detail {

/// wgmma tile: BM = 64 x warpgroups rows, BN (128 or 256) columns, BK = 64, `Stages` stages.
template <class T, int WG_, int BN_, int Stages_, int Splits_ = 1>
struct wgmma_config {
  using element = T;
  static constexpr int WG = WG_, BM = 64 * WG_, BN = BN_, BK = 64, stages = Stages_;
  static constexpr int splits = Splits_;
  static constexpr int threads = 128 * WG;
  static constexpr bool tf32 = false;
  static constexpr int chunk = 8;
  static constexpr int stage_bytes = (BM + BN) * BK * 2;
  static constexpr int smem_bytes = stages * stage_bytes + 1024; // + alignment slack
  static_assert(BN == 128 || BN == 256, "cufuse: wgmma tiles are 128 or 256 columns wide");
};

template <int N, class T>
CUFUSE_DEVICE_FN void wgmma_m64k16(float (&d)[N / 2], std::uint64_t da, std::uint64_t db);

// One wgmma.mma_async per (N, type): the accumulator operand list is spelled out because
// inline PTX takes registers one by one. scale-d is a predicate set from an input (always 1:
// accumulate; the accumulators start at zero).
#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
#define CUFUSE_WGMMA_M64N128K16(T, PTX_TYPE)                                                       \
  template <>                                                                                      \
  CUFUSE_DEVICE_FN void wgmma_m64k16<128, T>(float(&d)[64], std::uint64_t da, std::uint64_t db) {  \
    asm volatile(                                                                                  \
        "{\n.reg .pred p;\nsetp.ne.b32 p, %66, 0;\n"                                               \
        "wgmma.mma_async.sync.aligned.m64n128k16.f32." PTX_TYPE "." PTX_TYPE " "                   \
        "{%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18, "   \
        "%19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31, %32, %33, %34, %35, "    \
        "%36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47, %48, %49, %50, %51, %52, "    \
        "%53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63}, %64, %65, p, 1, 1, 0, 0;\n}\n"    \
        : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]),      \
          "+f"(d[7]), "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]),  \
          "+f"(d[14]), "+f"(d[15]), "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]),            \
          "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]), "+f"(d[24]), "+f"(d[25]),            \
          "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31]),            \
          "+f"(d[32]), "+f"(d[33]), "+f"(d[34]), "+f"(d[35]), "+f"(d[36]), "+f"(d[37]),            \
          "+f"(d[38]), "+f"(d[39]), "+f"(d[40]), "+f"(d[41]), "+f"(d[42]), "+f"(d[43]),            \
          "+f"(d[44]), "+f"(d[45]), "+f"(d[46]), "+f"(d[47]), "+f"(d[48]), "+f"(d[49]),            \
          "+f"(d[50]), "+f"(d[51]), "+f"(d[52]), "+f"(d[53]), "+f"(d[54]), "+f"(d[55]),            \
          "+f"(d[56]), "+f"(d[57]), "+f"(d[58]), "+f"(d[59]), "+f"(d[60]), "+f"(d[61]),            \
          "+f"(d[62]), "+f"(d[63])                                                                 \
        : "l"(da), "l"(db), "r"(1));                                                               \
  }
#define CUFUSE_WGMMA_M64N256K16(T, PTX_TYPE)                                                       \
  template <>                                                                                      \
  CUFUSE_DEVICE_FN void wgmma_m64k16<256, T>(float(&d)[128], std::uint64_t da, std::uint64_t db) { \
    asm volatile(                                                                                  \
        "{\n.reg .pred p;\nsetp.ne.b32 p, %130, 0;\n"                                              \
        "wgmma.mma_async.sync.aligned.m64n256k16.f32." PTX_TYPE "." PTX_TYPE " "                   \
        "{%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18, "   \
        "%19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31, %32, %33, %34, %35, "    \
        "%36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47, %48, %49, %50, %51, %52, "    \
        "%53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63, %64, %65, %66, %67, %68, %69, "    \
        "%70, %71, %72, %73, %74, %75, %76, %77, %78, %79, %80, %81, %82, %83, %84, %85, %86, "    \
        "%87, %88, %89, %90, %91, %92, %93, %94, %95, %96, %97, %98, %99, %100, %101, %102, "      \
        "%103, %104, %105, %106, %107, %108, %109, %110, %111, %112, %113, %114, %115, %116, "     \
        "%117, %118, %119, %120, %121, %122, %123, %124, %125, %126, %127}, %128, %129, p, 1, 1, " \
        "0, 0;\n}\n"                                                                               \
        : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]),      \
          "+f"(d[7]), "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]),  \
          "+f"(d[14]), "+f"(d[15]), "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]),            \
          "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]), "+f"(d[24]), "+f"(d[25]),            \
          "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31]),            \
          "+f"(d[32]), "+f"(d[33]), "+f"(d[34]), "+f"(d[35]), "+f"(d[36]), "+f"(d[37]),            \
          "+f"(d[38]), "+f"(d[39]), "+f"(d[40]), "+f"(d[41]), "+f"(d[42]), "+f"(d[43]),            \
          "+f"(d[44]), "+f"(d[45]), "+f"(d[46]), "+f"(d[47]), "+f"(d[48]), "+f"(d[49]),            \
          "+f"(d[50]), "+f"(d[51]), "+f"(d[52]), "+f"(d[53]), "+f"(d[54]), "+f"(d[55]),            \
          "+f"(d[56]), "+f"(d[57]), "+f"(d[58]), "+f"(d[59]), "+f"(d[60]), "+f"(d[61]),            \
          "+f"(d[62]), "+f"(d[63]), "+f"(d[64]), "+f"(d[65]), "+f"(d[66]), "+f"(d[67]),            \
          "+f"(d[68]), "+f"(d[69]), "+f"(d[70]), "+f"(d[71]), "+f"(d[72]), "+f"(d[73]),            \
          "+f"(d[74]), "+f"(d[75]), "+f"(d[76]), "+f"(d[77]), "+f"(d[78]), "+f"(d[79]),            \
          "+f"(d[80]), "+f"(d[81]), "+f"(d[82]), "+f"(d[83]), "+f"(d[84]), "+f"(d[85]),            \
          "+f"(d[86]), "+f"(d[87]), "+f"(d[88]), "+f"(d[89]), "+f"(d[90]), "+f"(d[91]),            \
          "+f"(d[92]), "+f"(d[93]), "+f"(d[94]), "+f"(d[95]), "+f"(d[96]), "+f"(d[97]),            \
          "+f"(d[98]), "+f"(d[99]), "+f"(d[100]), "+f"(d[101]), "+f"(d[102]), "+f"(d[103]),        \
          "+f"(d[104]), "+f"(d[105]), "+f"(d[106]), "+f"(d[107]), "+f"(d[108]), "+f"(d[109]),      \
          "+f"(d[110]), "+f"(d[111]), "+f"(d[112]), "+f"(d[113]), "+f"(d[114]), "+f"(d[115]),      \
          "+f"(d[116]), "+f"(d[117]), "+f"(d[118]), "+f"(d[119]), "+f"(d[120]), "+f"(d[121]),      \
          "+f"(d[122]), "+f"(d[123]), "+f"(d[124]), "+f"(d[125]), "+f"(d[126]), "+f"(d[127])       \
        : "l"(da), "l"(db), "r"(1));                                                               \
  }
CUFUSE_WGMMA_M64N128K16(__half, "f16")
CUFUSE_WGMMA_M64N128K16(__nv_bfloat16, "bf16")
CUFUSE_WGMMA_M64N256K16(__half, "f16")
CUFUSE_WGMMA_M64N256K16(__nv_bfloat16, "bf16")
#undef CUFUSE_WGMMA_M64N128K16
#undef CUFUSE_WGMMA_M64N256K16
#endif

/// Descriptor of a K-major, 128-byte-swizzled operand tile starting at shared address `addr`.
CUFUSE_DEVICE_FN std::uint64_t wgmma_desc(unsigned addr) {
  return std::uint64_t((addr & 0x3FFFF) >> 4) | (std::uint64_t(1) << 16) |
         (std::uint64_t(1024 >> 4) << 32) | (std::uint64_t(1) << 62);
}

template <class Cfg, bool TA, bool TB, class Epi>
__global__ void __launch_bounds__(Cfg::threads) wgmma_gemm_kernel(gemm_args p) {
#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
  static_assert(!TA && TB, "cufuse: wgmma variants take A as M x K and B as N x K");
  using T = typename Cfg::element;
  constexpr int BM = Cfg::BM, BN = Cfg::BN, BK = Cfg::BK, S = Cfg::stages;
  extern __shared__ unsigned char wgmma_smem_raw[];
  // Swizzle atoms must start on 1024-byte boundaries.
  unsigned char* base = reinterpret_cast<unsigned char*>(
      (reinterpret_cast<std::uintptr_t>(wgmma_smem_raw) + 1023) & ~std::uintptr_t(1023));
  T* sa = reinterpret_cast<T*>(base); // [S][BM][BK]
  T* sb = sa + S * BM * BK;           // [S][BN][BK]

  const block_work w = locate_block<BM, BN, int(sizeof(T)), 2>(p);
  const T* a = reinterpret_cast<const T*>(w.a);
  const T* b = reinterpret_cast<const T*>(w.b);
  const int tid = static_cast<int>(threadIdx.x);
  const int wg = tid / 128;

  float acc[BN / 2];
  CUFUSE_UNROLL
  for (int i = 0; i < BN / 2; ++i) {
    acc[i] = 0.0f;
  }
  const int tiles = w.k_end > w.k_begin ? (w.k_end - w.k_begin + BK - 1) / BK : 0;
  auto load_stage = [&](int t) {
    const int st = t % S;
    const int k0 = w.k_begin + t * BK;
    mma_load_tile<Cfg, BM, true>(sa + st * BM * BK, a, p.lda, w.m0, k0, p.m, w.k_end, tid);
    mma_load_tile<Cfg, BN, true>(sb + st * BN * BK, b, p.ldb, w.n0, k0, p.n, w.k_end, tid);
  };
  // Pipeline: loads run S - 2 tiles ahead; one tile's wgmma group stays in flight while the
  // next is issued (wait_group 1), so a stage is refilled only after every warpgroup's MMAs on
  // it completed, which the barrier at the top of the iteration guarantees.
  static_assert(S >= 3, "cufuse: wgmma pipeline needs at least 3 stages");
  CUFUSE_UNROLL
  for (int s = 0; s < S - 2; ++s) {
    if (s < tiles) {
      load_stage(s);
    }
    cp_async_commit();
  }
  for (int t = 0; t < tiles; ++t) {
    cp_async_wait<S - 3>();
    // cp.async wrote through the generic proxy; wgmma reads through the async proxy.
    asm volatile("fence.proxy.async.shared::cta;\n" ::: "memory");
    __syncthreads();
    if (t + S - 2 < tiles) {
      load_stage(t + S - 2); // the stage of tile t - 2, whose MMAs all completed
    }
    cp_async_commit();
    const unsigned a_addr = smem_addr(sa + (t % S) * BM * BK + wg * 64 * BK);
    const unsigned b_addr = smem_addr(sb + (t % S) * BN * BK);
    asm volatile("wgmma.fence.sync.aligned;\n" ::: "memory");
    CUFUSE_UNROLL
    for (int ks = 0; ks < BK / 16; ++ks) {
      wgmma_m64k16<BN, T>(acc, wgmma_desc(a_addr + ks * 32), wgmma_desc(b_addr + ks * 32));
    }
    asm volatile("wgmma.commit_group.sync.aligned;\n" ::: "memory");
    asm volatile("wgmma.wait_group.sync.aligned 1;\n" ::: "memory");
  }
  asm volatile("wgmma.wait_group.sync.aligned 0;\n" ::: "memory");
  cp_async_wait<0>();

  const int lane = tid & 31, warp = (tid % 128) / 32;
  const int g = lane >> 2, q = lane & 3;
  const std::int64_t row = w.m0 + wg * 64 + warp * 16 + g;
  CUFUSE_UNROLL
  for (int j = 0; j < BN / 8; ++j) {
    const int col = w.n0 + j * 8 + 2 * q;
    const float lo[2] = {acc[j * 4 + 0], acc[j * 4 + 1]};
    const float hi[2] = {acc[j * 4 + 2], acc[j * 4 + 3]};
    store_group<2>(p, w.c, row, col, lo, w.vec_ok, Epi{});
    store_group<2>(p, w.c, row + 8, col, hi, w.vec_ok, Epi{});
  }
#else
  __trap(); // never launched: the host checks the kernel's binary architecture first
#endif
}

} // namespace cufuse::gemm_detail
