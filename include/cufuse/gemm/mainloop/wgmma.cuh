/// \file The wgmma main loop (sm_90a): the tile configuration, its typed shared storage, where a
/// consumer thread's accumulators sit, the producer that fills the ring by TMA, and the consumer
/// main loop that issues warpgroup MMAs (`wgmma.mma_async`) on it.
///
/// Warp specialization: the producer (one thread of warpgroup 0), for each K tile, waits until
/// its ring slot is free (`empty` mbarrier), announces the slot's byte count on its `full`
/// mbarrier and issues the TMA copies of the A and B tiles (they complete the transaction on
/// `full`). The consumers (warpgroups 1..) wait on `full`, issue the tile's wgmma group, keep one
/// group in flight, and release the previous tile's slot on `empty` once its MMAs completed.
/// The ring slot and phase follow one K-tile counter `it` that runs on across a block's tiles, so
/// the producer fills the next tile's first slots while the consumers are in the previous tile's
/// epilogue.
///
/// Both operands land in the 128-byte-swizzled layout the descriptors name. A K-major operand
/// (A as M x K, B as N x K) is one TMA box of 128 bytes of K (64 16-bit elements, 32 TF32) x
/// rows; a 16-bit M/N-major operand (A as K x M, B as K x N) is rows/64 boxes of 64
/// M/N-elements x 64 K-rows, and its descriptor sets the transpose bit, so every 16-bit layout
/// (NN, NT, TN, TT) runs here; TF32 reads B K-major only (NT directly, TT with A through
/// registers, NN as C^T = B^T A^T; TN stays on mma.sync). TMA zero-fills whatever lies outside
/// the matrix, so M, N and K tails need no special path.
#pragma once

#include "../arch/cp_async.cuh"
#include "../arch/sm90.cuh"
#include "../tile.cuh"

#include <cstddef>

namespace cufuse::gemm_detail {

/// wgmma tile: BM x BN x BK with `Stages` ring slots; `MinBlocks` blocks share an SM (it
/// bounds the registers per thread).
///  - cooperative (PingPong = false): BM = 64 uses one consumer warpgroup; BM = 128 or 256 use
///    two that split the tile's rows, each owning BM/2 rows as (BM/2)/64 m64 MMAs.
///  - ping-pong (PingPong = true): two consumer warpgroups each own a whole BM x BN tile and
///    take the block's tiles in turn; their main loops alternate (named barriers), so one
///    warpgroup's epilogue runs while the other keeps the tensor cores busy.
/// `Splits_` > 1: split-K; the work items are (tile, K range), each split writes its partial
/// tile to the fp32 workspace and the last of a tile's splits finishes it (kernel/wgmma.cuh).
/// `ClusterK_`: split-K over a thread-block cluster of `Splits_` blocks instead, one cluster per
/// tile, each block a K range; the others' partial tiles reach block 0 through distributed
/// shared memory, and block 0 stores the sum as an unsplit tile does (no workspace, one launch).
template <class T, int BM_, int BN_, int Stages_, int MinBlocks_ = 1, bool PingPong_ = false,
          int Splits_ = 1, bool ClusterK_ = false>
struct wgmma_config {
  using element = T;
  /// One 128-byte swizzled row of K per tile row: 64 16-bit elements or 32 TF32 ones.
  static constexpr int BM = BM_, BN = BN_, BK = 128 / int(sizeof(T)), stages = Stages_;
  static constexpr int min_blocks = MinBlocks_;
  static constexpr bool pingpong = PingPong_;
  static constexpr int splits = Splits_;
  static constexpr bool cluster_k = ClusterK_;
  static constexpr int consumers = (BM == 64 && !pingpong) ? 1 : 2;
  static constexpr int WG = consumers;
  static constexpr int m_atoms = pingpong ? BM / 64 : BM / consumers / 64; // m64 MMAs per K step
  static constexpr int threads = 128 * (consumers + 1);
  /// Registers per thread after setmaxnreg: the producer warpgroup keeps 40, two consumer
  /// warpgroups take 232 each (128 x 40 + 256 x 232 <= 64K registers of an SM). One consumer
  /// warpgroup (BM = 64) keeps the launch's allocation.
  static constexpr int producer_regs = 40, consumer_regs = 232;
  /// Whether the warpgroups move registers (setmaxnreg): two consumer warpgroups of a block
  /// alone on its SM. With two blocks per SM the increase would wait forever for registers the
  /// other block holds, so such tiles keep the launch's allocation.
  static constexpr bool moves_registers = consumers == 2 && min_blocks == 1;
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
  /// Cluster split-K: a block's partial tile, as its consumer threads hold it (float4 j of
  /// thread t at j * consumer threads + t, so that each access is one contiguous warp access).
  static constexpr int partial_floats = cluster_k ? 128 * consumers * m_atoms * BN / 2 : 4;

  /// The block's shared memory, placed on a 1024-byte boundary (swizzle atoms start there; every
  /// part before the barriers is a multiple of 1024 bytes): the ring of A and B tiles, the
  /// epilogue buffers of each consumer warpgroup, and the mbarriers: `full` / `empty` per ring
  /// slot, and one per epilogue buffer (its chunk of C has landed, for epilogues that read C).
  struct shared_storage {
    struct stage {
      unsigned char a[a_bytes];
      unsigned char b[b_bytes];
    };
    stage ring[stages];
    unsigned char epi[consumers][epi_bufs][epi_buf_bytes];
    float partial[partial_floats];
    std::uint64_t full[stages];
    std::uint64_t empty[stages];
    std::uint64_t c_loaded[consumers][epi_bufs];
  };
  /// Dynamic shared memory of a block: the storage, and up to 1024 bytes to align it.
  static constexpr int smem_bytes = int(sizeof(shared_storage)) + 1024;

  static_assert(a_bytes % 1024 == 0 && b_bytes % 1024 == 0 &&
                    offsetof(shared_storage, epi) % 1024 == 0,
                "cufuse: wgmma tiles and epilogue buffers start on 1024-byte boundaries");
  static_assert(m_atoms * BN <= 256, "cufuse: a wgmma consumer holds at most 128 accumulators");
  static_assert(BM == 64 || BM == 128 || BM == 256, "cufuse: wgmma tiles are 64, 128 or 256 rows");
  static_assert(BN == 128 || BN == 256 || (BN == 64 && !tf32),
                "cufuse: wgmma tiles are 128 or 256 columns wide (64 for 16-bit inputs)");
  static_assert(splits == 1 || (!pingpong && splits <= 4),
                "cufuse: wgmma split-K tiles are cooperative, with at most 4 splits (finished in "
                "the kernel)");
  static_assert(!cluster_k || splits >= 2, "cufuse: a cluster split-K tile has 2 to 4 splits");
  static_assert(smem_bytes <= 227 * 1024,
                "cufuse: wgmma tile ring exceeds 227 KiB of shared memory");
  static_assert(min_blocks * (smem_bytes + 1024) <= 228 * 1024,
                "cufuse: wgmma blocks per SM do not fit the SM's 228 KiB of shared memory");
};

/// The shared-memory addresses (as PTX takes them) of the parts of a `Cfg::shared_storage`
/// whose first byte is at `base`.
template <class Cfg>
struct wgmma_smem {
  using storage = typename Cfg::shared_storage;
  unsigned base;

  /// Places the storage on the first 1024-byte boundary of the dynamic shared memory `raw`.
  CUFUSE_DEVICE_FN static wgmma_smem at(unsigned char* raw) {
    unsigned char* aligned = reinterpret_cast<unsigned char*>(
        (reinterpret_cast<std::uintptr_t>(raw) + 1023) & ~std::uintptr_t(1023));
    return wgmma_smem{smem_addr(aligned)};
  }
  CUFUSE_DEVICE_FN unsigned slot_a(int s) const { return base + unsigned(s * Cfg::stage_bytes); }
  CUFUSE_DEVICE_FN unsigned slot_b(int s) const {
    return base + unsigned(s * Cfg::stage_bytes + Cfg::a_bytes);
  }
  /// The epilogue buffers of consumer warpgroup `cw` (its `epi_bufs` follow one another).
  CUFUSE_DEVICE_FN unsigned epi(int cw) const {
    return base + unsigned(offsetof(storage, epi)) +
           unsigned(cw * Cfg::epi_bufs * Cfg::epi_buf_bytes);
  }
  CUFUSE_DEVICE_FN unsigned bars() const { return base + unsigned(offsetof(storage, full)); }
  CUFUSE_DEVICE_FN unsigned full(int s) const { return bars() + 8u * unsigned(s); }
  CUFUSE_DEVICE_FN unsigned empty(int s) const {
    return bars() + unsigned(offsetof(storage, empty) - offsetof(storage, full)) + 8u * unsigned(s);
  }
  CUFUSE_DEVICE_FN unsigned partial() const { return base + unsigned(offsetof(storage, partial)); }
  /// Buffer `b` of all the consumers' buffers (warpgroup cw's are cw * epi_bufs ...).
  CUFUSE_DEVICE_FN unsigned c_loaded(int b) const {
    return bars() + unsigned(offsetof(storage, c_loaded) - offsetof(storage, full)) +
           8u * unsigned(b);
  }

  /// Thread 0 initializes the barriers; then the whole block synchronizes.
  CUFUSE_DEVICE_FN void init_barriers(int tid) const {
    if (tid == 0) {
      for (int s = 0; s < Cfg::stages; ++s) {
        mbar_init(full(s), 1); // the producer's expect_tx arrival
        // One arrival per warp of the warpgroup(s) that consume a slot.
        mbar_init(empty(s), Cfg::pingpong ? 4 : 4 * Cfg::consumers);
      }
      for (int b = 0; b < Cfg::consumers * Cfg::epi_bufs; ++b) {
        mbar_init(c_loaded(b), 1); // the epilogue leader's expect_tx arrival
      }
      fence_mbarrier_init();
      fence_async_shared();
    }
    __syncthreads();
  }
};

/// A consumer thread's place: its warpgroup `cw` (0 or 1), warp, lane and MMA fragment
/// coordinates. Accumulator j * 4 + e of m64 atom `ma` sits at atom row `row_a()` (e < 2) or
/// `row_b()` (e >= 2), column j * 8 + 2q + e % 2.
///
/// `RS` (TF32 with an M-major A, whose fragments come through registers): the thread loads its
/// A fragments from the swizzled tile with 8-byte shared loads, and its fragment rows g and g + 8
/// are mapped to two adjacent tile rows (`rs_row`), which makes each pair one load and spreads a
/// half-warp over all 32 banks; the epilogue follows the same map. Warp w covers rows
/// 32 (w / 2) + 8 (w % 2) + {0..7, 16..23}; lanes 0-15 then read 16-byte chunks {c, c ^ 4} of
/// every K row, all 8 chunks per row.
template <class Cfg, bool RS>
struct wgmma_thread {
  int tid, cw, lane, warp, g, q, rs_row;
  /// RS: the byte offsets of (row rs_row, K row q) and (rs_row, q + 4) in an M-major TF32 tile
  /// of one 64-row MMA (boxes of 32 rows x BK K-rows of 128 bytes, 16-byte chunks XOR-swizzled
  /// with the K row). K step ks reads K rows 8 ks + q (+ 4): the same chunks, 1024 ks bytes on.
  unsigned rs_lo = 0, rs_hi = 0;

  __host__ __device__ __forceinline__ explicit wgmma_thread(int t)
      : tid(t), cw(t / 128 - 1), lane(t & 31), warp((t % 128) / 32), g(lane >> 2), q(lane & 3),
        rs_row(32 * (warp >> 1) + 8 * (warp & 1) + 16 * ((g >> 1) & 1) + 4 * (g >> 2) +
               2 * (g & 1)) {
    if constexpr (RS) {
      const int m = rs_row & 31;
      const auto offset = [&](int kk) {
        return unsigned((rs_row >> 5) * (Cfg::BK * 128) + kk * 128 +
                        ((((m >> 2) ^ (kk & 7)) << 4) | ((m & 3) << 2)));
      };
      rs_lo = offset(q);
      rs_hi = offset(q + 4);
#if defined(__CUDA_ARCH__)
      // Opaque to the compiler, which otherwise recomputed them from the thread index in every K
      // tile (~35 integer instructions per tile, TF32 NN 128x128 -7%; bench/JOURNAL.md g33).
      asm("mov.b32 %0, %0;" : "+r"(rs_lo));
      asm("mov.b32 %0, %0;" : "+r"(rs_hi));
#endif
    }
  }
  __host__ __device__ __forceinline__ int row_a() const { return RS ? rs_row : warp * 16 + g; }
  __host__ __device__ __forceinline__ int row_b() const { return RS ? row_a() + 1 : row_a() + 8; }
  /// This warpgroup's m64 atom `ma` among the tile's, and its first tile row.
  CUFUSE_DEVICE_FN int atom(int ma) const { return (Cfg::pingpong ? 0 : cw) * Cfg::m_atoms + ma; }
  CUFUSE_DEVICE_FN int atom_row(int ma) const { return atom(ma) * 64; }
};

/// The producer: one thread walks the block's work items (`sched`: tiles, and K ranges under
/// split-K; persistent_tiles or cluster_tiles) and loads each one's K tiles into the ring. `AMn` /
/// `BMn`: the operand is stored M- / N-major (boxes of 128 bytes of M/N x BK K-rows); `map_a` /
/// `map_b` describe A and B as stored (3-D: inner, outer, batch).
template <class Cfg, bool AMn, bool BMn, class Sched>
CUFUSE_DEVICE_FN void wgmma_produce(const wgmma_smem<Cfg>& sm, const CUtensorMap* map_a,
                                    const CUtensorMap* map_b, const gemm_args& p,
                                    const Sched& sched) {
  constexpr int BK = Cfg::BK, S = Cfg::stages;
  constexpr int mn_box = BK, mn_box_bytes = BK * 128;
  int it = 0;
  for (int item = sched.first(0); item < sched.work; item = sched.next(item, 1)) {
    const block_work w =
        sched.template at<int(sizeof(typename Cfg::element))>(p, item, sched.plane_of(item));
    const int ba = p.stride_a != 0 ? w.batch : 0;
    const int bb = p.stride_b != 0 ? w.batch : 0;
    const int ktiles = w.k_tiles<BK>();
    // A convolution (p.conv.c != 0, K-major A): the tile's first output pixel (image, row,
    // column) and its window origin in X; each K tile is one filter tap and 64 channels.
    const conv_geometry& cv = p.conv;
    int img = 0, oh = 0, ow = 0;
    if constexpr (!AMn) {
      if (cv.c != 0) {
        const int m0 = int(w.m0);
        img = m0 / cv.pq;
        const int rem = m0 - img * cv.pq, op = rem / cv.q;
        oh = op * cv.sh - cv.ph;
        ow = (rem - op * cv.q) * cv.sw - cv.pw;
      }
    }
    for (int t = 0; t < ktiles; ++t, ++it) {
      const int s = it % S;
      mbar_wait(sm.empty(s), ((it / S) & 1) ^ 1); // first round: passes at once
      mbar_expect_tx(sm.full(s), Cfg::stage_bytes);
      const int k0 = w.k_begin + t * BK;
      if constexpr (AMn) {
        for (int j = 0; j < Cfg::BM / mn_box; ++j) {
          tma_load(sm.slot_a(s) + j * mn_box_bytes, map_a, sm.full(s), w.m0 + mn_box * j, k0, ba);
        }
      } else if (cv.c != 0) {
        const int fr = k0 / cv.sc, rs = k0 - fr * cv.sc, fs = rs / cv.c;
        tma_load_im2col(sm.slot_a(s), map_a, sm.full(s), rs - fs * cv.c, ow, oh, img,
                        static_cast<unsigned short>(fs * cv.dw),
                        static_cast<unsigned short>(fr * cv.dh));
      } else {
        tma_load(sm.slot_a(s), map_a, sm.full(s), k0, w.m0, ba);
      }
      if constexpr (BMn) {
        for (int j = 0; j < Cfg::BN / mn_box; ++j) {
          tma_load(sm.slot_b(s) + j * mn_box_bytes, map_b, sm.full(s), w.n0 + mn_box * j, k0, bb);
        }
      } else {
        tma_load(sm.slot_b(s), map_b, sm.full(s), k0, w.n0, bb);
      }
    }
  }
}

/// The consumer main loop's form (run_ss): 1 carries the ring slot and adds offsets to
/// descriptors; 0 computes both from the K-tile counter and each MMA's address. A knob for
/// measurements (bench/JOURNAL.md g35), not an interface.
#ifndef CUFUSE_WGMMA_LEAN_LOOP
#define CUFUSE_WGMMA_LEAN_LOOP 1
#endif

/// The consumer main loop of one warpgroup: `run` computes one tile's accumulators from `ktiles`
/// ring slots (K-tile counter `it` on entry; on return, after it), `drain` waits for its last
/// MMAs and releases their slot. Between the two, a ping-pong warpgroup lets the other start.
template <class Cfg, bool AMn, bool BMn>
struct wgmma_mainloop {
  static constexpr bool RS = Cfg::tf32 && AMn; // A fragments from registers
  static constexpr int MA = Cfg::m_atoms, BN = Cfg::BN, S = Cfg::stages;
  using acc_t = float[MA][BN / 2];
  static_assert(!Cfg::tf32 || !BMn,
                "cufuse: TF32 wgmma reads B K-major (stored N x K); swap the operands for NN");

  wgmma_smem<Cfg> sm;
  wgmma_thread<Cfg, RS> th;

  /// Zero: the accumulators start at 0; else at what the caller put there (a bias).
  template <bool Zero = true>
  CUFUSE_DEVICE_FN void run(acc_t& acc, int ktiles, int& it) const {
    if constexpr (Zero) {
      CUFUSE_UNROLL
      for (int r = 0; r < MA; ++r) {
        CUFUSE_UNROLL
        for (int j = 0; j < BN / 2; ++j) {
          acc[r][j] = 0.0f;
        }
      }
    }
    if constexpr (RS) {
      run_rs(acc, ktiles, it);
    } else {
      run_ss(acc, ktiles, it);
    }
  }

  CUFUSE_DEVICE_FN void drain(int ktiles, int it) const {
    wgmma_wait<0>();
    if (ktiles > 0 && th.lane == 0) {
      mbar_arrive(sm.empty((it - 1) % S));
    }
  }

private:
  /// Both operands from shared memory through descriptors.
  CUFUSE_DEVICE_FN void run_ss(acc_t& acc, int ktiles, int& it) const {
    using T = typename Cfg::element;
#if CUFUSE_WGMMA_LEAN_LOOP
    // The ring slot, its phase and the previous slot carried from K tile to K tile, and the
    // operands' descriptors as stage 0's plus offsets (wgmma_desc_lo): a K tile's MMAs issue
    // after a few integer adds. Built per MMA from its address (and the slot by it % S), the
    // loop took ~115 instructions per K tile, mostly dependent chains, and a ping-pong
    // warpgroup's main loop issued slower than its MMAs ran whenever the other warpgroup's
    // epilogue shared the schedulers (bench/JOURNAL.md g35).
    int s = it % S;
    unsigned phase = unsigned(it / S) & 1u;
    int prev = s == 0 ? S - 1 : s - 1;
    const unsigned a0 = wgmma_desc_lo<AMn>(sm.slot_a(0)), b0 = wgmma_desc_lo<BMn>(sm.slot_b(0));
    constexpr unsigned stage16 = unsigned(Cfg::stage_bytes) >> 4;
    for (int t = 0; t < ktiles; ++t, ++it) {
      mbar_wait(sm.full(s), phase);
      const unsigned da = a0 + unsigned(s) * stage16, db = b0 + unsigned(s) * stage16;
      wgmma_fence();
      CUFUSE_UNROLL
      for (int ks = 0; ks < Cfg::BK / Cfg::mma_k; ++ks) {
        const unsigned b_off = BMn ? ks * 2048 : ks * 32;
        CUFUSE_UNROLL
        for (int ma = 0; ma < MA; ++ma) {
          const int row0 = th.atom_row(ma);
          const unsigned a_off = AMn ? (row0 / 64) * 8192 + ks * 2048 : row0 * 128 + ks * 32;
          wgmma_op<BN, T, AMn ? 1 : 0, BMn ? 1 : 0>::run(acc[ma], wgmma_desc_of(da + (a_off >> 4)),
                                                         wgmma_desc_of(db + (b_off >> 4)));
        }
      }
      wgmma_commit();
      wgmma_wait<1>();
      // The previous K tile's MMAs completed: its slot may be refilled.
      if (t > 0 && th.lane == 0) {
        mbar_arrive(sm.empty(prev));
      }
      prev = s;
      if (++s == S) {
        s = 0;
        phase ^= 1u;
      }
    }
#else
    for (int t = 0; t < ktiles; ++t, ++it) {
      const int s = it % S;
      mbar_wait(sm.full(s), (it / S) & 1);
      wgmma_fence();
      CUFUSE_UNROLL
      for (int ks = 0; ks < Cfg::BK / Cfg::mma_k; ++ks) {
        // K-major: 16 K-elements are 32 bytes along the swizzled row; M/N-major: 16 K-rows of
        // 128 bytes.
        const unsigned b_addr = sm.slot_b(s) + (BMn ? ks * 2048 : ks * 32);
        CUFUSE_UNROLL
        for (int ma = 0; ma < MA; ++ma) {
          const int row0 = th.atom_row(ma);
          const unsigned a_addr =
              sm.slot_a(s) + (AMn ? (row0 / 64) * 8192 + ks * 2048 : row0 * 128 + ks * 32);
          wgmma_op<BN, T, AMn ? 1 : 0, BMn ? 1 : 0>::run(acc[ma], wgmma_desc<AMn>(a_addr),
                                                         wgmma_desc<BMn>(b_addr));
        }
      }
      wgmma_commit();
      wgmma_wait<1>();
      // The previous K tile's MMAs completed: its slot may be refilled.
      if (t > 0 && th.lane == 0) {
        mbar_arrive(sm.empty((it - 1) % S));
      }
    }
#endif
  }

  /// TF32 with an M-major A: A fragments through registers (wgmma_thread's rs_row map). One MMA
  /// group per K step: a step's A fragments stay live until its group completes, which the wait
  /// of the step after next guarantees, so two fragment sets alternate (registers of a whole
  /// tile in flight would not fit beside 128 accumulators).
  CUFUSE_DEVICE_FN void run_rs(acc_t& acc, int ktiles, int& it) const {
    constexpr int KS = Cfg::BK / Cfg::mma_k;
    constexpr int mn_box = Cfg::BK, mn_box_bytes = Cfg::BK * 128;
    static_assert(KS % 2 == 0, "cufuse: the register-A path alternates two fragment sets");
    static_assert(KS * Cfg::mma_k * 128 == mn_box_bytes, "cufuse: a K step is 8 K rows");
    const unsigned off_lo = th.rs_lo, off_hi = th.rs_hi;
    unsigned fa[2][MA][4];
    for (int t = 0; t < ktiles; ++t, ++it) {
      const int s = it % S;
      mbar_wait(sm.full(s), (it / S) & 1);
      CUFUSE_UNROLL
      for (int ks = 0; ks < KS; ++ks) {
        unsigned(&f)[MA][4] = fa[ks & 1];
        CUFUSE_UNROLL
        for (int ma = 0; ma < MA; ++ma) {
          const unsigned atom = sm.slot_a(s) + unsigned(th.atom(ma) * (64 / mn_box) * mn_box_bytes);
          ld_shared_u32x2(atom + off_lo + ks * 1024, f[ma][0], f[ma][1]);
          ld_shared_u32x2(atom + off_hi + ks * 1024, f[ma][2], f[ma][3]);
        }
        wgmma_fence();
        CUFUSE_UNROLL
        for (int ma = 0; ma < MA; ++ma) {
          wgmma_tf32_rs<BN>::run(acc[ma], f[ma], wgmma_desc<false>(sm.slot_b(s) + ks * 32));
        }
        wgmma_commit();
        wgmma_wait<1>();
        // After the first step's wait, the previous tile's last group is complete.
        if (ks == 0 && t > 0 && th.lane == 0) {
          mbar_arrive(sm.empty((it - 1) % S));
        }
      }
    }
  }
};

} // namespace cufuse::gemm_detail
