// Shared-memory addressing of the mma.sync kernels, checked on the host (no GPU) for every
// configuration of the variant lists and all four layouts:
// - the main loop's precomputed fragment offsets (mma_frag_layout: per-thread base, one XOR
//   per compile-time column offset) equal the direct swizzle of the row and column each lane
//   must read, written out here from the PTX ISA's ldmatrix and mma fragment layouts;
// - TF32 with TMA loads: the M-major A reads address the TMA boxes' 128-byte swizzle, each
//   half warp's 8-byte reads cover the 32 banks once, and the K-major tiles' swizzle is TMA's;
// - the planned cp.async copies (mma_tile_copier) land where the checked loader puts them, and
//   the threads' copies cover every 16-byte chunk of a stage exactly once;
// - the FP32 SIMT cp.async copies (simt_copier, every pipelined SIMT configuration, both
//   operands, both copy modes): each copy writes the element it reads to [k][mn] of the stage,
//   and the copies of one K tile cover every element exactly once;
// - the wgmma register-A path (TF32, M-major A): each consumer thread's precomputed fragment
//   offsets address the elements its registers hold, in the TMA boxes' 128-byte swizzle.
// The variant lists and their names, as libcufuse builds them (src/gemm, internal).
#include "gemm/variant_launch.cuh"

#include <catch2/catch.hpp>

#include <string>
#include <vector>

namespace {
using namespace cufuse::gemm_detail;

/// The element a lane's read must address, from first principles. f16/bf16: the row address a
/// lane supplies to ldmatrix .x4 (matrix j = lane / 8, row lane % 8), matrices ordered as the
/// mma fragment registers. TF32: the element the lane itself reads for register e (M- or
/// N-major operands), or the row address for ldmatrix on 32-bit elements seen as b16 pairs.
/// M-major A hands an m16 fragment's rows to the MMA in the order 0, 8, 1, 9, ..., 7, 15
/// (row h * 8 + g of the fragment reads tile row 2 g + h), so that a0 / a1 and a2 / a3 are
/// neighbours; the epilogue writes them back to the same rows (`a_row`).
/// Element offset at which TMA's 128-byte swizzle puts the element at byte `o` of a box laid
/// out densely from a 1024-byte boundary: 16-byte chunk bits 4-6 XOR the 128-byte row's bits
/// 7-9 (CU_TENSOR_MAP_SWIZZLE_128B).
int tma_swizzled(int o) { return (o ^ (((o >> 7) & 7) << 4)) / 4; }

template <class Cfg, bool TA, bool TB>
struct reference {
  static int a(int wm, int lane, int mi, int ks, int e) {
    const int m0 = wm * Cfg::WTM + mi * 16;
    const int j = lane >> 3, r = lane & 7;
    if constexpr (!Cfg::tf32) {
      // A fragment registers: (rows 0-7, k 0-7), (rows 8-15, k 0-7), (rows 0-7, k 8-15), (8-15,
      // 8-15)
      const int m = m0 + r + (j & 1) * 8, k = ks * 16 + (j >> 1) * 8;
      if constexpr (!TA) {
        return swz<Cfg::BK, Cfg::chunk, false>(m, k); // [m][k]: row m, 8 k-contiguous elements
      } else {
        // [k][m] with .trans: matrix j is read as rows k..k+7 at column m
        const int kk = ks * 16 + (j >> 1) * 8 + r, mm = m0 + (j & 1) * 8;
        return swz<Cfg::BM, Cfg::chunk, false>(kk, mm);
      }
    } else {
      const int g = lane >> 2, t = lane & 3;
      if constexpr (!TA) { // ldmatrix: a0 (g, t), a1 (g + 8, t), a2 (g, t + 4), a3 (g + 8, t + 4)
        return swz<Cfg::BK, Cfg::chunk, false>(m0 + r + (j & 1) * 8, ks * 8 + (j >> 1) * 4);
      } else if constexpr (Cfg::tma) {
        // TMA boxes of 32 rows x BK k-rows (4 KiB each). The rows the fragment's h * 8 + g
        // reads are the layout's choice (a_row; check_fragments checks they are a permutation).
        const int k = ks * 8 + t + (e >> 1) * 4;
        const int m = wm * Cfg::WTM + mma_frag_layout<Cfg, TA, TB>::a_row(mi, e & 1, g);
        return tma_swizzled((m / 32) * 32 * Cfg::BK * 4 + k * 128 + (m % 32) * 4);
      } else { // [k][m]: a0 (g, t), a1 (g + 8, t), a2 (g, t + 4), a3 (g + 8, t + 4)
        return swz<Cfg::BM, Cfg::chunk, true>(ks * 8 + t + (e >> 1) * 4, m0 + 2 * g + (e & 1));
      }
    }
  }

  static int b(int wn, int lane, int jn, int ks, int e) {
    const int j = lane >> 3, r = lane & 7;
    if constexpr (!Cfg::tf32) {
      // registers: (n 0-7, k 0-7), (n 0-7, k 8-15), (n 8-15, k 0-7), (n 8-15, k 8-15)
      const int n0 = wn * Cfg::WTN + jn * 16 + (j >> 1) * 8;
      if constexpr (TB) {
        return swz<Cfg::BK, Cfg::chunk, false>(n0 + r, ks * 16 + (j & 1) * 8); // [n][k]
      } else {
        return swz<Cfg::BN, Cfg::chunk, false>(ks * 16 + (j & 1) * 8 + r, n0); // [k][n], .trans
      }
    } else {
      const int g = lane >> 2, t = lane & 3;
      if constexpr (TB) { // ldmatrix: b0 (k t, n g), b1 (k t + 4, n g), then n + 8
        const int n0 = wn * Cfg::WTN + jn * 16 + (j >> 1) * 8;
        return swz<Cfg::BK, Cfg::chunk, false>(n0 + r, ks * 8 + (j & 1) * 4);
      } else { // scalar reads of [k][n]; jn numbers n8 blocks here
        return swz<Cfg::BN, Cfg::chunk, true>(ks * 8 + t + e * 4, wn * Cfg::WTN + jn * 8 + g);
      }
    }
  }
};

template <class Cfg, bool TA, bool TB>
void check_fragments(std::vector<std::string>& bad) {
  using L = mma_frag_layout<Cfg, TA, TB>;
  using R = reference<Cfg, TA, TB>;
  const std::string where = variant_name<Cfg>() + (TA ? " T" : " N") + (TB ? "T" : "N");
  constexpr int KS = Cfg::BK / Cfg::MMA_K;
  for (int w = 0; w < Cfg::WM * Cfg::WN; ++w) {
    const int wm = w / Cfg::WN, wn = w % Cfg::WN;
    for (int lane = 0; lane < 32; ++lane) {
      const int ab = L::a_base(wm, lane), bb = L::b_base(wn, lane);
      for (int ks = 0; ks < KS; ++ks) {
        for (int mi = 0; mi < Cfg::MI; ++mi) {
          for (int e = 0; e < (L::a_ldsm ? 1 : 4); ++e) {
            // TF32 M-major: registers 2 kh, 2 kh + 1 are one 8-byte read (mma_fragments)
            const int got =
                L::a_ldsm ? L::a_off(ab, mi, ks) : L::a_off(ab, mi, ks, e >> 1) + (e & 1);
            if (got != R::a(wm, lane, mi, ks, e)) {
              bad.push_back(where + " A lane " + std::to_string(lane) + " mi " +
                            std::to_string(mi) + " ks " + std::to_string(ks));
            }
          }
        }
        const int nb = L::b_ldsm ? Cfg::NI / 2 : Cfg::NI;
        for (int j = 0; j < nb; ++j) {
          for (int e = 0; e < (L::b_ldsm ? 1 : 2); ++e) {
            if (L::b_off(bb, j, ks, e) != R::b(wn, lane, j, ks, e)) {
              bad.push_back(where + " B lane " + std::to_string(lane) + " j " + std::to_string(j) +
                            " ks " + std::to_string(ks));
            }
          }
        }
      }
    }
  }
  // The epilogue writes fragment row h * 8 + g back to the row it was read from: the rows of
  // a warp tile's fragments are each row once (and, but for the TMA boxes, fixed).
  std::vector<int> rows(Cfg::WTM, 0);
  for (int mi = 0; mi < Cfg::MI; ++mi) {
    for (int h = 0; h < 2; ++h) {
      for (int g = 0; g < 8; ++g) {
        const int r = L::a_row(mi, h, g);
        if (r < 0 || r >= Cfg::WTM ||
            (!L::a_box && r != mi * 16 + (L::a_ldsm ? h * 8 + g : 2 * g + h))) {
          bad.push_back(where + " epilogue row of mi " + std::to_string(mi) + " h " +
                        std::to_string(h) + " g " + std::to_string(g));
        } else {
          ++rows[std::size_t(r)];
        }
      }
    }
  }
  for (int r = 0; r < Cfg::WTM; ++r) {
    if (rows[std::size_t(r)] != 1) {
      bad.push_back(where + " warp tile row " + std::to_string(r) + " computed " +
                    std::to_string(rows[std::size_t(r)]) + " times");
    }
  }
  if constexpr (L::a_box) {
    // Bank conflicts of the 8-byte reads: each half warp's 16 reads must cover the 32 banks.
    for (int w = 0; w < Cfg::WM; ++w) {
      for (int ks = 0; ks < KS; ++ks) {
        for (int mi = 0; mi < Cfg::MI; ++mi) {
          for (int kh = 0; kh < 2; ++kh) {
            for (int half = 0; half < 2; ++half) {
              std::vector<int> banks(32, 0);
              for (int lane = 16 * half; lane < 16 * half + 16; ++lane) {
                const int off = L::a_off(L::a_base(w, lane), mi, ks, kh);
                ++banks[std::size_t(off % 32)];
                ++banks[std::size_t((off + 1) % 32)];
              }
              for (int b : banks) {
                if (b != 1) {
                  bad.push_back(where + " bank conflict in A reads, mi " + std::to_string(mi) +
                                " ks " + std::to_string(ks));
                  break;
                }
              }
            }
          }
        }
      }
    }
  }
  // K-major tiles of 32-bit elements (rows of 128 bytes) are what TMA's 128-byte swizzle gives.
  if constexpr (Cfg::tma) {
    for (int r = 0; r < 64; ++r) {
      for (int c = 0; c < Cfg::BK; ++c) {
        if (swz<Cfg::BK, Cfg::chunk, false>(r, c) != tma_swizzled(r * 128 + c * 4)) {
          bad.push_back(where + " K-major swizzle of row " + std::to_string(r));
        }
      }
    }
  }
}

/// Every entry of `hits` (how often a copy wrote each chunk or element) must be exactly 1.
void expect_each_once(const std::vector<int>& hits, const std::string& what,
                      std::vector<std::string>& bad) {
  for (int h : hits) {
    if (h != 1) {
      bad.push_back(what + " copied " + std::to_string(h) + " times");
      return;
    }
  }
}

/// The copier's planned destinations against the checked loader's (mma_load_tile: copy v of
/// the block goes to row v / per_row, chunk v % per_row), and full coverage of the stage.
template <class Cfg, int MN, bool KContig>
void check_copier(std::vector<std::string>& bad) {
  using C = mma_tile_copier<Cfg, MN, KContig>;
  const std::string where = variant_name<Cfg>() + (KContig ? " K-contiguous" : " MN-contiguous");
  std::vector<int> hits(C::total, 0);
  for (int tid = 0; tid < Cfg::threads; ++tid) {
    const int r = tid / C::per_row, c = (tid % C::per_row) * C::E;
    const int dst = swz < C::row_len, C::E, Cfg::tf32 && !KContig > (r, c); // the copier's `dst`
    for (int i = 0; i < C::count; ++i) {
      const int v = tid + i * Cfg::threads;
      const int want = swz < C::row_len, C::E,
                Cfg::tf32 && !KContig > (v / C::per_row, (v % C::per_row) * C::E);
      const int got = dst + i * C::R * C::pitch; // the copier: R rows further per copy
      if (got != want) {
        bad.push_back(where + " thread " + std::to_string(tid) + " copy " + std::to_string(i));
      } else if (want % C::E == 0 && want / C::pitch < C::rows &&
                 want % C::pitch < C::row_len) { // padded TF32 rows: the pad is never copied
        ++hits[want / C::pitch * C::per_row + want % C::pitch / C::E];
      }
    }
  }
  expect_each_once(hits, where + ": a chunk", bad);
}

/// The any-alignment loader (kernel/mma_elem.cuh): thread tid's chunk i, at row tid / per_row
/// + i R and column (tid % per_row) E of the stage tile, is stored at the swizzled (or padded)
/// offset of that element, and the chunks of all threads cover the stage once.
template <class Cfg, int MN, bool KContig>
void check_elem_loader(std::vector<std::string>& bad) {
  using L = elem_tile_loader<Cfg, MN, KContig>;
  const std::string where =
      variant_name<Cfg>() + (KContig ? " K-contiguous" : " MN-contiguous") + " (registers)";
  std::vector<int> hits(L::total, 0);
  for (int tid = 0; tid < Cfg::threads; ++tid) {
    const int r0 = tid / L::per_row, c0 = (tid % L::per_row) * L::E;
    const int dst = swz<L::row_len, L::E, L::tf32_mn>(r0, c0); // the loader's `dst`
    for (int i = 0; i < L::count; ++i) {
      const int want = swz<L::row_len, L::E, L::tf32_mn>(r0 + i * L::R, c0);
      const int got = dst + i * L::R * L::pitch; // put(): R rows further per chunk
      if (got != want) {
        bad.push_back(where + " thread " + std::to_string(tid) + " chunk " + std::to_string(i));
      } else if (r0 + i * L::R < L::rows) {
        ++hits[(r0 + i * L::R) * L::per_row + c0 / L::E];
      }
    }
  }
  expect_each_once(hits, where + ": a chunk", bad);
}

template <class Cfg>
void check_config(std::vector<std::string>& bad) {
  if constexpr (elem_loads<Cfg>()) {
    check_elem_loader<Cfg, Cfg::BM, true>(bad);
    check_elem_loader<Cfg, Cfg::BM, false>(bad);
    check_elem_loader<Cfg, Cfg::BN, true>(bad);
    check_elem_loader<Cfg, Cfg::BN, false>(bad);
  }
  if constexpr (Cfg::tma) { // B K-major: NT, and TT (NN runs as TT); TMA copies, no copier
    check_fragments<Cfg, false, true>(bad);
    check_fragments<Cfg, true, true>(bad);
  } else {
    check_fragments<Cfg, false, false>(bad);
    check_fragments<Cfg, false, true>(bad);
    check_fragments<Cfg, true, false>(bad);
    check_fragments<Cfg, true, true>(bad);
    check_copier<Cfg, Cfg::BM, true>(bad);
    check_copier<Cfg, Cfg::BM, false>(bad);
    check_copier<Cfg, Cfg::BN, true>(bad);
    check_copier<Cfg, Cfg::BN, false>(bad);
  }
}

template <class... C>
int check_list(variant_list<C...>, std::vector<std::string>& bad) {
  (check_config<C>(bad), ...);
  return int(sizeof...(C));
}
} // namespace

namespace {

/// Replays every planned copy of simt_copier<MN, BK, Threads, Mode, KRows> for one K tile of a
/// matrix stored row-major with leading dimension `ld` (the copier's own source pointers, turned
/// back into the (row, column) they read), and checks where each lands in the stage.
template <int MN, int BK, int Threads, simt_copy Mode, int KRows>
void check_simt_copier(const std::string& where, std::vector<std::string>& bad) {
  using C = simt_copier<MN, BK, Threads, Mode, KRows>;
  constexpr bool t4 = Mode == simt_copy::transpose4;
  constexpr int width = t4 ? 1 : 4;            // elements per copy
  const std::int64_t ld = (t4 ? BK : MN) + 12; // padded rows, as the tests' operands have
  const std::vector<float> matrix(std::size_t(ld) * (t4 ? MN : BK));
  const float* g = matrix.data();
  std::vector<int> hits(std::size_t(MN) * BK, 0);
  const std::string name =
      where + (t4 ? " transposed, rows per warp copy " + std::to_string(KRows) : " along MN");
  for (int tid = 0; tid < Threads; ++tid) {
    const C c(g, ld, 0, 0, tid);
    for (int i = 0; i < C::count; ++i) {
      const std::int64_t off = c.source(c.src, i) - g;
      const int row = int(off / ld), col = int(off % ld);
      const int mn = t4 ? row : col, k = t4 ? col : row; // what the copy reads
      const int dst = c.target(i);                       // where it writes
      if (mn < 0 || mn + (t4 ? 1 : width) > MN || k < 0 || k >= BK || dst != k * C::S + mn) {
        bad.push_back(name + ": thread " + std::to_string(tid) + " copy " + std::to_string(i) +
                      " reads (" + std::to_string(mn) + ", " + std::to_string(k) +
                      ") and writes offset " + std::to_string(dst));
        continue;
      }
      for (int e = 0; e < width; ++e) {
        ++hits[std::size_t(k) * MN + mn + e];
      }
    }
  }
  expect_each_once(hits, name + ": an element", bad);
}

template <class Cfg>
int check_simt_config(std::vector<std::string>& bad) {
  if constexpr (Cfg::stages == 0) {
    return 0; // staged through registers, no cp.async copies
  } else {
    const std::string v = variant_name<Cfg>();
    check_simt_copier<Cfg::BM, Cfg::BK, Cfg::threads, simt_copy::transpose4, Cfg::krows_a>(v + " A",
                                                                                           bad);
    check_simt_copier<Cfg::BM, Cfg::BK, Cfg::threads, simt_copy::along_mn, 4>(v + " A", bad);
    check_simt_copier<Cfg::BN, Cfg::BK, Cfg::threads, simt_copy::transpose4, Cfg::krows_b>(v + " B",
                                                                                           bad);
    check_simt_copier<Cfg::BN, Cfg::BK, Cfg::threads, simt_copy::along_mn, 4>(v + " B", bad);
    return 1;
  }
}

template <class... C>
int check_simt_list(variant_list<C...>, std::vector<std::string>& bad) {
  return (check_simt_config<C>(bad) + ...);
}
} // namespace

TEST_CASE("gemm: SIMT cp.async copies write what they read, transposed, exactly once",
          "[gemm_layout]") {
  std::vector<std::string> bad;
  const int configs = check_simt_list(simt_variants{}, bad);
  INFO(bad.size() << " mismatches; first: " << (bad.empty() ? "" : bad.front()));
  CHECK(configs == 8); // every cp.async configuration of the set (split-K ones included)
  CHECK(bad.empty());
}

TEST_CASE("gemm: mma.sync shared-memory addressing matches the fragment layouts", "[gemm_layout]") {
  std::vector<std::string> bad;
  int configs = check_list(mma_f16_variants{}, bad);
  configs += check_list(mma_bf16_variants{}, bad);
  configs += check_list(mma_tf32_variants{}, bad);
  configs += check_list(mma_tma_tf32_variants{}, bad);
  configs += check_list(mma16_any_align_variants<__half>{}, bad);
  configs += check_list(mma16_any_align_variants<__nv_bfloat16>{}, bad);
  configs += check_list(mma_tf32_any_align_variants{}, bad);
  INFO(bad.size() << " mismatches; first: " << (bad.empty() ? "" : bad.front()));
  CHECK(configs == 36); // 8 FP16, 8 BF16, 7 TF32, 4 TF32 with TMA loads, 3 + 3 + 3 any alignment
  CHECK(bad.empty());
}

namespace {
/// Byte offset of element (m, k) of an M-major TF32 wgmma A tile of one 64-row MMA, from first
/// principles: TMA boxes of 32 M-elements (128 bytes) x BK K-rows, each box 128-byte swizzled.
int wgmma_a_mn_byte(int bk, int m, int k) {
  const int o = k * 128 + (m & 31) * 4;
  return (m >> 5) * bk * 128 + (o ^ (((o >> 7) & 7) << 4));
}

/// The register-A path (TF32, M-major A): each consumer thread's precomputed fragment offsets
/// (`wgmma_thread::rs_lo` / `rs_hi`, advanced by 1024 bytes per K step) address the elements
/// its fragment registers hold: rows rs_row and rs_row + 1 (the fragment's rows g and g + 8),
/// K rows 8 ks + q and 8 ks + q + 4; the rows of a warpgroup cover the 64-row atom once; a half
/// warp's 8-byte reads hit all 32 banks once.
template <class Cfg>
int check_wgmma_rs(std::vector<std::string>& bad) {
  constexpr int BK = Cfg::BK, KS = BK / Cfg::mma_k;
  for (int cw = 0; cw < Cfg::consumers; ++cw) {
    std::vector<int> rows(64, 0);
    for (int t = 0; t < 128; ++t) {
      const wgmma_thread<Cfg, true> th(128 * (cw + 1) + t);
      rows[th.row_a()] += th.q == 0;
      rows[th.row_b()] += th.q == 0;
      for (int ks = 0; ks < KS; ++ks) {
        const int k = ks * 8 + th.q;
        const int lo = int(th.rs_lo) + ks * 1024, hi = int(th.rs_hi) + ks * 1024;
        if (lo != wgmma_a_mn_byte(BK, th.rs_row, k) ||
            lo + 4 != wgmma_a_mn_byte(BK, th.rs_row + 1, k) ||
            hi != wgmma_a_mn_byte(BK, th.rs_row, k + 4) ||
            hi + 4 != wgmma_a_mn_byte(BK, th.rs_row + 1, k + 4)) {
          bad.push_back(std::to_string(Cfg::BM) + "x" + std::to_string(Cfg::BN) + " thread " +
                        std::to_string(t) + " ks " + std::to_string(ks));
        }
      }
    }
    for (int r = 0; r < 64; ++r) {
      if (rows[r] != 1) {
        bad.push_back("row " + std::to_string(r) + " held " + std::to_string(rows[r]) + " times");
      }
    }
    for (int half = 0; half < 8; ++half) { // 4 warps x 2 half warps
      std::vector<int> banks(32, 0);
      for (int l = 0; l < 16; ++l) {
        const wgmma_thread<Cfg, true> th(128 * (cw + 1) + half * 16 + l);
        ++banks[(th.rs_lo / 4) % 32];
        ++banks[(th.rs_lo / 4 + 1) % 32];
      }
      for (int b = 0; b < 32; ++b) {
        if (banks[b] != 1) {
          bad.push_back("half warp " + std::to_string(half) + ": bank " + std::to_string(b) +
                        " read " + std::to_string(banks[b]) + " times");
        }
      }
    }
  }
  return 1;
}

template <class... C>
int check_wgmma_rs_list(variant_list<C...>, std::vector<std::string>& bad) {
  return (check_wgmma_rs<C>(bad) + ...);
}
} // namespace

TEST_CASE("gemm: the wgmma register-A offsets address the fragments' elements", "[gemm_layout]") {
  std::vector<std::string> bad;
  const int configs = check_wgmma_rs_list(wgmma_tf32_variants{}, bad);
  INFO(bad.size() << " mismatches; first: " << (bad.empty() ? "" : bad.front()));
  CHECK(configs == 5); // every TF32 wgmma tile of the set, the split-K one included
  CHECK(bad.empty());
}
