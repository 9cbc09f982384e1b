/// \file The stores of the wgmma kernel (sm_90a): a consumer warpgroup's accumulators, through
/// the epilogue interface (linear_combination.cuh), to C.
///
///  - `wgmma_store_direct`: straight from the accumulators to global memory (an epilogue that
///    reads C reads it there: 8 rows per warp access, 0.69-0.82x cuBLAS at 4096^3 where the
///    staged path runs at 0.98-1.01x; bench/JOURNAL.md g25).
///  - `wgmma_tma_store`: when C suits TMA (`gemm_args::epi_tma`, set by the host: 16-byte aligned
///    base, leading dimension and batch stride, and rows of whole 16-byte units, since a TMA store
///    writes whole 16-byte units even past a row's end), each consumer warpgroup converts its
///    accumulators to C's type into a 128-byte-swizzled shared buffer, one 64-row MMA atom x 128
///    bytes of columns at a time, and one thread stores the buffer with a TMA copy (`map_c`: C as
///    stored, boxes of 128 bytes x 64 rows; SwapC: two 32 x 32 boxes of the transposed tile). The
///    stores run asynchronously under the next chunk and the next tile's main loop. An epilogue
///    that reads C has the same thread first load the chunk of C into the buffer by TMA (the
///    same boxes), and every thread reads back the elements it then overwrites. An expression
///    epilogue's staged operand (a residual laid out as C: `map_x`, gemm_args::epi_operand) is
///    loaded and read back the same way, in C's place.
///
/// SwapC: the kernel computes C^T = op(B)^T op(A)^T (the host passed B as A and A as B with m
/// and n exchanged; TF32 NN), so MMA rows are C's columns and C is written transposed.
#pragma once

#include "../mainloop/wgmma.cuh"
#include "linear_combination.cuh"

/// Groups per chunk of the expression epilogue's load pipeline (store_tile_ahead): the operands
/// of one group are loaded while the group before is computed and stored, and a group's pairs
/// are what the scheduler can interleave. 2 (8 pairs per group for 16-bit C): against 4, bias +
/// GELU 3% and bias + ReLU + residual 3% faster on the ping-pong tile, though the residual's
/// kernel spills 224 bytes (64 at 4); 8 was slower, 1 spilled up to 1.4 KB. A compile-time knob
/// for measurements (bench/JOURNAL.md e4, e10), not an interface.
#ifndef CUFUSE_EPI_GROUPS
#define CUFUSE_EPI_GROUPS 2
#endif

/// The same for the stores of an epilogue whose row-invariant operands are read ahead
/// (wgmma_tma_store::preloads): 4, since the operands held for the tile leave fewer
/// registers to the pipeline (ptxas, bias + GELU on the ping-pong tile: 148 bytes of spills
/// with 2 groups, none with 4; bias + ReLU + residual: 276 with 2, 80 with 4).
#ifndef CUFUSE_EPI_GROUPS_PRELOADED
#define CUFUSE_EPI_GROUPS_PRELOADED 4
#endif

/// An epilogue with a staged operand (a residual read from the epilogue's buffers, see
/// store_tile_ahead) compiles its staged store for interior tiles (no bounds tests) and for edge
/// tiles, and an unstaged store for calls whose operand is laid out otherwise than C: three forms
/// of the tile's store where other epilogues have two. Defined to 0, the staged store has one
/// form for every tile, with bounds tests: 0.55x the compile time of such an epilogue (126 -> 71
/// s for bias + ReLU + residual on bf16, sm_90a, one core), 7% slower (bench/JOURNAL.md e6).
#ifndef CUFUSE_EPI_STAGED_INTERIOR
#define CUFUSE_EPI_STAGED_INTERIOR 1
#endif

namespace cufuse::gemm_detail {

/// C's element type where the epilogue fixes it at compile time (expression epilogues:
/// `out_element`), else void (the standard epilogue: p.out_type at run time, see out_code).
template <class Epi>
struct epi_out {
  using type = void;
};
template <class Epi>
  requires requires { typename Epi::out_element; }
struct epi_out<Epi> {
  using type = typename Epi::out_element;
};
template <class Epi>
using epi_out_t = typename epi_out<Epi>::type;

/// Direct stores of one tile's accumulators (`th`'s fragments) at the tile `w`. `Out`: C's
/// element type when known at compile time (float: a split's partial tile), else void.
template <class Cfg, bool RS, bool SwapC, class Out = void, class Epi>
CUFUSE_DEVICE_FN void wgmma_store_direct(const float (&acc)[Cfg::m_atoms][Cfg::BN / 2],
                                         const gemm_args& p, const block_work& w,
                                         const wgmma_thread<Cfg, RS>& th, const Epi& eb) {
  CUFUSE_UNROLL
  for (int ma = 0; ma < Cfg::m_atoms; ++ma) {
    const std::int64_t r = w.m0 + th.atom_row(ma) + th.row_a();
    const std::int64_t r_hi = RS ? r + 1 : r + 8;
    CUFUSE_UNROLL
    for (int j = 0; j < Cfg::BN / 8; ++j) {
      const int col = w.n0 + j * 8 + 2 * th.q;
      if constexpr (SwapC) {
        // MMA rows are columns of C (r, r + 1: adjacent), MMA columns its rows.
        gemm_args pc = p;
        pc.m = p.n;
        pc.n = p.m;
        const float c0[2] = {acc[ma][j * 4 + 0], acc[ma][j * 4 + 2]};
        const float c1[2] = {acc[ma][j * 4 + 1], acc[ma][j * 4 + 3]};
        store_group<2, Out>(pc, w.c, col, int(r), c0, w.vec_ok, eb);
        store_group<2, Out>(pc, w.c, col + 1, int(r), c1, w.vec_ok, eb);
      } else {
        const float lo[2] = {acc[ma][j * 4 + 0], acc[ma][j * 4 + 1]};
        const float hi[2] = {acc[ma][j * 4 + 2], acc[ma][j * 4 + 3]};
        store_group<2, Out>(p, w.c, r, col, lo, w.vec_ok, eb);
        store_group<2, Out>(p, w.c, r_hi, col, hi, w.vec_ok, eb);
      }
    }
  }
}

/// The TMA-store epilogue of one consumer warpgroup, alive across the block's tiles: its
/// buffers, its chunk counter `n` (a chunk's buffer is n % epi_bufs), the thread that issues its
/// copies (`leader`) and its named barrier (1 and 2 are the ping-pong's).
///
/// A tile's chunks, in the order they are filled: 64-row atom ma (of this warpgroup) x 128-byte
/// column pieces `ch` (SwapC: 32 C rows, two 32 x 32 boxes). When the epilogue reads C, the
/// first epi_bufs chunks' loads go out before the tile's main loop (`prefetch_c`), so they land
/// under it; with two buffers each chunk then loads the next one as soon as that buffer's last
/// store has read it.
template <class Cfg, bool RS, bool SwapC, class Epi>
struct wgmma_tma_store {
  static constexpr int MA = Cfg::m_atoms, BN = Cfg::BN, EB = Cfg::epi_bufs;
  using thread_t = wgmma_thread<Cfg, RS>;

  const wgmma_smem<Cfg> sm;
  const thread_t th;
  const gemm_args& p;
  const CUtensorMap* map_c;
  const CUtensorMap* map_in; // what the buffers load: C, or an expression's staged operand
  const unsigned base;       // this warpgroup's buffers
  const bool leader;
  const int bar;
  const bool read_c;        // the epilogue reads C (through the buffers)
  const int c_rows, c_cols; // C as stored
  const int cw_cols;        // columns of C in one chunk
  const int chunks;         // chunks per tile
  int n = 0;                // this warpgroup's chunks so far

  CUFUSE_DEVICE_FN wgmma_tma_store(const wgmma_smem<Cfg>& s, const thread_t& t,
                                   const gemm_args& args, const CUtensorMap* map,
                                   const CUtensorMap* map_x, const Epi& epi)
      : sm(s), th(t), p(args), map_c(map), map_in(args.epi_operand != 0 ? map_x : map),
        base(s.epi(t.cw)), leader(t.tid % 128 == 0), bar(3 + t.cw),
        read_c(args.epi_tma && epi.reads_c(args)), c_rows(SwapC ? args.n : args.m),
        c_cols(SwapC ? args.m : args.n),
        cw_cols(SwapC ? 32 : 128 / (args.out_type == int(dtype::f32) ? 4 : 2)),
        chunks(MA * (BN / cw_cols)) {}

  /// What preload returns where nothing is read ahead.
  struct no_preload {};
  /// A thread's fragment columns per row: col0 + 8 j, j < frag_pairs (not SwapC).
  static constexpr int frag_pairs = BN / 8;
  /// Whether some of an expression epilogue's row-invariant operands (a bias) are read into
  /// registers (epi_cols, at most detail::cols_budget per thread) while a tile's last MMAs run,
  /// for the interior tiles' stores (bench/JOURNAL.md e15).
  static constexpr bool preloads = [] {
    if constexpr (SwapC) {
      return false;
    } else if constexpr (requires { Epi::template cols_registers<frag_pairs>; }) {
      return Epi::template cols_registers<frag_pairs> > 0;
    } else {
      return false;
    }
  }();

  /// Every position of the tile at `w` lies inside C.
  CUFUSE_DEVICE_FN bool interior(const block_work& w) const {
    return SwapC ? w.n0 + BN <= c_rows && w.m0 + Cfg::BM <= c_cols
                 : w.m0 + Cfg::BM <= c_rows && w.n0 + BN <= c_cols;
  }

  /// Once a tile's MMAs are issued, before they complete (`eb`: the epilogue of the tile's
  /// batch): the epilogue moved to the thread's first position with its row-invariant operands
  /// read (preloads; an edge tile or a call without the TMA store reads nothing), for store.
  /// Else no_preload.
  CUFUSE_DEVICE_FN auto preload(const block_work& w, const Epi& eb) const {
    if constexpr (preloads) {
      return eb.template at_origin_cols<frag_pairs>(w.m0 + th.atom_row(0) + th.row_a(),
                                                    w.n0 + 2 * th.q, p.epi_tma && interior(w));
    } else {
      return no_preload{};
    }
  }

  /// Before a tile's main loop: an epilogue that reads C loads the tile's first chunks of C.
  CUFUSE_DEVICE_FN void prefetch_c(const block_work& w, int bc) const {
    if (read_c && leader) {
      bulk_wait_read<0>(); // the previous tile's last stores have read their buffers
      for (int c = 0; c < EB && c < chunks; ++c) {
        load_c(w, bc, c, n + c);
      }
    }
  }

  /// The tile's accumulators to C, chunk by chunk (`eb`: the epilogue of the tile's batch;
  /// `pre`: what preload returned for the tile).
  template <class Pre = no_preload>
  CUFUSE_DEVICE_FN void store(const float (&acc)[MA][BN / 2], const block_work& w, int bc,
                              const Epi& eb, const Pre& pre = {}) {
    using Out = epi_out_t<Epi>;
    auto by_type = [&](auto with_c) {
      if constexpr (std::is_same_v<Out, float>) {
        store_tile<4>(with_c, acc, w, bc, eb, pre);
      } else if constexpr (!std::is_void_v<Out>) {
        if constexpr (!SwapC) {
          store_tile<2>(with_c, acc, w, bc, eb, pre);
        }
      } else if (p.out_type == int(dtype::f32)) {
        store_tile<4>(with_c, acc, w, bc, eb, pre);
      } else if constexpr (!SwapC) {
        store_tile<2>(with_c, acc, w, bc, eb, pre);
      }
    };
    if constexpr (tma_store_only<Epi>) {
      by_type(std::false_type{}); // reads no C
    } else if constexpr (requires { typename Epi::fetched_pair; }) {
      // Expression epilogues never read C; one with a staged operand reads that operand from
      // the buffers when the host could stage it (read_c: epi_operand).
      if constexpr (Epi::staged) {
        if (read_c) {
          by_type(std::true_type{});
          return;
        }
      }
      by_type(std::false_type{});
    } else if (read_c) {
      by_type(std::true_type{});
    } else {
      by_type(std::false_type{});
    }
  }

  /// After the block's last tile: its shared memory must outlive the last stores.
  CUFUSE_DEVICE_FN void finish() const {
    if (leader) {
      bulk_wait_all();
    }
  }

private:
  /// Loads chunk c of the tile at `w` into the buffer of chunk number `cn` and arms that
  /// buffer's barrier (the leader only).
  CUFUSE_DEVICE_FN void load_c(const block_work& w, int bc, int c, int cn) const {
    const int slot = cn % EB;
    const unsigned buf = base + unsigned(slot * Cfg::epi_buf_bytes);
    const unsigned b = sm.c_loaded(th.cw * EB + slot);
    const int ma = c / (BN / cw_cols), ch = c % (BN / cw_cols);
    const int r0 = th.atom_row(ma);
    mbar_expect_tx(b, Cfg::epi_buf_bytes);
    if constexpr (SwapC) {
      tma_load(buf, map_in, b, w.m0 + r0, w.n0 + ch * 32, bc);
      tma_load(buf + 4096, map_in, b, w.m0 + r0 + 32, w.n0 + ch * 32, bc);
    } else {
      tma_load(buf, map_in, b, w.n0 + ch * cw_cols, w.m0 + r0, bc);
    }
  }

  /// Chunk `c_local` of the tile begins: wait until its buffer's previous store has read it (RC:
  /// until C's chunk has landed in it, and load the next chunk). Returns the buffer.
  template <bool RC>
  CUFUSE_DEVICE_FN unsigned begin_chunk(const block_work& w, int bc, int c_local) const {
    const unsigned buf = base + unsigned((n % EB) * Cfg::epi_buf_bytes);
    if (leader) {
      if constexpr (!RC) {
        bulk_wait_read<EB - 1>();
      } else if constexpr (EB == 1) {
        if (c_local > 0) { // chunk 0 was loaded before the main loop
          bulk_wait_read<0>();
          load_c(w, bc, c_local, n);
        }
      } else if (c_local > 0 && c_local + 1 < chunks) {
        // Chunks 0 and 1 were loaded before the main loop; the next chunk's buffer is the
        // previous chunk's, once its store has read it.
        bulk_wait_read<0>();
        load_c(w, bc, c_local + 1, n + 1);
      }
    }
    named_barrier(bar, 128);
    if constexpr (RC) {
      mbar_wait(sm.c_loaded(th.cw * EB + n % EB), unsigned(n / EB) & 1u);
    }
    return buf;
  }

  /// The chunk is written: publish it to the async proxy (the leader then stores it).
  CUFUSE_DEVICE_FN void end_chunk() {
    fence_async_shared();
    named_barrier(bar, 128);
    ++n;
  }

  /// The epilogue's value of accumulator `a` at C's (row, col); RC: `c` holds C's value.
  /// Reading no C is a separate instantiation, so its stores carry no C arithmetic (with a
  /// run-time beta, FP16 4096x4096x128 ran 18% slower).
  template <bool RC>
  CUFUSE_DEVICE_FN float value(const Epi& eb, float a, float c, std::int64_t row,
                               std::int64_t col) const {
    if constexpr (Epi::loads) {
      // TMA clips what lies outside C, but the epilogue must not read there: it reads at the
      // position clamped into C (a value never stored).
      row = row < c_rows ? row : c_rows - 1;
      col = col < c_cols ? col : c_cols - 1;
    }
    return eb.template value<RC>(p, a, c, row, col);
  }

  /// One pair of a chunk (store_tile_ahead): accumulators a0, a1 for C's (row, col), (row,
  /// col + 1), at shared address `addr` (in the chunk's buffer).
  struct pair_at {
    float a0, a1;
    unsigned addr;
    std::int64_t row, col;
    int dr, dc; // (row, col) less the thread's first position in the tile (store_tile_ahead)
  };

  /// The epilogue's further outputs of accumulators a0, a1 at (row, col), (row, col + 1).
  CUFUSE_DEVICE_FN void extra(const Epi& eb, float a0, float a1, std::int64_t row,
                              std::int64_t col) const {
    if constexpr (Epi::extra_outputs) {
      if (row < c_rows) {
        const float v[2] = {a0, a1};
        eb.store_extra(row, col, v, ::max(0, ::min(2, int(c_cols - col))));
      }
    }
  }

  /// A pair of 16-bit outputs at (row, col), (row, col + 1), from accumulators a0, a1, written to
  /// the buffer at `addr` as one 32-bit word (RC: C's pair is read from there first).
  template <bool RC>
  CUFUSE_DEVICE_FN void pair16(const Epi& eb, float a0, float a1, unsigned addr, std::int64_t row,
                               std::int64_t col) const {
    extra(eb, a0, a1, row, col);
    float c[2] = {0.0f, 0.0f};
    if constexpr (RC) {
      const unsigned pair = ld_shared_b32(addr); // C's pair, as stored
      c[0] = load_out(&pair, 0, p.out_type);
      c[1] = load_out(&pair, 1, p.out_type);
    }
    st_shared_b32(addr,
                  pack_out16(value<RC>(eb, a0, c[0], row, col),
                             value<RC>(eb, a1, c[1], row, col + 1), out_code<epi_out_t<Epi>>(p)));
  }

  /// The same for two fp32 outputs.
  template <bool RC>
  CUFUSE_DEVICE_FN void pair32(const Epi& eb, float a0, float a1, unsigned addr, std::int64_t row,
                               std::int64_t col) const {
    extra(eb, a0, a1, row, col);
    float c[2] = {0.0f, 0.0f};
    if constexpr (RC) {
      ld_shared_f32x2(addr, c[0], c[1]);
    }
    st_shared_f32x2(addr, value<RC>(eb, a0, c[0], row, col), value<RC>(eb, a1, c[1], row, col + 1));
  }

  /// The pairs of one chunk (pair_at::addr: the offset in the chunk's buffer).
  template <int NPC>
  struct chunk_pairs {
    pair_at p[NPC];
  };

  /// Every chunk of the tile for an epilogue that reads its operands in pairs (expression
  /// epilogues: Epi::fetch_local): the operands of chunk c + 1 are loaded before chunk c waits
  /// on its buffer, computes and stores, so that their latency hides behind chunk c's work. One
  /// chunk at a time left each chunk waiting on its own loads: a fused epilogue cost as much as
  /// a second pass (bench/JOURNAL.md e4).
  ///
  /// The operands are read at 32-bit offsets from the thread's first position in the tile (the
  /// epilogue moved there once per tile: at_origin), and an interior tile (Edge false: every
  /// position inside C, nearly all tiles of a large C) reads them without predicates: the
  /// 64-bit positions, their products with the strides and the bounds tests cost about 11
  /// instructions per element (bench/JOURNAL.md e5).
  ///
  /// Staged: the epilogue's staged operand (a residual laid out as C) is in the chunk's buffer,
  /// loaded by TMA as C's chunks are for beta != 0 (prefetch_c, begin_chunk); each thread reads
  /// its pairs there (at the addresses it then overwrites) once the chunk has landed. With two
  /// buffers the next chunk's first group is still fetched ahead (its chunk loaded while this
  /// one was computed); with one, each chunk's first group waits for its own.
  ///
  /// Pre: an interior tile's epilogue at the thread's first position with its row-invariant
  /// operands already in registers (preload), or no_preload.
  template <int OS, int Ahead, bool Edge, bool Staged = false, class Pre = no_preload>
  CUFUSE_DEVICE_FN void store_tile_ahead(const float (&acc)[MA][BN / 2], const block_work& w,
                                         int bc, const Epi& eb, const Pre& pre = {}) {
    constexpr int CW = SwapC ? 32 : 128 / OS; // C columns (SwapC: C rows) of a chunk
    constexpr int CPA = BN / CW;              // chunks per 64-row atom
    constexpr int NPC = SwapC ? 8 : CW / 4;   // a thread's pairs in a chunk
    constexpr int NC = MA * CPA;
    static_assert(!SwapC || OS == 4, "cufuse: the transposed (TF32) tile stores fp32");
    static_assert(std::is_same_v<Pre, no_preload> || !Edge,
                  "cufuse: internal: only interior tiles read their operands ahead");
    // A pair's address in the chunk's buffer: every tile has NC chunks, so chunk c's buffer is
    // c % EB (with n % EB == 0 at the tile's start), an offset known at compile time. A 16-byte
    // unit's swizzle, ((u ^ (row % 8)) << 4), is the thread's row address (the buffer is
    // 1024-byte aligned) XOR (u << 4) for the unit's compile-time part of u: one LOP3 per
    // address, the other buffer an immediate offset (bench/JOURNAL.md e15).
    static_assert(NC % EB == 0, "cufuse: internal: a tile's chunks fill whole buffer rounds");
    const unsigned uq = OS == 2 || SwapC ? 0u : unsigned(th.q >> 1);
    const unsigned within = OS == 2 ? 4u * unsigned(th.q) : unsigned(th.q & 1) * 8u;
    const unsigned s_a =
        base + unsigned(th.row_a()) * 128u + within + ((unsigned(th.row_a() & 7) ^ uq) << 4);
    const unsigned s_b =
        base + unsigned(th.row_b()) * 128u + within + ((unsigned(th.row_b() & 7) ^ uq) << 4);
    const auto pairs = [&](int c) {
      chunk_pairs<NPC> r;
      const int ma = c / CPA, ch = c % CPA;
      const int r0 = th.atom_row(ma);
      const unsigned slot = unsigned((c % EB) * Cfg::epi_buf_bytes);
      if constexpr (SwapC) {
        const int box = th.rs_row >> 5, rr = th.rs_row & 31;
        const auto off = [&](int cr) {
          return unsigned(box * 4096 + cr * 128 + (((rr >> 2) ^ (cr & 7)) << 4) + (rr & 3) * 4);
        };
        CUFUSE_UNROLL
        for (int jj = 0; jj < 4; ++jj) {
          const int j = ch * 4 + jj, cc = jj * 8 + 2 * th.q;
          const std::int64_t row = w.n0 + ch * 32 + cc, col = w.m0 + r0 + th.rs_row;
          const float* a = acc[ma] + j * 4;
          const int dr = ch * 32 + jj * 8, dc = 64 * ma; // from (w.n0 + 2 q, w.m0 + rs_row ..)
          r.p[2 * jj] = pair_at{a[0], a[2], base + slot + off(cc), row, col, dr, dc};
          r.p[2 * jj + 1] =
              pair_at{a[1], a[3], base + slot + off(cc + 1), row + 1, col, dr + 1, dc};
        }
      } else {
        const int ra = th.row_a(), rb = th.row_b();
        CUFUSE_UNROLL
        for (int jj = 0; jj < CW / 8; ++jj) {
          const int j = ch * (CW / 8) + jj;
          const std::int64_t row_a = w.m0 + r0 + ra, row_b = w.m0 + r0 + rb;
          const std::int64_t col = w.n0 + j * 8 + 2 * th.q;
          const float* a = acc[ma] + j * 4;
          // From the thread's first position (w.m0 + atom_row(0) + ra, w.n0 + 2 q).
          const int dr = 64 * ma, dc = j * 8, dr_b = dr + (th.row_b() - th.row_a());
          const unsigned uc = unsigned(OS == 2 ? jj : 2 * jj) << 4;
          r.p[2 * jj] = pair_at{a[0], a[1], (s_a ^ uc) + slot, row_a, col, dr, dc};
          r.p[2 * jj + 1] = pair_at{a[2], a[3], (s_b ^ uc) + slot, row_b, col, dr_b, dc};
        }
      }
      return r;
    };
    // TMA clips what lies outside C, but the epilogue must not read there: loads predicated on
    // the position (not clamped positions, which cost a compare and select per pair and broke
    // the affine addresses).
    const auto et = [&] {
      if constexpr (!std::is_same_v<Pre, no_preload>) {
        return pre;
      } else {
        return SwapC ? eb.at_origin(w.n0 + 2 * th.q, w.m0 + th.atom_row(0) + th.rs_row)
                     : eb.at_origin(w.m0 + th.atom_row(0) + th.row_a(), w.n0 + 2 * th.q);
      }
    }();
    using F = decltype(et.fetch_local(0.0f, 0.0f, 0, 0, true, true));
    // The pipeline runs over groups of G pairs (GPC per chunk): holding a whole chunk's
    // operands ahead spilled 424-1976 bytes at 168 registers (two operands, 128 accumulators).
    constexpr int GPC = Ahead, G = NPC / GPC, NG = NC * GPC;
    static_assert(NPC % GPC == 0, "cufuse: a chunk's pairs split into equal groups");
    struct fetched_group {
      F f[G];
    };
    // (Staged: the operand's pair is at the pair's own address, in the chunk's buffer.)
    const auto fetch = [&](int g) {
      const chunk_pairs<NPC> cp = pairs(g / GPC);
      fetched_group f;
      CUFUSE_UNROLL
      for (int i = 0; i < G; ++i) {
        const pair_at& q = cp.p[(g % GPC) * G + i];
        bool ok0 = true, ok1 = true;
        if constexpr (Edge) {
          const bool in_row = q.row < c_rows;
          ok0 = in_row && q.col < c_cols;
          ok1 = in_row && q.col + 1 < c_cols;
        }
        if constexpr (Staged) {
          f.f[i] = et.fetch_local(q.a0, q.a1, q.dr, q.dc, ok0, ok1, q.addr);
        } else {
          f.f[i] = et.fetch_local(q.a0, q.a1, q.dr, q.dc, ok0, ok1);
        }
      }
      return f;
    };
    fetched_group next;
    if constexpr (!Staged) {
      next = fetch(0);
    }
    unsigned buf = 0;
    CUFUSE_UNROLL
    for (int g = 0; g < NG; ++g) {
      const int c = g / GPC;
      const chunk_pairs<NPC> cp = pairs(c);
      if constexpr (Staged) {
        if (g % GPC == 0) {
          buf = begin_chunk<true>(w, bc, c); // the chunk's operand has landed
          if (g == 0 || EB == 1) {
            next = fetch(g);
          }
        }
      }
      const fetched_group cur = next;
      if (g + 1 < NG) {
        if constexpr (!Staged) {
          next = fetch(g + 1);
        } else if ((g + 1) % GPC != 0) {
          next = fetch(g + 1);
        } else if constexpr (EB > 1) {
          // The next chunk's operand: loaded into the other buffer by begin_chunk (or before
          // the main loop for chunk 1).
          const int slot = (n + 1) % EB;
          mbar_wait(sm.c_loaded(th.cw * EB + slot), unsigned((n + 1) / EB) & 1u);
          next = fetch(g + 1);
        }
      }
      if constexpr (!Staged) {
        if (g % GPC == 0) {
          buf = begin_chunk<false>(w, bc, c);
        }
      }
      CUFUSE_UNROLL
      for (int i = 0; i < G; ++i) {
        const pair_at& q = cp.p[(g % GPC) * G + i];
        float v0, v1;
        Epi::value_pair(cur.f[i], v0, v1);
        extra(eb, q.a0, q.a1, q.row, q.col);
        if constexpr (OS == 2) {
          st_shared_b32(q.addr, pack_out16(v0, v1, out_code<epi_out_t<Epi>>(p)));
        } else {
          st_shared_f32x2(q.addr, v0, v1);
        }
      }
      if (g % GPC != GPC - 1) {
        continue;
      }
      end_chunk();
      if (leader) {
        const int ma = c / CPA, ch = c % CPA;
        const int r0 = th.atom_row(ma);
        if constexpr (SwapC) {
          tma_store(map_c, buf, w.m0 + r0, w.n0 + ch * 32, bc);
          tma_store(map_c, buf + 4096, w.m0 + r0 + 32, w.n0 + ch * 32, bc);
        } else {
          tma_store(map_c, buf, w.n0 + ch * CW, w.m0 + r0, bc);
        }
        bulk_commit();
      }
    }
  }

  /// Every chunk of the tile, for C elements of OS bytes: expression epilogues through
  /// store_tile_ahead, the standard one pair by pair (it reads no memory of its own, but C
  /// through the buffers when RC).
  template <int OS, class WithC, class Pre>
  CUFUSE_DEVICE_FN void store_tile(WithC, const float (&acc)[MA][BN / 2], const block_work& w,
                                   int bc, const Epi& eb, const Pre& pre) {
    if constexpr (requires { typename Epi::fetched_pair; }) {
      // WithC: the expression's staged operand is in the buffers.
      constexpr int G = preloads ? CUFUSE_EPI_GROUPS_PRELOADED : CUFUSE_EPI_GROUPS;
      if constexpr (Epi::staged && (!WithC::value || !CUFUSE_EPI_STAGED_INTERIOR)) {
        // The unstaged store of an epilogue with a staged operand (the call's operand is laid
        // out otherwise than C: read from global memory) has one form for every tile, with
        // bounds tests; so has the staged one where CUFUSE_EPI_STAGED_INTERIOR is 0.
        store_tile_ahead<OS, G, true, WithC::value>(acc, w, bc, eb);
      } else if (interior(w)) {
        store_tile_ahead<OS, G, false, WithC::value>(acc, w, bc, eb, pre);
      } else {
        store_tile_ahead<OS, G, true, WithC::value>(acc, w, bc, eb);
      }
    } else {
      store_tile_pairs<OS, WithC::value>(acc, w, bc, eb);
    }
  }

  template <int OS, bool RC>
  CUFUSE_DEVICE_FN void store_tile_pairs(const float (&acc)[MA][BN / 2], const block_work& w,
                                         int bc, const Epi& eb) {
    int c_local = 0; // the chunk's number in the tile
    CUFUSE_UNROLL
    for (int ma = 0; ma < MA; ++ma) {
      const int r0 = th.atom_row(ma);
      if constexpr (SwapC) {
        // MMA rows are C's columns: a chunk is 32 MMA columns (C rows) x 64 MMA rows, held as
        // two 32 x 32 boxes of C; rows rs_row, rs_row + 1 are adjacent C columns.
        const int box = th.rs_row >> 5, rr = th.rs_row & 31;
        const auto off = [&](int cr) {
          return unsigned(box * 4096 + cr * 128 + (((rr >> 2) ^ (cr & 7)) << 4) + (rr & 3) * 4);
        };
        CUFUSE_UNROLL
        for (int ch = 0; ch < BN / 32; ++ch) {
          const unsigned buf = begin_chunk<RC>(w, bc, c_local++);
          CUFUSE_UNROLL
          for (int jj = 0; jj < 4; ++jj) {
            const int j = ch * 4 + jj, c = jj * 8 + 2 * th.q;
            const std::int64_t row = w.n0 + ch * 32 + c, col = w.m0 + r0 + th.rs_row;
            const float* a = acc[ma] + j * 4;
            pair32<RC>(eb, a[0], a[2], buf + off(c), row, col);
            pair32<RC>(eb, a[1], a[3], buf + off(c + 1), row + 1, col);
          }
          end_chunk();
          if (leader) {
            tma_store(map_c, buf, w.m0 + r0, w.n0 + ch * 32, bc);
            tma_store(map_c, buf + 4096, w.m0 + r0 + 32, w.n0 + ch * 32, bc);
            bulk_commit();
          }
        }
      } else {
        // A chunk is the atom's 64 rows x 128 bytes of columns; 16-byte units XOR-swizzled with
        // the row (the map's 128-byte swizzle), so a warp's stores hit distinct banks.
        constexpr int CW = 128 / OS;
        const int ra = th.row_a(), rb = th.row_b();
        CUFUSE_UNROLL
        for (int ch = 0; ch < BN / CW; ++ch) {
          const unsigned buf = begin_chunk<RC>(w, bc, c_local++);
          CUFUSE_UNROLL
          for (int jj = 0; jj < CW / 8; ++jj) {
            const int j = ch * (CW / 8) + jj;
            const std::int64_t row_a = w.m0 + r0 + ra, row_b = w.m0 + r0 + rb;
            const std::int64_t col = w.n0 + j * 8 + 2 * th.q;
            const float* a = acc[ma] + j * 4;
            if constexpr (OS == 2) {
              const unsigned lo = buf + unsigned(ra * 128 + ((jj ^ (ra & 7)) << 4) + 4 * th.q);
              const unsigned hi = buf + unsigned(rb * 128 + ((jj ^ (rb & 7)) << 4) + 4 * th.q);
              pair16<RC>(eb, a[0], a[1], lo, row_a, col);
              pair16<RC>(eb, a[2], a[3], hi, row_b, col);
            } else {
              const int u = 2 * jj + (th.q >> 1), within = (th.q & 1) * 8;
              pair32<RC>(eb, a[0], a[1], buf + unsigned(ra * 128 + ((u ^ (ra & 7)) << 4) + within),
                         row_a, col);
              pair32<RC>(eb, a[2], a[3], buf + unsigned(rb * 128 + ((u ^ (rb & 7)) << 4) + within),
                         row_b, col);
            }
          }
          end_chunk();
          if (leader) {
            tma_store(map_c, buf, w.n0 + ch * CW, w.m0 + r0, bc);
            bulk_commit();
          }
        }
      }
    }
  }
};

} // namespace cufuse::gemm_detail
