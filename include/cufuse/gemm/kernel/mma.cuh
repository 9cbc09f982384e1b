/// \file The mma.sync kernel (FP16/BF16 via ldmatrix, TF32): fragment loads, the warp step,
/// the epilogue through shared memory, and the kernel that composes them over a cp.async ring.
/// The TMA-fed TF32 kernel (kernel/mma_tma.cuh) reuses the step and the epilogue.
#pragma once

#include "../arch/barrier.cuh"
#include "../arch/mma_sync.cuh"
#include "../epilogue/linear_combination.cuh"
#include "../epilogue/split_k.cuh"
#include "../mainloop/mma_smem.cuh"

namespace cufuse::gemm_detail {

/// Where mma_fragments reads the A fragments: the stage tile (this one), or per fragment and
/// lane a zero row instead (conv2d's halo tiles, conv/mma.cuh: a pixel whose filter tap lies in
/// the padding).
struct a_rows_as_staged {
  static constexpr bool zeroes = false;
};

/// Loads A fragment `mi` of k-step `ks` for this warp (see mma_fragments).
template <class Cfg, bool TA, bool TB, class Rows = a_rows_as_staged>
CUFUSE_DEVICE_FN void mma_a_fragment(unsigned ra, const typename Cfg::element* sa, int a_base,
                                     int mi, int ks, unsigned (&f)[4], const Rows& rows = {}) {
  using L = mma_frag_layout<Cfg, TA, TB>;
  if constexpr (L::a_ldsm) {
    unsigned addr = ra + unsigned(L::a_off(a_base, mi, ks)) * unsigned(sizeof(*sa));
    if constexpr (Rows::zeroes) {
      static_assert(!TA, "cufuse: zero rows are rows of a K-contiguous A tile");
      addr = rows.keep(mi) ? addr : rows.zero;
    }
    if constexpr (TA) {
      ldmatrix_x4_trans(f, addr);
    } else {
      ldmatrix_x4(f, addr);
    }
  } else { // 8-byte reads: rows g and g + 8 of k row kh (see a_row)
    CUFUSE_UNROLL
    for (int kh = 0; kh < 2; ++kh) {
      const float2 x = *reinterpret_cast<const float2*>(sa + L::a_off(a_base, mi, ks, kh));
      f[2 * kh] = to_tf32(x.x);
      f[2 * kh + 1] = to_tf32(x.y);
    }
  }
}

/// Loads the A and B fragments of k-step `ks` for this warp from the stage tiles at shared
/// byte addresses `ra` / `rb` (`sa` / `sb`: the same tiles as pointers, for the TF32 reads of
/// M- or N-major tiles).
/// `row` >= 0 (a constant of an unrolled loop): only the share of MMA row `row`, so that the
/// next k-step's reads go out between the rows of MMAs: A fragment `row`, and the B
/// fragments spread over the first half of the rows (they are all needed by the next step's
/// first row).
/// `rows`: a_rows_as_staged, or an object whose keep(mi) says whether this lane's row of A
/// fragment mi comes from the stage (else from the 16 zero bytes at shared address `zero`).
template <class Cfg, bool TA, bool TB, class Rows = a_rows_as_staged>
CUFUSE_DEVICE_FN void mma_fragments(unsigned ra, unsigned rb, const typename Cfg::element* sa,
                                    const typename Cfg::element* sb, int a_base, int b_base, int ks,
                                    unsigned (&fa)[Cfg::MI][4], unsigned (&fb)[Cfg::NI][2],
                                    int row = -1, const Rows& rows = {}) {
  using L = mma_frag_layout<Cfg, TA, TB>;
  constexpr unsigned sz = sizeof(typename Cfg::element);
  constexpr int NB = L::b_ldsm ? Cfg::NI / 2 : Cfg::NI; // B reads: ldmatrix pairs or blocks
  constexpr int HB = Cfg::MI / 2 > 0 ? Cfg::MI / 2 : 1; // rows that carry them
  const int a0 = row < 0 ? 0 : row, a1 = row < 0 ? Cfg::MI : row + 1;
  const int b0 = row < 0 ? 0 : (row < HB ? row * NB / HB : NB);
  const int b1 = row < 0 ? NB : (row < HB ? (row + 1) * NB / HB : NB);
  CUFUSE_UNROLL
  for (int mi = 0; mi < Cfg::MI; ++mi) {
    if (mi < a0 || mi >= a1) {
      continue;
    }
    mma_a_fragment<Cfg, TA, TB>(ra, sa, a_base, mi, ks, fa[mi], rows);
  }
  if constexpr (L::b_ldsm) {
    CUFUSE_UNROLL
    for (int nj = 0; nj < Cfg::NI / 2; ++nj) {
      if (nj < b0 || nj >= b1) {
        continue;
      }
      unsigned r[4];
      const unsigned addr = rb + unsigned(L::b_off(b_base, nj, ks)) * sz;
      if constexpr (TB) {
        ldmatrix_x4(r, addr);
      } else {
        ldmatrix_x4_trans(r, addr);
      }
      fb[2 * nj][0] = r[0];
      fb[2 * nj][1] = r[1];
      fb[2 * nj + 1][0] = r[2];
      fb[2 * nj + 1][1] = r[3];
    }
  } else {
    CUFUSE_UNROLL
    for (int ni = 0; ni < Cfg::NI; ++ni) {
      if (ni < b0 || ni >= b1) {
        continue;
      }
      fb[ni][0] = to_tf32(sb[L::b_off(b_base, ni, ks, 0)]);
      fb[ni][1] = to_tf32(sb[L::b_off(b_base, ni, ks, 1)]);
    }
  }
}

/// One k-step of a warp: the MMAs of fragments `fa` x `fb`, with the fragments of step `nks`
/// (at stage addresses na / nb, npa / npb) read into `na_f` / `nb_f` between the rows of MMAs,
/// not all before them: fewer warps stall on a full MIO queue (bench/JOURNAL.md g21).
/// `rows`: which A rows of step `nks` to read (mma_fragments).
template <class Cfg, bool TA, bool TB, class Rows = a_rows_as_staged>
CUFUSE_DEVICE_FN void mma_step(float (&acc)[Cfg::MI][Cfg::NI][4], const unsigned (&fa)[Cfg::MI][4],
                               const unsigned (&fb)[Cfg::NI][2], unsigned na, unsigned nb,
                               const typename Cfg::element* npa, const typename Cfg::element* npb,
                               int a_base, int b_base, int nks, unsigned (&na_f)[Cfg::MI][4],
                               unsigned (&nb_f)[Cfg::NI][2], const Rows& rows = {}) {
  CUFUSE_UNROLL
  for (int i = 0; i < Cfg::MI; ++i) {
    CUFUSE_UNROLL
    for (int j = 0; j < Cfg::NI; ++j) {
      if constexpr (Cfg::tf32) {
        mma_1688_tf32(acc[i][j], fa[i], fb[j]);
      } else {
        mma_16816<typename Cfg::element>(acc[i][j], fa[i], fb[j]);
      }
    }
    mma_fragments<Cfg, TA, TB>(na, nb, npa, npb, a_base, b_base, nks, na_f, nb_f, i, rows);
  }
}

/// The mma.sync epilogue: the block's accumulators go through shared memory `smem` (free once
/// every warp has read its last fragments; this starts with the barrier) to C, and a split-K
/// block finishes its tile (splitk_fixup). `p`: the problem as the kernel computed it (a split
/// block's partial-tile arguments), `p_in`: as launched.
/// `tid`: the thread among the block's mma_threads; `bar`: 0 when they are the whole block,
/// else the named barrier they synchronize on (TMA tiles, whose producer warps have left).
template <class Cfg, bool TA, bool TB, bool Swap, class Epi>
CUFUSE_DEVICE_FN void mma_epilogue(float (&acc)[Cfg::MI][Cfg::NI][4], unsigned char* smem,
                                   const gemm_args& p, const gemm_args& p_in, const block_work& w,
                                   const Epi& epi, int tid, int bar = 0) {
  using T = typename Cfg::element;
  constexpr int BM = Cfg::BM, BN = Cfg::BN;
  auto sync = [&] {
    if (bar == 0) {
      __syncthreads();
    } else {
      named_bar_sync<Cfg::mma_threads>(bar);
    }
  };
  // The output type is dispatched once, so that each warp runs one straight-line store
  // sequence (the per-store dispatch made the unrolled epilogue several times longer, and at
  // 4096^3 warps waited on instruction fetch; bench/JOURNAL.md g17). C is fp32 or the input type
  // (cufuse::gemm's static_assert), so TF32 writes fp32 only.
  const int lane = tid & 31, warp = tid >> 5;
  const int wm = warp / Cfg::WN, wn = warp % Cfg::WN;
  const int g = lane >> 2, tq = lane & 3;
  using L = mma_frag_layout<Cfg, TA, TB>;
  // C goes through shared memory (free once the last K tile is read): the fragments' own
  // layout puts 8 rows in every warp store, 8 separate 16- or 32-byte pieces, and the LSU
  // spent ~11k cycles per 128x128 block on them (6 us, 10% of a 4096^3 block; bench/JOURNAL.md
  // g19). Staged, each thread writes whole 16-byte row pieces. The stage holds C's tile as
  // stored: CM x CN (BN x BM under Swap, whose accumulators are C^T), rows padded so that the
  // fragments' float2 writes fall in distinct banks: by 8 floats for rows g (banks 8 g + 2 tq),
  // by 4 for the paired rows 2 g + h of TF32 M-major A (8 g + 2 tq), and under Swap, where
  // those pairs are neighbours along a row of C (8 tq + 2 g). (The TMA layout's rows, a_row,
  // meet two-way conflicts here, once per tile.)
  static_assert(!Swap || !L::a_ldsm, "cufuse: only TF32 M-major A (paired rows) is swapped");
  constexpr int CM = Swap ? BN : BM, CN = Swap ? BM : BN;
  constexpr int SP = CN + (L::a_ldsm ? 8 : 4);
  static_assert(CM * SP * 4 <= Cfg::ring_bytes,
                "cufuse: an mma tile's C (padded rows of floats) must fit in its pipeline's "
                "shared memory, where the epilogue stages it");
  float* st = reinterpret_cast<float*>(smem);
  sync(); // every warp has read its last fragments from the stages
  CUFUSE_UNROLL
  for (int i = 0; i < Cfg::MI; ++i) {
    CUFUSE_UNROLL
    for (int j = 0; j < Cfg::NI; ++j) {
      const int col = wn * Cfg::WTN + j * 8 + 2 * tq;
      if constexpr (Swap) { // rows a_row(i, 0 / 1, g) of C^T: a float2 in row col (+ 1) of C
        const int row = wm * Cfg::WTM + L::a_row(i, 0, g);
        *reinterpret_cast<float2*>(st + col * SP + row) = make_float2(acc[i][j][0], acc[i][j][2]);
        *reinterpret_cast<float2*>(st + (col + 1) * SP + row) =
            make_float2(acc[i][j][1], acc[i][j][3]);
      } else {
        CUFUSE_UNROLL
        for (int h = 0; h < 2; ++h) {
          const int row = wm * Cfg::WTM + L::a_row(i, h, g);
          *reinterpret_cast<float2*>(st + row * SP + col) =
              make_float2(acc[i][j][2 * h], acc[i][j][2 * h + 1]);
        }
      }
    }
  }
  sync();
  gemm_args pc = p; // C as stored
  if constexpr (Swap) {
    pc.m = p.n;
    pc.n = p.m;
  }
  const int row0 = Swap ? w.n0 : w.m0, col0 = Swap ? w.m0 : w.n0;
  auto store_rows = [&](auto out, const auto& e) {
    using Out = typename decltype(out)::type;
    constexpr int V = 16 / int(sizeof(Out));
    constexpr int per_row = CN / V, rows = Cfg::mma_threads / per_row;
    static_assert(Cfg::mma_threads % per_row == 0 && CM % rows == 0,
                  "cufuse: staged C rows must split evenly over the block");
    const bool aligned = p.ldc % V == 0 && reinterpret_cast<std::uintptr_t>(w.c) % 16 == 0;
    const int r0 = tid / per_row, c0 = (tid % per_row) * V;
    CUFUSE_UNROLL
    for (int r = r0; r < CM; r += rows) {
      float v[V];
      CUFUSE_UNROLL
      for (int q = 0; q < V; q += 4) {
        const float4 x = *reinterpret_cast<const float4*>(st + r * SP + c0 + q);
        v[q] = x.x;
        v[q + 1] = x.y;
        v[q + 2] = x.z;
        v[q + 3] = x.w;
      }
      store_group<V, Out>(pc, w.c, row0 + r, col0 + c0, v, aligned, e);
    }
  };
  // A split block writes raw partial sums to the workspace (`p` is then not `p_in`).
  auto by_type = [&](const auto& e) {
    if (Cfg::tf32 || p.out_type == int(dtype::f32)) {
      store_rows(std::type_identity<float>{}, e);
    } else if constexpr (!Cfg::tf32) {
      store_rows(std::type_identity<T>{}, e);
    }
  };
  if (writes_partials<Cfg>(p_in)) {
    by_type(identity_epilogue{});
  } else {
    by_type(epi.at_batch(w.batch));
  }
  if constexpr (Cfg::splits > 1) {
    gemm_args rc = p_in; // C as stored
    if constexpr (Swap) {
      rc.m = p_in.n;
      rc.n = p_in.m;
    }
    static_assert(!Cfg::tma, "cufuse: TMA mma tiles have no split-K");
    splitk_fixup<CM, CN, Cfg::threads, finishes_in_kernel<Cfg>()>(rc, row0, col0, epi);
  }
}

/// Swap: `p` describes C^T = op(B)^T op(A)^T (operands, m / n and their strides exchanged by
/// the launcher) and the kernel writes C as stored (TF32 NN runs as TT: see kernel_of).
template <class Cfg, bool TA, bool TB, class Epi, bool Swap = false>
__global__ void __launch_bounds__(Cfg::threads, Cfg::min_blocks)
    mma_gemm_kernel(gemm_args p_in, const Epi epi) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
  using T = typename Cfg::element;
  // Split-K blocks write partial tiles of C as stored (n x m under Swap) to the workspace
  // (without one, a split configuration launched unsplit writes C directly).
  const gemm_args p =
      writes_partials<Cfg>(p_in) ? split_partial_args(p_in, Swap ? p_in.m : p_in.n) : p_in;
  constexpr int BM = Cfg::BM, BN = Cfg::BN, BK = Cfg::BK, S = Cfg::stages;
  extern __shared__ __align__(128) unsigned char mma_smem[];
  using CA = mma_tile_copier<Cfg, BM, !TA>;
  using CB = mma_tile_copier<Cfg, BN, TB>;
  constexpr int a_elems = CA::stage_elems, b_elems = CB::stage_elems; // BM x BK, BN x BK (+ pad)
  using storage = stage_ring<T, S, a_elems, b_elems>;
  static_assert(sizeof(storage) <= Cfg::smem_bytes,
                "cufuse: mma stages overflow the shared memory");
  storage& ring = *reinterpret_cast<storage*>(mma_smem);
  T* sa = ring.a[0];
  T* sb = ring.b[0];

  const block_work w = locate_block<BM, BN, int(sizeof(T)), 2>(p);
  const T* a = reinterpret_cast<const T*>(w.a);
  const T* b = reinterpret_cast<const T*>(w.b);
  const int tid = static_cast<int>(threadIdx.x);
  const int lane = tid & 31, warp = tid >> 5;
  const int wm = warp / Cfg::WN, wn = warp % Cfg::WN;

  float acc[Cfg::MI][Cfg::NI][4];
  zero_acc(acc);

  const int tiles = w.k_tiles<BK>();
  // Edge tiles (partly outside the matrices) load through the checked, zero-filling path.
  auto load_stage_checked = [&](int t, int st) {
    const int k0 = w.k_begin + t * BK;
    mma_load_tile<Cfg, BM, !TA>(sa + st * a_elems, a, p.lda, w.m0, k0, p.m, w.k_end, tid);
    mma_load_tile<Cfg, BN, TB>(sb + st * b_elems, b, p.ldb, w.n0, k0, p.n, w.k_end, tid);
  };
  CUFUSE_UNROLL
  for (int s = 0; s < S - 1; ++s) {
    if (s < tiles) {
      load_stage_checked(s, s);
    }
    cp_async_commit();
  }
  // Interior tiles: each thread's copies planned once; they are spread over the k-steps of
  // the tile being computed so that no k-step issues a long run of copies.
  const CA cpa(a, p.lda, w.m0, w.k_begin, tid);
  const CB cpb(b, p.ldb, w.n0, w.k_begin, tid);
  const bool interior_mn = w.m0 + BM <= p.m && w.n0 + BN <= p.n;
  constexpr unsigned a_stage = a_elems * sizeof(T), b_stage = b_elems * sizeof(T);
  const unsigned s_a = smem_addr(mma_smem), s_b = s_a + unsigned(offsetof(storage, b));

  using L = mma_frag_layout<Cfg, TA, TB>;
  const int a_base = L::a_base(wm, lane), b_base = L::b_base(wn, lane);
  // Warp fragments are double-buffered: step ks + 1 is read from shared memory while the
  // MMAs of step ks are issued (its reads between their rows), so ldmatrix latency hides
  // behind tensor-core work. The last step of a tile first waits for the next stage and
  // synchronizes, then reads its step 0.
  constexpr int KS = BK / Cfg::MMA_K;
  static_assert(KS % 2 == 0, "cufuse: BK must hold an even number of MMA k-steps");
  constexpr int copies = CA::count + CB::count;
  unsigned fa[2][Cfg::MI][4];
  unsigned fb[2][Cfg::NI][2];
  cp_async_wait<S - 2>();
  __syncthreads();
  if (tiles > 0) {
    mma_fragments<Cfg, TA, TB>(s_a, s_b, sa, sb, a_base, b_base, 0, fa[0], fb[0]);
  }
  int rs = 0;     // the stage this tile reads: t % S
  int ws = S - 1; // the stage it refills: (t + S - 1) % S, last read before the previous barrier
  // One K tile of the main loop. `planned`: the tile loaded meanwhile (t + S - 1) lies inside
  // the matrices and takes the planned copies; otherwise the checked path (or no load at all
  // past the last tile). The two kinds run in separate loops, so the hot loop carries no
  // checked copies: FP16 4096^3 went from 94 M to 77 M instructions and +13% (bench/JOURNAL.md
  // g14).
  auto tile = [&](int t, auto planned) {
    const int tl = t + S - 1;
    const unsigned ra = s_a + rs * a_stage, rb = s_b + rs * b_stage;
    const T* pa = sa + rs * a_elems;
    const T* pb = sb + rs * b_elems;
    const unsigned wa = s_a + ws * a_stage, wb = s_b + ws * b_stage;
    const T* a_from = cpa.src + tl * cpa.tile_step;
    const T* b_from = cpb.src + tl * cpb.tile_step;
    rs = rs + 1 == S ? 0 : rs + 1;
    CUFUSE_UNROLL
    for (int ks = 0; ks < KS; ++ks) {
      if constexpr (decltype(planned)::value) {
        CUFUSE_UNROLL
        for (int i = ks * copies / KS; i < (ks + 1) * copies / KS; ++i) {
          if (i < CA::count) {
            cpa.copy(wa, a_from, i);
          } else {
            cpb.copy(wb, b_from, i - CA::count);
          }
        }
      } else if (ks == 0 && tl < tiles) {
        load_stage_checked(tl, ws);
      }
      const bool last = ks + 1 == KS; // the next step is step 0 of the next stage
      if (last) {
        cp_async_commit();
        cp_async_wait<S - 2>();
        __syncthreads();
      }
      const unsigned na = last ? s_a + rs * a_stage : ra, nb = last ? s_b + rs * b_stage : rb;
      const T* npa = last ? sa + rs * a_elems : pa;
      const T* npb = last ? sb + rs * b_elems : pb;
      mma_step<Cfg, TA, TB>(acc, fa[ks & 1], fb[ks & 1], na, nb, npa, npb, a_base, b_base,
                            last ? 0 : ks + 1, fa[(ks + 1) & 1], fb[(ks + 1) & 1]);
    }
    ws = ws + 1 == S ? 0 : ws + 1;
  };
  run_k_tiles<S>(interior_mn, (w.k_end - w.k_begin) / BK, tiles, tile);
  cp_async_wait<0>();

  mma_epilogue<Cfg, TA, TB, Swap>(acc, mma_smem, p, p_in, w, epi, tid);
#else
  __trap(); // never launched: the host checks the kernel's binary architecture first
#endif
}

} // namespace cufuse::gemm_detail
