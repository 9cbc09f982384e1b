/// \file The Hopper (sm_90a) GEMM kernel: TMA loads into a multi-stage shared-memory ring,
/// driven by a producer warp, and warpgroup MMAs issued by one or two consumer warpgroups that
/// read both operands from shared memory through matrix descriptors (mainloop/wgmma.cuh); the
/// consumers' stores through the epilogue interface, via shared memory and TMA or direct
/// (epilogue/wgmma_store.cuh); persistent blocks that walk the tiles of every batch
/// (`persistent_tiles`, tile.cuh). The TF32 mma.sync kernel whose stages a producer warpgroup
/// fills by TMA is kernel/mma_tma.cuh. Compiled only for sm_90a (src/CMakeLists.txt).
#pragma once

#include "../epilogue/wgmma_store.cuh"
#include "../mainloop/wgmma.cuh"

namespace cufuse::gemm_detail {

/// C = epilogue(op(A) op(B)) (the standard epilogue: alpha * op(A) op(B) + beta * C). TA: A is
/// stored K x M (M-major); TB: B is stored N x K (K-major). `map_a` / `map_b` describe A and B
/// as stored (3-D: inner, outer, batch), `map_c` C when `p.epi_tma`. TF32 reads B K-major only;
/// an M-major TF32 A (layout TT) goes through registers. SwapC: the kernel computes
/// C^T = op(B)^T op(A)^T, i.e. the host passed B as A and A as B with m and n exchanged (layout
/// NN on TF32 becomes TT), and C is written transposed.
template <class Cfg, bool TA, bool TB, class Epi, bool SwapC = false>
__global__ void __launch_bounds__(Cfg::threads, Cfg::min_blocks)
    wgmma_gemm_kernel(const __grid_constant__ CUtensorMap map_a,
                      const __grid_constant__ CUtensorMap map_b,
                      const __grid_constant__ CUtensorMap map_c, gemm_args p, const Epi epi) {
#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
  constexpr bool a_mn = TA;  // A stored K x M: M-major tiles
  constexpr bool b_mn = !TB; // B stored K x N: N-major tiles
  using mainloop = wgmma_mainloop<Cfg, a_mn, b_mn>;
  static_assert(!SwapC || mainloop::RS, "cufuse: SwapC is the TF32 NN form (A M-major)");
  extern __shared__ unsigned char wgmma_smem_raw[];
  const auto sm = wgmma_smem<Cfg>::at(wgmma_smem_raw);
  const int tid = static_cast<int>(threadIdx.x);
  const persistent_tiles<Cfg::BM, Cfg::BN> sched(p);
  const int ktiles = (p.k + Cfg::BK - 1) / Cfg::BK;
  sm.init_barriers(tid);

  if (tid < 128) {
    // Producer warpgroup: gives registers back to the consumers; one thread issues every copy.
    if constexpr (Cfg::consumers == 2) {
      setmaxnreg_dec<Cfg::producer_regs>();
    }
    if (tid == 0) {
      wgmma_produce<Cfg, a_mn, b_mn>(sm, &map_a, &map_b, p, sched, ktiles);
    }
    return;
  }

  if constexpr (Cfg::consumers == 2) {
    setmaxnreg_inc<Cfg::consumer_regs>();
  }
  constexpr bool PP = Cfg::pingpong;
  const mainloop ml{sm, wgmma_thread<Cfg, mainloop::RS>(tid)};
  const int cw = ml.th.cw;
  wgmma_tma_store<Cfg, mainloop::RS, SwapC, Epi> tma_out(sm, ml.th, p, &map_c, epi);
  // Ping-pong: warpgroup cw takes the block's tiles i = cw, cw + 2, ...; named barrier 1 + cw
  // opens its main loop once the other warpgroup has issued its previous tile's MMAs, which
  // also keeps every slot it waits on at most one phase ahead.
  const int step = PP ? 2 : 1;
  int i = PP ? cw : 0; // the block's tile counter
  int it = 0;          // K tiles consumed (ring slot and phase)
  for (int tile = sched.first(i); tile < sched.work; tile = sched.next(tile, step), i += step) {
    const int batch = sched.batch_of(tile);
    const block_work w = sched.template at<int(sizeof(typename Cfg::element))>(p, tile, batch);
    const int bc = p.stride_c != 0 ? batch : 0;
    const Epi eb = epi.at_batch(batch);
    tma_out.prefetch_c(w, bc);
    if constexpr (PP) {
      it = i * ktiles;
      if (i > 0) {
        named_bar_sync<256>(1 + cw);
      }
    }
    float acc[Cfg::m_atoms][Cfg::BN / 2];
    ml.run(acc, ktiles, it);
    if constexpr (PP) {
      if (sched.next(tile, 1) < sched.work) {
        named_bar_arrive<256>(2 - cw); // the other may start
      }
    }
    ml.drain(ktiles, it);
    if (p.epi_tma) {
      tma_out.store(acc, w, bc, eb);
    } else {
      wgmma_store_direct<Cfg, mainloop::RS, SwapC>(acc, p, w, ml.th, eb);
    }
  }
  tma_out.finish();
#else
  (void)map_a;
  (void)map_b;
  (void)map_c;
  (void)p;
  (void)epi;
  __trap(); // never launched: the host checks the kernel's binary architecture first
#endif
}

} // namespace cufuse::gemm_detail
