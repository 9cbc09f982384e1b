/// \file The mma.sync kernel for fp16 / bf16 / TF32 operands of any alignment (variants named
/// `_v1`): the tiles are loaded through registers, element by element or in 4-, 8- or 16-byte
/// words where the operand's base and leading dimension allow, zero past the matrices, and
/// stored to the same shared stages as the cp.async kernel (kernel/mma.cuh), whose fragment
/// reads, warp step and epilogue it reuses. The loads of a tile are issued when the tile before
/// it starts and stored when it ends, so their latency hides behind that tile's MMAs.
#pragma once

#include "mma.cuh"

#include <cstdint>

namespace cufuse::gemm_detail {

/// Whether `Cfg` is an mma.sync configuration that loads through registers (mma_config::elem).
template <class Cfg>
constexpr bool elem_loads() {
  if constexpr (requires { Cfg::elem; }) {
    return Cfg::elem;
  } else {
    return false;
  }
}

/// Elements per global load an operand of `Size`-byte elements allows, up to 16 bytes (an
/// aligned operand next to an unaligned one loads whole chunks): its base address and its
/// leading dimension in bytes must both be multiples of the load.
template <int Size>
CUFUSE_HOST_DEVICE inline int elem_load_width(const void* base, std::int64_t ld) {
  const auto a = reinterpret_cast<std::uintptr_t>(base);
  for (int w = 16 / Size; w > 1; w /= 2) {
    if (a % std::uintptr_t(w * Size) == 0 && ld % w == 0) {
      return w;
    }
  }
  return 1;
}

/// One operand's share of a stage tile (MN x BK elements; KContig: stored [MN][BK], else
/// [BK][MN]) for this thread: `count` 16-byte chunks (8 fp16 / bf16 or 4 fp32 elements), rows R
/// apart, held in registers between fetch and put.
template <class Cfg, int MN, bool KContig>
struct elem_tile_loader {
  using T = typename Cfg::element;
  static constexpr int size = int(sizeof(T));
  static_assert(size == 2 || size == 4, "cufuse: the any-alignment mma tiles are fp16 / bf16 / "
                                        "TF32");
  using word = std::conditional_t<size == 2, unsigned short, unsigned>;
  static constexpr int E = Cfg::chunk; // elements of a 16-byte chunk
  static constexpr int row_len = KContig ? Cfg::BK : MN;
  static constexpr int rows = KContig ? MN : Cfg::BK;
  static constexpr bool tf32_mn = Cfg::tf32 && !KContig; // padded rows (see swz)
  static constexpr int pitch = tf32_mn ? row_len + 8 : row_len;
  static constexpr int per_row = row_len / E;
  static constexpr int total = rows * per_row;
  static constexpr int R = Cfg::threads / per_row;
  static constexpr int count = total / Cfg::threads;
  static_assert(Cfg::threads % per_row == 0 && total % Cfg::threads == 0 && (R % 8 == 0 || tf32_mn),
                "cufuse: an any-alignment mma tile's chunks must split evenly into whole "
                "swizzle periods (padded TF32 rows have none)");

  const word* g; // the operand, as words of its element size
  std::int64_t ld;
  int width;  // elements per load: elem_load_width
  int r0, c0; // this thread's first chunk in the stage tile
  int dst;    // its element offset in a stage; chunk i is i * R rows further
  uint4 v[count];

  CUFUSE_DEVICE_FN elem_tile_loader(const T* base, std::int64_t ld_, int tid)
      : g(reinterpret_cast<const word*>(base)), ld(ld_), width(elem_load_width<size>(base, ld_)),
        r0(tid / per_row), c0((tid % per_row) * E),
        dst(swz<row_len, E, tf32_mn>(tid / per_row, (tid % per_row) * E)) {}

  /// Loads this thread's chunks of the tile at (mn0, k0) into registers; elements at or past
  /// (mn_end, k_end) are zero.
  CUFUSE_DEVICE_FN void fetch(int mn0, int k0, int mn_end, int k_end) {
    if constexpr (E == 8) {
      if (width == 8) {
        fetch_w<8>(mn0, k0, mn_end, k_end);
        return;
      }
    }
    if (width == 4) {
      fetch_w<4>(mn0, k0, mn_end, k_end);
    } else if (width == 2) {
      fetch_w<2>(mn0, k0, mn_end, k_end);
    } else {
      fetch_w<1>(mn0, k0, mn_end, k_end);
    }
  }

  /// Element j of a chunk goes to bits 16 (j % 2) of word j / 2 (2-byte elements) or is word j.
  CUFUSE_DEVICE_FN static void place(unsigned (&w)[4], int j, unsigned e) {
    if constexpr (size == 2) {
      w[j >> 1] |= e << (16 * (j & 1));
    } else {
      w[j] = e;
    }
  }

  template <int W>
  CUFUSE_DEVICE_FN void fetch_w(int mn0, int k0, int mn_end, int k_end) {
    constexpr int bytes = W * size; // of one load
    CUFUSE_UNROLL
    for (int i = 0; i < count; ++i) {
      const int r = r0 + i * R;
      // The chunk's row (mn for KContig, k otherwise) and its first column along the row.
      const int outer = (KContig ? mn0 : k0) + r, inner = (KContig ? k0 : mn0) + c0;
      const int outer_end = KContig ? mn_end : k_end, inner_end = KContig ? k_end : mn_end;
      const word* row = g + std::int64_t(outer) * ld + inner;
      unsigned w[4] = {};
      if (outer < outer_end) {
        CUFUSE_UNROLL
        for (int j = 0; j < E; j += W) {
          if constexpr (W == 1) {
            place(w, j, inner + j < inner_end ? unsigned(row[j]) : 0u);
          } else if (inner + j + W <= inner_end) {
            const int q = j * size / 4; // the first 32-bit word the load fills
            if constexpr (bytes == 4) {
              w[q] = *reinterpret_cast<const unsigned*>(row + j);
            } else if constexpr (bytes == 8) {
              const uint2 x = *reinterpret_cast<const uint2*>(row + j);
              w[q] = x.x;
              w[q + 1] = x.y;
            } else {
              const uint4 x = *reinterpret_cast<const uint4*>(row + j);
              w[0] = x.x;
              w[1] = x.y;
              w[2] = x.z;
              w[3] = x.w;
            }
          } else { // the load crosses the end: element by element
            CUFUSE_UNROLL
            for (int q = 0; q < W; ++q) {
              place(w, j + q, inner + j + q < inner_end ? unsigned(row[j + q]) : 0u);
            }
          }
        }
      }
      v[i] = make_uint4(w[0], w[1], w[2], w[3]);
    }
  }

  /// Stores the fetched chunks into a stage tile.
  CUFUSE_DEVICE_FN void put(T* s) const {
    CUFUSE_UNROLL
    for (int i = 0; i < count; ++i) {
      *reinterpret_cast<uint4*>(s + dst + i * R * pitch) = v[i];
    }
  }
};

/// C = epilogue(op(A) op(B)) on mma.sync for fp16 / bf16 / TF32 operands of any alignment: one
/// block per BM x BN tile, an S-stage ring in shared memory filled through registers (see the file
/// comment), the warp step and epilogue of the cp.async kernel.
/// Swap: TF32 NN, run as C^T = B^T A^T (TT, operands exchanged by the launcher; kernel_of), C
/// written as stored, as the cp.async kernel does.
template <class Cfg, bool TA, bool TB, class Epi, bool Swap = false>
__global__ void __launch_bounds__(Cfg::threads, Cfg::min_blocks)
    mma_elem_gemm_kernel(gemm_args p_in, const Epi epi) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
  static_assert(Cfg::splits == 1 && !Cfg::tma,
                "cufuse: the any-alignment mma tiles have neither split-K nor TMA");
  using T = typename Cfg::element;
  const gemm_args& p = p_in;
  constexpr int BM = Cfg::BM, BN = Cfg::BN, BK = Cfg::BK, S = Cfg::stages;
  extern __shared__ __align__(128) unsigned char mma_smem[];
  using LA = elem_tile_loader<Cfg, BM, !TA>;
  using LB = elem_tile_loader<Cfg, BN, TB>;
  constexpr int a_elems = LA::rows * LA::pitch, b_elems = LB::rows * LB::pitch; // (+ TF32 pad)
  using storage = stage_ring<T, S, a_elems, b_elems>;
  static_assert(sizeof(storage) <= Cfg::smem_bytes,
                "cufuse: mma stages overflow the shared memory");
  storage& ring = *reinterpret_cast<storage*>(mma_smem);

  const block_work w = locate_block<BM, BN, int(sizeof(T)), 2>(p);
  const int tid = static_cast<int>(threadIdx.x);
  const int lane = tid & 31, warp = tid >> 5;
  const int wm = warp / Cfg::WN, wn = warp % Cfg::WN;
  LA la(reinterpret_cast<const T*>(w.a), p.lda, tid);
  LB lb(reinterpret_cast<const T*>(w.b), p.ldb, tid);

  float acc[Cfg::MI][Cfg::NI][4];
  zero_acc(acc);
  const int tiles = w.k_tiles<BK>();
  auto fetch = [&](int t) {
    const int k0 = w.k_begin + t * BK;
    la.fetch(w.m0, k0, p.m, w.k_end);
    lb.fetch(w.n0, k0, p.n, w.k_end);
  };
  auto put = [&](int st) {
    la.put(ring.a[st]);
    lb.put(ring.b[st]);
  };
  CUFUSE_UNROLL
  for (int s = 0; s < S - 1; ++s) {
    if (s < tiles) {
      fetch(s);
      put(s);
    }
  }
  using L = mma_frag_layout<Cfg, TA, TB>;
  const int a_base = L::a_base(wm, lane), b_base = L::b_base(wn, lane);
  constexpr int KS = BK / Cfg::MMA_K;
  static_assert(KS % 2 == 0, "cufuse: BK must hold an even number of MMA k-steps");
  constexpr unsigned a_stage = a_elems * sizeof(T), b_stage = b_elems * sizeof(T);
  const unsigned s_a = smem_addr(mma_smem), s_b = s_a + unsigned(offsetof(storage, b));
  unsigned fa[2][Cfg::MI][4];
  unsigned fb[2][Cfg::NI][2];
  __syncthreads();
  if (tiles > 0) {
    mma_fragments<Cfg, TA, TB>(s_a, s_b, ring.a[0], ring.b[0], a_base, b_base, 0, fa[0], fb[0]);
  }
  int rs = 0;     // the stage this tile reads
  int ws = S - 1; // the stage it refills (last read before the previous tile's barrier)
  for (int t = 0; t < tiles; ++t) {
    const unsigned ra = s_a + unsigned(rs) * a_stage, rb = s_b + unsigned(rs) * b_stage;
    const T* pa = ring.a[rs];
    const T* pb = ring.b[rs];
    const int refill = ws;
    const bool more = t + S - 1 < tiles;
    rs = rs + 1 == S ? 0 : rs + 1;
    CUFUSE_UNROLL
    for (int ks = 0; ks < KS; ++ks) {
      if (ks == 0 && more) {
        fetch(t + S - 1);
      }
      const bool last = ks + 1 == KS; // the next step is step 0 of the next stage
      if (last) {
        if (more) {
          put(refill);
        }
        __syncthreads();
      }
      const unsigned na = last ? s_a + unsigned(rs) * a_stage : ra;
      const unsigned nb = last ? s_b + unsigned(rs) * b_stage : rb;
      const T* npa = last ? ring.a[rs] : pa;
      const T* npb = last ? ring.b[rs] : pb;
      mma_step<Cfg, TA, TB>(acc, fa[ks & 1], fb[ks & 1], na, nb, npa, npb, a_base, b_base,
                            last ? 0 : ks + 1, fa[(ks + 1) & 1], fb[(ks + 1) & 1]);
    }
    ws = ws + 1 == S ? 0 : ws + 1;
  }
  mma_epilogue<Cfg, TA, TB, Swap>(acc, mma_smem, p, p_in, w, epi, tid);
#else
  __trap(); // never launched: the host checks the kernel's binary architecture first
#endif
}

} // namespace cufuse::gemm_detail
