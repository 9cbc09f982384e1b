/// \file Hopper (sm_90a) GEMM kernels: TMA loads into a multi-stage shared-memory ring, driven
/// by a producer warp, and warpgroup MMAs (`wgmma.mma_async`) issued by one or two consumer
/// warpgroups that read both operands from shared memory through matrix descriptors. The
/// TF32 mma.sync kernel whose stages a producer warpgroup fills by TMA is kernel/mma_tma.cuh.
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
///
/// This file is over 500 lines because wgmma_gemm_kernel is one ~420-line function: its
/// producer loop, consumer main loop, persistent tile walk and two epilogue paths are not yet
/// separate pieces (the open part of the GEMM-structure work, docs/design.md).
#pragma once

#include "../arch/sm90.cuh"
#include "../epilogue/linear_combination.cuh"
#include "../tile.cuh"

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
  /// Registers per thread after setmaxnreg: the producer warpgroup keeps 40, two consumer
  /// warpgroups take 232 each (128 x 40 + 256 x 232 <= 64K registers of an SM). One consumer
  /// warpgroup (BM = 64) keeps the launch's allocation.
  static constexpr int producer_regs = 40, consumer_regs = 232;
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
/// the staged path runs at 0.98-1.01x; bench/JOURNAL.md g25).
template <class Cfg, bool TA, bool TB, class Epi, bool SwapC = false>
__global__ void __launch_bounds__(Cfg::threads, Cfg::min_blocks)
    wgmma_gemm_kernel(const __grid_constant__ CUtensorMap map_a,
                      const __grid_constant__ CUtensorMap map_b,
                      const __grid_constant__ CUtensorMap map_c, gemm_args p, const Epi epi) {
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
    fence_mbarrier_init();
    fence_async_shared();
  }
  __syncthreads();

  // Persistent: the block walks tiles blockIdx.x, + gridDim.x, ...; ring slot and phase follow
  // one K-tile counter `it` that runs on across tiles, so the producer fills the next tile's
  // first slots while the consumers are still in the previous tile's epilogue.
  if (wg == 0) {
    // Producer warpgroup: gives registers back to the consumers; one thread issues every copy.
    if constexpr (Cfg::consumers == 2) {
      setmaxnreg_dec<Cfg::producer_regs>();
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
    setmaxnreg_inc<Cfg::consumer_regs>();
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
  const bool read_c = p.epi_tma && epi.reads_c(p);
  const int c_rows = SwapC ? p.n : p.m, c_cols = SwapC ? p.m : p.n; // C as stored
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
    const Epi eb = epi.at_batch(batch);
    if (read_c && epi_leader) {
      bulk_wait_read<0>(); // the previous tile's last stores have read their buffers
      for (int c = 0; c < EB && c < chunks; ++c) {
        load_c(w, bc, c, epi_n + c);
      }
    }
    if constexpr (PP) {
      it = i * ktiles;
      if (i > 0) {
        named_bar_sync<256>(1 + cw);
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
            ld_shared_u32x2(atom + rs_offset(ks * 8 + q), f[ma][0], f[ma][1]);
            ld_shared_u32x2(atom + rs_offset(ks * 8 + q + 4), f[ma][2], f[ma][3]);
          }
          wgmma_fence();
          CUFUSE_UNROLL
          for (int ma = 0; ma < MA; ++ma) {
            wgmma_tf32_rs<BN>::run(acc[ma], f[ma], wgmma_desc<false>(slot_b(s) + ks * 32));
          }
          wgmma_commit();
          wgmma_wait<1>();
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
        wgmma_fence();
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
        wgmma_commit();
        wgmma_wait<1>();
        // The previous K tile's MMAs completed: its slot may be refilled.
        if (t > 0 && lane == 0) {
          mbar_arrive(empty((it - 1) % S));
        }
      }
    }
    if constexpr (PP) {
      if (tile + static_cast<int>(gridDim.x) < work) {
        named_bar_arrive<256>(2 - cw); // the other may start
      }
    }
    wgmma_wait<0>();
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
      // The epilogue of accumulators e0, e1 of atom ma, at C's (row, col) and (row, col + 1),
      // written to shared memory at `addr` as one 32-bit pair of 16-bit elements or two floats;
      // RC: C's values sit there (the epilogue reads C). Reading no C is a separate
      // instantiation, so its stores carry no C arithmetic (with a run-time beta, FP16
      // 4096x4096x128 ran 18% slower).
      auto val = [&](auto with_c, int ma, int e, float c, std::int64_t row, std::int64_t col) {
        if constexpr (Epi::loads) { // TMA clips what lies outside C; the epilogue must not read
          if (row >= c_rows || col >= c_cols) {
            return 0.0f;
          }
        }
        return eb.template value<decltype(with_c)::value>(p, acc[ma][e], c, row, col);
      };
      auto extra = [&](int ma, int e0, int e1, std::int64_t row, std::int64_t col) {
        if constexpr (Epi::extra_outputs) {
          if (row < c_rows) {
            const float v[2] = {acc[ma][e0], acc[ma][e1]};
            eb.store_extra(row, col, v, ::max(0, ::min(2, int(c_cols - col))));
          }
        }
      };
      auto out16 = [&](auto with_c, int ma, int e0, int e1, unsigned addr, std::int64_t row,
                       std::int64_t col) {
        extra(ma, e0, e1, row, col);
        float c[2] = {0.0f, 0.0f};
        if constexpr (decltype(with_c)::value) {
          const unsigned pair = ld_shared_b32(addr); // C's pair, as stored
          c[0] = load_out(&pair, 0, p.out_type);
          c[1] = load_out(&pair, 1, p.out_type);
        }
        return pack_out16(val(with_c, ma, e0, c[0], row, col),
                          val(with_c, ma, e1, c[1], row, col + 1), p.out_type);
      };
      auto st_out32 = [&](auto with_c, int ma, int e0, int e1, unsigned addr, std::int64_t row,
                          std::int64_t col) {
        extra(ma, e0, e1, row, col);
        float c[2] = {0.0f, 0.0f};
        if constexpr (decltype(with_c)::value) {
          ld_shared_f32x2(addr, c[0], c[1]);
        }
        st_shared_f32x2(addr, val(with_c, ma, e0, c[0], row, col),
                        val(with_c, ma, e1, c[1], row, col + 1));
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
                const std::int64_t row = w.n0 + ch * 32 + c, col = w.m0 + r0 + rs_row;
                st_out32(with_c, ma, j * 4 + 0, j * 4 + 2, buf + off(c), row, col);
                st_out32(with_c, ma, j * 4 + 1, j * 4 + 3, buf + off(c + 1), row + 1, col);
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
                const std::int64_t row_a = w.m0 + r0 + ra, row_b = w.m0 + r0 + rb;
                const std::int64_t col = w.n0 + j * 8 + 2 * q;
                if constexpr (OS == 2) {
                  const unsigned lo = buf + unsigned(ra * 128 + ((jj ^ (ra & 7)) << 4) + 4 * q);
                  const unsigned hi = buf + unsigned(rb * 128 + ((jj ^ (rb & 7)) << 4) + 4 * q);
                  st_shared_b32(lo, out16(with_c, ma, j * 4 + 0, j * 4 + 1, lo, row_a, col));
                  st_shared_b32(hi, out16(with_c, ma, j * 4 + 2, j * 4 + 3, hi, row_b, col));
                } else {
                  const int u = 2 * jj + (q >> 1), within = (q & 1) * 8;
                  st_out32(with_c, ma, j * 4 + 0, j * 4 + 1,
                           buf + unsigned(ra * 128 + ((u ^ (ra & 7)) << 4) + within), row_a, col);
                  st_out32(with_c, ma, j * 4 + 2, j * 4 + 3,
                           buf + unsigned(rb * 128 + ((u ^ (rb & 7)) << 4) + within), row_b, col);
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
            store_group<2>(pc, w.c, col, int(r), c0, w.vec_ok, eb);
            store_group<2>(pc, w.c, col + 1, int(r), c1, w.vec_ok, eb);
          } else {
            const float lo[2] = {acc[ma][j * 4 + 0], acc[ma][j * 4 + 1]};
            const float hi[2] = {acc[ma][j * 4 + 2], acc[ma][j * 4 + 3]};
            store_group<2>(p, w.c, r, col, lo, w.vec_ok, eb);
            store_group<2>(p, w.c, r_hi, col, hi, w.vec_ok, eb);
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
  (void)epi;
  __trap(); // never launched: the host checks the kernel's binary architecture first
#endif
}

} // namespace cufuse::gemm_detail
