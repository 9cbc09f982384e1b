/// \file TF32 mma.sync with its stages filled by TMA from a producer warpgroup (sm_90a).
#pragma once

#include "../arch/sm90.cuh"
#include "mma.cuh"

namespace cufuse::gemm_detail {

/// The shared memory of a TMA-fed mma.sync block, placed on a 1024-byte boundary (the swizzle's
/// period): the stage ring, then the `full` / `empty` mbarrier of every stage.
template <int S, int AElems, int BElems>
struct mma_tma_storage {
  stage_ring<float, S, AElems, BElems> ring;
  std::uint64_t full[S];
  std::uint64_t empty[S];
};

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
                        const __grid_constant__ CUtensorMap map_b, gemm_args p, const Epi epi) {
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
  constexpr int producer_regs = 24, mma_regs = mma_warps == 8 ? 240 : 232;
  constexpr int a_elems = BM * BK, b_elems = BN * BK;
  constexpr unsigned a_stage = a_elems * 4, b_stage = b_elems * 4;
  constexpr int box_bytes = 32 * BK * 4; // one 32-row box of an M-major A
  extern __shared__ unsigned char mma_tma_smem_raw[];
  // The ring starts on a 1024-byte boundary. An offset into the shared array (not an integer
  // cast), so that the fragment reads through `sa` stay LDS: through a pointer rebuilt from an
  // integer, ptxas emitted generic loads with 64-bit addresses (TF32 NN 4096^3: 237 TFLOP/s).
  unsigned char* base =
      mma_tma_smem_raw + ((1024u - (smem_addr(mma_tma_smem_raw) & 1023u)) & 1023u);
  using storage = mma_tma_storage<S, a_elems, b_elems>;
  static_assert(sizeof(storage) + 1024 <= Cfg::smem_bytes,
                "cufuse: TMA mma stages and barriers overflow the shared memory");
  storage& st = *reinterpret_cast<storage*>(base);
  T* sa = st.ring.a[0];
  T* sb = st.ring.b[0];
  const unsigned s_a = smem_addr(base);
  const unsigned s_b = s_a + unsigned(offsetof(storage, ring) + offsetof(decltype(st.ring), b));
  const unsigned bars = s_a + unsigned(offsetof(storage, full));
  auto full = [&](int s) { return bars + 8u * unsigned(s); };
  auto empty = [&](int s) {
    return bars + unsigned(offsetof(storage, empty) - offsetof(storage, full)) + 8u * unsigned(s);
  };

  const int tid = static_cast<int>(threadIdx.x);
  if (tid == 0) {
    for (int s = 0; s < S; ++s) {
      mbar_init(full(s), 1);          // the producer's expect_tx arrival
      mbar_init(empty(s), mma_warps); // one arrival per mma warp
    }
    fence_mbarrier_init();
    fence_async_shared();
  }
  __syncthreads();

  const block_work w = locate_block<BM, BN, 4, 2>(p);
  const int tiles = w.k_tiles<BK>();
  if (tid < 128) { // producer warpgroup
    setmaxnreg_dec<producer_regs>();
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
  setmaxnreg_inc<mma_regs>();

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
  mma_epilogue<Cfg, TA, TB, Swap>(acc, base, p, p, w, epi, mtid, 1);
#else
  (void)map_a;
  (void)map_b;
  (void)p;
  (void)epi;
  __trap(); // never launched: the host checks the kernel's binary architecture first
#endif
}

} // namespace cufuse::gemm_detail
