/// \file The Hopper (sm_90a) GEMM kernel: TMA loads into a multi-stage shared-memory ring,
/// driven by a producer warp, and warpgroup MMAs issued by one or two consumer warpgroups that
/// read both operands from shared memory through matrix descriptors (mainloop/wgmma.cuh); the
/// consumers' stores through the epilogue interface, via shared memory and TMA or direct
/// (epilogue/wgmma_store.cuh); persistent blocks that walk the tiles of every batch
/// (`persistent_tiles`, tile.cuh), and under split-K each K range of each tile (the partial tiles
/// go to the fp32 workspace, the last split of a tile sums them: epilogue/split_k.cuh), or under
/// cluster split-K each tile by the blocks of a cluster (`cluster_reduce`). The TF32
/// mma.sync kernel whose stages a producer warpgroup fills by TMA is kernel/mma_tma.cuh. Compiled
/// only for sm_90a (src/CMakeLists.txt).
#pragma once

#include "../../core/pdl.cuh"
#include "../epilogue/split_k.cuh"
#include "../epilogue/wgmma_store.cuh"
#include "../mainloop/wgmma.cuh"

#include <type_traits>

namespace cufuse::gemm_detail {

/// Cluster split-K, after the tile's main loop (a cluster takes exactly one tile: the launch
/// makes one cluster per tile, so the producer thread never waits here with loads of a next
/// tile still to issue): every block but block 0 (rank 0) puts its partial accumulators in its
/// shared memory; after a cluster barrier block 0 adds them to its own in rank order (the same
/// sum whichever block finishes first); after a second one the others may exit (their shared
/// memory was read). Returns whether this thread holds the tile's sum (block 0). Run by the
/// consumer threads (`ct` 0 .. CT - 1); the producer thread joins the two barriers after its
/// loads (`cluster_reduce_producer`).
template <class Cfg, int MA, int NB>
CUFUSE_DEVICE_FN bool cluster_reduce(const wgmma_smem<Cfg>& sm, float (&acc2)[MA][NB], int rank,
                                     int ct) {
  constexpr int CT = 128 * Cfg::consumers, N = MA * NB;
  static_assert(N % 4 == 0 && N * CT == Cfg::partial_floats, "cufuse: partial tile layout");
  const auto acc = [&](int e) -> float& { return acc2[e / NB][e % NB]; };
  const unsigned mine = sm.partial() + unsigned(ct) * 16u;
  if (rank != 0) {
    CUFUSE_UNROLL
    for (int j = 0; j < N / 4; ++j) {
      st_shared_f32x4(mine + unsigned(j * CT) * 16u, acc(4 * j), acc(4 * j + 1), acc(4 * j + 2),
                      acc(4 * j + 3));
    }
  }
  cluster_barrier(); // every block's partial is in its shared memory
  if (rank == 0) {
    CUFUSE_UNROLL
    for (int r = 1; r < Cfg::splits; ++r) {
      const unsigned theirs = cluster_map(mine, unsigned(r));
      CUFUSE_UNROLL
      for (int j = 0; j < N / 4; ++j) {
        const float4 v = ld_cluster_f32x4(theirs + unsigned(j * CT) * 16u);
        acc(4 * j) += v.x;
        acc(4 * j + 1) += v.y;
        acc(4 * j + 2) += v.z;
        acc(4 * j + 3) += v.w;
      }
    }
  }
  cluster_barrier(); // block 0 has read them
  return rank == 0;
}

/// The producer thread's part of cluster_reduce, after its loads (the other producer threads
/// have exited, which releases them from cluster barriers).
CUFUSE_DEVICE_FN void cluster_reduce_producer() {
  cluster_barrier();
  cluster_barrier();
}

/// Calls f(std::bool_constant<AMn>, std::bool_constant<BMn>) for the run-time layout
/// `2 * trans_a + trans_b` (gemm_args::layout): A stored K x M is M-major, B stored K x N
/// N-major.
template <class F>
CUFUSE_DEVICE_FN void with_layout(int layout, F&& f) {
  switch (layout) {
  case 0: // NN: A K-major, B N-major
    f(std::false_type{}, std::true_type{});
    break;
  case 1: // NT
    f(std::false_type{}, std::false_type{});
    break;
  case 2: // TN
    f(std::true_type{}, std::true_type{});
    break;
  default: // TT
    f(std::true_type{}, std::false_type{});
    break;
  }
}

/// Whether the kernel starts its accumulators at the epilogue's bias (expression_epilogue::
/// folds_bias): not under split-K (each partial would add it) nor SwapC (a bias along C's
/// columns lies along the MMA rows there).
template <class Cfg, class Epi, bool SwapC>
inline constexpr bool folds_bias_v = [] {
  if constexpr (requires { Epi::folds_bias; }) {
    return Epi::folds_bias && Cfg::splits == 1 && !SwapC;
  } else {
    return false;
  }
}();

/// The epilogue the kernel's stores run when it folds the bias (folds_bias_v), else Epi.
template <class Epi>
struct folded_epilogue {
  using type = Epi;
};
template <class Epi>
  requires requires { typename Epi::folded_type; }
struct folded_epilogue<Epi> {
  using type = typename Epi::folded_type;
};
template <class Epi>
using folded_epilogue_t = typename folded_epilogue<Epi>::type;

/// What the kernel holds of the bias between tiles when it folds it: the epilogue's
/// bias_pairs of the fragment's BN / 8 columns; else nothing.
struct no_bias_pairs {};
template <class Epi, int NP, bool Fold>
struct bias_pairs_of {
  using type = no_bias_pairs;
};
template <class Epi, int NP>
struct bias_pairs_of<Epi, NP, true> {
  using type = typename Epi::template bias_pairs<NP>;
};

/// The accumulators set to the bias pairs `b` (bias_pairs) of their columns (n0 + 8 j + 2 q +
/// e % 2, wgmma_thread).
template <class Cfg, class B>
CUFUSE_DEVICE_FN void acc_from_bias(float (&acc)[Cfg::m_atoms][Cfg::BN / 2], const B& b) {
  CUFUSE_UNROLL
  for (int j = 0; j < Cfg::BN / 8; ++j) {
    float b0, b1;
    b.at(j, b0, b1);
    // Each accumulator its own register, by a move the compiler keeps: where two held one
    // value, ptxas copied it apart inside the MMA pipeline and serialized every MMA of the
    // kernel (its warning C7515).
    CUFUSE_UNROLL
    for (int ma = 0; ma < Cfg::m_atoms; ++ma) {
      asm volatile("mov.b32 %0, %1;" : "=f"(acc[ma][4 * j]) : "f"(b0));
      asm volatile("mov.b32 %0, %1;" : "=f"(acc[ma][4 * j + 1]) : "f"(b1));
      asm volatile("mov.b32 %0, %1;" : "=f"(acc[ma][4 * j + 2]) : "f"(b0));
      asm volatile("mov.b32 %0, %1;" : "=f"(acc[ma][4 * j + 3]) : "f"(b1));
    }
  }
}

/// C = epilogue(op(A) op(B)) (the standard epilogue: alpha * op(A) op(B) + beta * C). TA: A is
/// stored K x M (M-major); TB: B is stored N x K (K-major). `map_a` / `map_b` describe A and B
/// as stored (3-D: inner, outer, batch), `map_c` C when `p.epi_tma`, `map_x` an expression
/// epilogue's staged operand when `p.epi_operand` (laid out as C). TF32 reads B K-major only;
/// an M-major TF32 A (layout TT) goes through registers. SwapC: the kernel computes
/// C^T = op(B)^T op(A)^T, i.e. the host passed B as A and A as B with m and n exchanged (layout
/// NN on TF32 becomes TT), and C is written transposed. AnyLayout (16-bit inputs): TA and TB
/// are not used; the kernel runs the layout `p.layout` names, with a main loop and a producer
/// for each of the four and one epilogue (expression epilogues: their stores are most of a
/// kernel's code and compile time, and do not depend on the layout).
template <class Cfg, bool TA, bool TB, class Epi, bool SwapC = false, bool AnyLayout = false>
__global__ void __launch_bounds__(Cfg::threads, Cfg::min_blocks)
    wgmma_gemm_kernel(const __grid_constant__ CUtensorMap map_a,
                      const __grid_constant__ CUtensorMap map_b,
                      const __grid_constant__ CUtensorMap map_c,
                      const __grid_constant__ CUtensorMap map_x, gemm_args p, const Epi epi) {
#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
  constexpr bool a_mn = TA;  // A stored K x M: M-major tiles
  constexpr bool b_mn = !TB; // B stored K x N: N-major tiles
  using mainloop = wgmma_mainloop<Cfg, a_mn, b_mn>;
  static_assert(!SwapC || mainloop::RS, "cufuse: SwapC is the TF32 NN form (A M-major)");
  static_assert(!AnyLayout || (!Cfg::tf32 && !TA && !TB && !SwapC),
                "cufuse: the run-time layout form is for 16-bit inputs (no register-A path)");
  extern __shared__ unsigned char wgmma_smem_raw[];
  const auto sm = wgmma_smem<Cfg>::at(wgmma_smem_raw);
  const int tid = static_cast<int>(threadIdx.x);
  using sched_t = std::conditional_t<Cfg::cluster_k, cluster_tiles<Cfg::BM, Cfg::BN, Cfg::splits>,
                                     persistent_tiles<Cfg::BM, Cfg::BN>>;
  const sched_t sched(p);
  sm.init_barriers(tid);
  // A programmatic dependent launch (launch_wgmma): the setup above ran while the kernel before
  // finished; every global access comes after this wait, in every block (core/pdl.cuh).
  detail::pdl_wait();
  detail::pdl_release(); // the next kernel may set itself up as this one's blocks finish

  if (tid < 128) {
    // Producer warpgroup: gives registers back to the consumers; one thread issues every copy.
    if constexpr (Cfg::moves_registers) {
      setmaxnreg_dec<Cfg::producer_regs>();
    }
    if (tid == 0) {
      if constexpr (AnyLayout) {
        with_layout(p.layout, [&](auto amn, auto bmn) {
          constexpr bool am = decltype(amn)::value, bm = decltype(bmn)::value;
          wgmma_produce<Cfg, am, bm>(sm, &map_a, &map_b, p, sched);
        });
      } else {
        wgmma_produce<Cfg, a_mn, b_mn>(sm, &map_a, &map_b, p, sched);
      }
      if constexpr (Cfg::cluster_k) {
        cluster_reduce_producer();
      }
    }
    return;
  }

  if constexpr (Cfg::moves_registers) {
    setmaxnreg_inc<Cfg::consumer_regs>();
  }
  constexpr bool PP = Cfg::pingpong;
  const mainloop ml{sm, wgmma_thread<Cfg, mainloop::RS>(tid)};
  const int cw = ml.th.cw;
  // With folds_bias the stores run the epilogue without its `acc + b` (the accumulators start
  // at b); otherwise EpiK is Epi.
  constexpr bool fold = folds_bias_v<Cfg, Epi, SwapC>;
  using EpiK = std::conditional_t<fold, folded_epilogue_t<Epi>, Epi>;
  const auto kernel_epi = [&](const Epi& e) -> EpiK {
    if constexpr (fold) {
      return e.folded();
    } else {
      return e;
    }
  };
  wgmma_tma_store<Cfg, mainloop::RS, SwapC, EpiK> tma_out(sm, ml.th, p, &map_c, &map_x,
                                                          kernel_epi(epi));
  // Ping-pong: warpgroup cw takes the block's tiles i = cw, cw + 2, ...; named barrier 1 + cw
  // opens its main loop once the other warpgroup has issued its previous tile's MMAs, which
  // also keeps every slot it waits on at most one phase ahead. (Ping-pong tiles have no
  // split-K, so every tile has the same K tiles.)
  const int step = PP ? 2 : 1;
  // Split-K: each work item is one K range of a tile, written to the workspace as a partial
  // tile (`q`: the workspace as C); the last split of the tile sums the partials, applies the
  // epilogue and writes C (splitk_finish, over the consumer threads: the producer has left).
  const bool split = Cfg::splits > 1 && !Cfg::cluster_k && p.ws != nullptr;
  const gemm_args q = split ? split_partial_args(p, SwapC ? p.m : p.n) : p;
  // folds_bias: the bias pairs of the warpgroup's next tile (a rank-1 bias does not move with
  // the batch), loaded while the current tile's last MMAs run.
  typename bias_pairs_of<Epi, Cfg::BN / 8, fold>::type bias;
  bool bias_next = false;
  int i = PP ? cw : 0; // the block's item counter
  int it = 0;          // K tiles consumed (ring slot and phase)
  for (int item = sched.first(i); item < sched.work; item = sched.next(item, step), i += step) {
    const int plane = sched.plane_of(item);
    const block_work w = sched.template at<int(sizeof(typename Cfg::element))>(p, item, plane);
    const int ktiles = w.k_tiles<Cfg::BK>();
    const int bc = p.stride_c != 0 ? w.batch : 0;
    const EpiK eb = kernel_epi(epi.at_batch(w.batch));
    float acc[Cfg::m_atoms][Cfg::BN / 2];
    if constexpr (fold) {
      if (!bias_next) { // the warpgroup's first tile
        bias.load(epi, w.n0, ml.th.q, p.n);
      }
      acc_from_bias<Cfg>(acc, bias);
    }
    if constexpr (Cfg::cluster_k) {
      if (sched.rank == 0) { // the other blocks of the cluster store nothing
        tma_out.prefetch_c(w, bc);
      }
    } else {
      tma_out.prefetch_c(w, bc);
    }
    if constexpr (PP) {
      it = i * ktiles;
      if (i > 0) {
        named_bar_sync<256>(1 + cw);
      }
    }
    if constexpr (AnyLayout) {
      with_layout(p.layout, [&](auto amn, auto bmn) {
        constexpr bool am = decltype(amn)::value, bm = decltype(bmn)::value;
        wgmma_mainloop<Cfg, am, bm>{sm, ml.th}.template run<!fold>(acc, ktiles, it);
      });
    } else {
      ml.template run<!fold>(acc, ktiles, it);
    }
    if constexpr (PP) {
      if (sched.next(item, 1) < sched.work) {
        named_bar_arrive<256>(2 - cw); // the other may start
      }
    }
    // An expression epilogue's row-invariant operands (a bias), read while the last MMAs run.
    const auto pre = tma_out.preload(w, eb);
    if constexpr (fold) {
      const int nx = sched.next(item, step);
      bias_next = nx < sched.work;
      if (bias_next) {
        const block_work wn =
            sched.template at<int(sizeof(typename Cfg::element))>(p, nx, sched.plane_of(nx));
        bias.load(epi, wn.n0, ml.th.q, p.n);
      }
    }
    ml.drain(ktiles, it);
    if constexpr (Cfg::cluster_k) {
      if (!cluster_reduce<Cfg>(sm, acc, sched.rank, tid - 128)) {
        continue;
      }
    }
    if constexpr (Cfg::splits > 1 && !Cfg::cluster_k && !tma_store_only<Epi>) {
      if (split) {
        const block_work wq = sched.template at<int(sizeof(typename Cfg::element))>(q, item, plane);
        wgmma_store_direct<Cfg, mainloop::RS, SwapC, float>(acc, q, wq, ml.th, identity_epilogue{});
        gemm_args rc = p; // C as stored
        if constexpr (SwapC) {
          rc.m = p.n;
          rc.n = p.m;
        }
        constexpr int CM = SwapC ? Cfg::BN : Cfg::BM, CN = SwapC ? Cfg::BM : Cfg::BN;
        constexpr int consumer_threads = 128 * Cfg::consumers;
        splitk_finish<CM, CN, consumer_threads, 4, Cfg::splits>(
            rc, SwapC ? w.n0 : w.m0, SwapC ? w.m0 : w.n0, epi, tid - 128, w.batch,
            sched.tile_of(item, plane), [] { named_bar_sync<consumer_threads>(5); });
        continue;
      }
    }
    if constexpr (tma_store_only<Epi>) {
      tma_out.store(acc, w, bc, eb, pre); // the host launches it where C suits TMA
    } else if (p.epi_tma) {
      tma_out.store(acc, w, bc, eb, pre);
    } else {
      wgmma_store_direct<Cfg, mainloop::RS, SwapC, epi_out_t<EpiK>>(acc, p, w, ml.th, eb);
    }
  }
  tma_out.finish();
#else
  (void)map_a;
  (void)map_b;
  (void)map_c;
  (void)map_x;
  (void)p;
  (void)epi;
  __trap(); // never launched: the host checks the kernel's binary architecture first
#endif
}

} // namespace cufuse::gemm_detail
