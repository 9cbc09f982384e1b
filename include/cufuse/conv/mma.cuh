/// \file conv2d's tensor-core implicit GEMM: the GEMM's mma.sync pieces (gemm/kernel/mma.cuh:
/// the swizzled stage tiles, the fragment reads, the warp step and the epilogue through shared
/// memory) over an A tile that cp.async gathers from NHWC input, zero-filled outside the padded
/// input, and a B tile that is the KRSC filter read as a [k, r s c] matrix.
///
/// Requirements (conv_detail::mma_eligible checks them on the host): X's channels contiguous,
/// C and X's other strides multiples of a 16-byte chunk (8 fp16 / bf16, 4 fp32 elements), so
/// that each chunk of the reduction lies inside one filter tap; W dense along r, s, c; X and W
/// 16-byte aligned; X's span and the output's pixels below 2^31.
#pragma once

#include "../gemm/arch/sm90.cuh"
#include "../gemm/kernel/mma.cuh"
#include "implicit_gemm.cuh"

#include <climits>

namespace cufuse::conv_detail {

/// The tensor-core conv tiles: BM output pixels x BN output channels x BK reduction elements,
/// 2 x 2 warps, `Stages` cp.async stages, the reduction split over `Splits` blocks (whose fp32
/// partial tiles the last to finish sums: the GEMM's split-K fixup). T: __half, __nv_bfloat16,
/// or float (TF32 math).
template <class T, int BM, int BN, int BK, int Stages, int Splits = 1>
using mma_conv_config = gemm_detail::mma_config<T, BM, BN, BK, 2, 2, Stages, Splits>;

/// The input windows of a thread's N rows of an A tile: pixels m0 + r + i R (i < N).
template <int N>
struct window_rows {
  int pix[N]; // X's element offset of each pixel's window origin (padding: negative)
  int h0[N];  // the window origin's input row; pixels past the output: far below zero
  int w0[N];  // ... and column

  CUFUSE_DEVICE_FN void init(const conv_args& a, index_t m0, int r, int R) {
    const index_t rows = a.n * a.p * a.q;
    CUFUSE_UNROLL
    for (int i = 0; i < N; ++i) {
      const index_t m = m0 + r + i * R;
      if (m < rows) {
        const pixel_origin o = origin_of(a, m);
        pix[i] = int(o.xbase + o.h0 * a.xs[1] + o.w0 * a.xs[2]);
        h0[i] = int(o.h0);
        w0[i] = int(o.w0);
      } else {
        pix[i] = 0;
        h0[i] = INT_MIN / 2;
        w0[i] = 0;
      }
    }
  }
};

/// One thread's share of the gathered A tile (BM pixels x BK reduction elements, stored as the
/// GEMM's K-contiguous [BM][BK] tile, swizzled): `count` 16-byte chunks at pixel rows R apart,
/// all in one reduction column, so under one filter tap, which moves by BK every tile.
template <class Cfg>
struct conv_gather {
  using T = typename Cfg::element;
  static constexpr int E = Cfg::chunk, BK = Cfg::BK, BM = Cfg::BM;
  static constexpr int per_row = BK / E;
  static constexpr int R = Cfg::threads / per_row;
  static constexpr int count = BM / R;
  static_assert(Cfg::threads % per_row == 0 && BM % R == 0 && R % 8 == 0,
                "cufuse: a conv A tile's copies must split evenly into whole swizzle periods");

  window_rows<count> px; // the input windows of this thread's pixels
  int dst;               // element offset of copy 0 in a stage
  int fr, fs, ch;        // the filter tap of this thread's column in the next tile

  /// The gather of pixels m0 .. m0 + BM - 1 from reduction element k0 on.
  CUFUSE_DEVICE_FN conv_gather(const conv_args& a, index_t m0, int k0, int tid) {
    const int r = tid / per_row, c = (tid % per_row) * E;
    dst = gemm_detail::swz<BK, E, false>(r, c);
    px.init(a, m0, r, R);
    const filter_tap t = tap_of(a, k0 + c);
    fr = int(t.fr);
    fs = int(t.fs);
    ch = int(t.ch);
  }

  /// Issues this thread's copies of the next tile into the stage at shared byte address
  /// `stage` (zero where the tap lies in the padding, past the filter or past the pixels),
  /// then moves the tap on by BK reduction elements.
  CUFUSE_DEVICE_FN void copy(const conv_args& a, const T* x, unsigned stage) {
    const bool k_ok = fr < int(a.r);
    const int dh = fr * int(a.dh), dw = fs * int(a.dw);
    const index_t tap = index_t(dh) * a.xs[1] + index_t(dw) * a.xs[2] + ch;
    CUFUSE_UNROLL
    for (int i = 0; i < count; ++i) {
      const int hh = px.h0[i] + dh, ww = px.w0[i] + dw;
      const bool ok = k_ok && unsigned(hh) < unsigned(a.h) && unsigned(ww) < unsigned(a.wd);
      const T* src = ok ? x + (px.pix[i] + tap) : x;
      gemm_detail::cp_async16_at(stage + unsigned(dst + i * R * BK) * unsigned(sizeof(T)), src,
                                 ok ? 16 : 0);
    }
    ch += BK;
    while (ch >= int(a.c)) { // C < BK crosses several taps
      ch -= int(a.c);
      if (++fs == int(a.s)) {
        fs = 0;
        ++fr;
      }
    }
  }
};

/// A configuration whose kernel gathers element by element (conv_gather_elem) instead of in
/// 16-byte cp.async chunks: any channel count, layout and alignment, 16-bit types.
template <class Base>
struct elem_gather_config : Base {
  static constexpr bool elem_gather = true;
};
template <class Cfg>
inline constexpr bool elem_gather_v = requires { Cfg::elem_gather; };

/// Channels per filter tap in the reduction of the element gather: C padded to 4 (C <= 4: a
/// 16-byte chunk holds two taps) or to a multiple of 8 (a chunk lies inside one tap).
CUFUSE_HOST_DEVICE inline int padded_channels(index_t c) {
  return c <= 4 ? 4 : int((c + 7) / 8 * 8);
}

/// The gather of the element-gather variant: this thread's chunks of the A tile (pixels) and of
/// the B tile (filter rows), in the layouts conv_gather and the GEMM's B copy use. Each element
/// is loaded on its own (zero in the padding, in the padded channels and past the filter) into
/// registers when a tile starts (fetch) and stored to its stage when it ends (put), so the
/// loads' latency hides behind the tile's MMAs.
template <class Cfg>
struct conv_gather_elem {
  using T = typename Cfg::element;
  static_assert(sizeof(T) == 2, "cufuse: the element gather is for fp16 / bf16");
  static constexpr int E = 8, BK = Cfg::BK, BM = Cfg::BM, BN = Cfg::BN;
  static constexpr int per_row = BK / E;
  static constexpr int R = Cfg::threads / per_row;
  static constexpr int ca = BM / R, cb = BN / R;
  static_assert(Cfg::threads % per_row == 0 && BM % R == 0 && BN % R == 0 && R % 8 == 0,
                "cufuse: a conv tile's chunks must split evenly into whole swizzle periods");

  window_rows<ca> px;   // the input windows of this thread's pixels
  index_t wrow[cb];     // W's offset of each filter row; -1 past K
  int dst;              // element offset of chunk 0 in a stage (A and B alike)
  int fr, fs, ch;       // the (first) tap and padded channel of this thread's column
  int cp;               // padded_channels(C)
  uint4 va[ca], vb[cb]; // the fetched chunks

  CUFUSE_DEVICE_FN conv_gather_elem(const conv_args& a, index_t m0, int n0, int tid) {
    const int r = tid / per_row, c = (tid % per_row) * E;
    dst = gemm_detail::swz<BK, E, false>(r, c);
    px.init(a, m0, r, R);
    CUFUSE_UNROLL
    for (int i = 0; i < cb; ++i) {
      const index_t k = index_t(n0) + r + i * R;
      wrow[i] = k < a.k ? k * a.ws[0] : -1;
    }
    cp = padded_channels(a.c);
    const int tap = c / cp;
    ch = c % cp;
    fr = tap / int(a.s);
    fs = tap % int(a.s);
  }

  /// Loads this thread's chunks of the next tile into registers, then moves on by BK.
  CUFUSE_DEVICE_FN void fetch(const conv_args& a, const T* x, const T* w) {
    const unsigned short* xe = reinterpret_cast<const unsigned short*>(x);
    const unsigned short* we = reinterpret_cast<const unsigned short*>(w);
    // The taps of a chunk: (fr, fs) and, with two taps per chunk (cp = 4), the next one.
    int tr[2] = {fr, fr}, ts[2] = {fs, fs + 1};
    if (ts[1] == int(a.s)) {
      ts[1] = 0;
      ++tr[1];
    }
    auto element = [&](int j, int& q, int& cj) {
      q = cp == 4 ? j >> 2 : 0;
      cj = cp == 4 ? (j & 3) : ch + j;
    };
    CUFUSE_UNROLL
    for (int i = 0; i < ca; ++i) {
      unsigned v[E / 2] = {};
      CUFUSE_UNROLL
      for (int j = 0; j < E; ++j) {
        int q = 0, cj = 0;
        element(j, q, cj);
        const int dh = tr[q] * int(a.dh), dw = ts[q] * int(a.dw);
        const int hh = px.h0[i] + dh, ww = px.w0[i] + dw;
        const bool ok = tr[q] < int(a.r) && cj < int(a.c) && unsigned(hh) < unsigned(a.h) &&
                        unsigned(ww) < unsigned(a.wd);
        const unsigned e =
            ok ? xe[index_t(px.pix[i]) + dh * a.xs[1] + dw * a.xs[2] + cj * a.xs[3]] : 0u;
        v[j >> 1] |= e << (16 * (j & 1));
      }
      va[i] = make_uint4(v[0], v[1], v[2], v[3]);
    }
    CUFUSE_UNROLL
    for (int i = 0; i < cb; ++i) {
      unsigned v[E / 2] = {};
      CUFUSE_UNROLL
      for (int j = 0; j < E; ++j) {
        int q = 0, cj = 0;
        element(j, q, cj);
        const bool ok = wrow[i] >= 0 && tr[q] < int(a.r) && cj < int(a.c);
        const unsigned e = ok ? we[wrow[i] + tr[q] * a.ws[1] + ts[q] * a.ws[2] + cj * a.ws[3]] : 0u;
        v[j >> 1] |= e << (16 * (j & 1));
      }
      vb[i] = make_uint4(v[0], v[1], v[2], v[3]);
    }
    ch += BK;
    while (ch >= cp) {
      ch -= cp;
      if (++fs == int(a.s)) {
        fs = 0;
        ++fr;
      }
    }
  }

  /// Stores the fetched chunks into a stage's A and B tiles.
  CUFUSE_DEVICE_FN void put(T* sa, T* sb) const {
    CUFUSE_UNROLL
    for (int i = 0; i < ca; ++i) {
      *reinterpret_cast<uint4*>(sa + dst + i * R * BK) = va[i];
    }
    CUFUSE_UNROLL
    for (int i = 0; i < cb; ++i) {
      *reinterpret_cast<uint4*>(sb + dst + i * R * BK) = vb[i];
    }
  }
};

/// The wgmma tiles (sm_90a, fp16 / bf16): BM / 64 warpgroups over BM output pixels x BN output
/// channels (BN = 64 or 128), 64-element reduction steps. Each warp reads its 16 rows of A with
/// ldmatrix, as the mma.sync tiles do (so the gather and the halo serve both), and issues
/// wgmma with A from registers and B (the filter tile, 128-byte swizzled rows of 64 elements,
/// the layout the cp.async tile copy writes) from shared memory. As an mma.sync configuration it
/// is BM / 16 warps of 16 x BN warp tiles: the accumulators of m64nBN are those of one m16 row
/// of m16n8 blocks per warp, so the mma.sync epilogue stores them.
template <class T, int BM_, int BN_, int Stages>
struct wgmma_conv_config : gemm_detail::mma_config<T, BM_, BN_, 64, BM_ / 16, 1, Stages> {
  using base = gemm_detail::mma_config<T, BM_, BN_, 64, BM_ / 16, 1, Stages>;
  static constexpr bool wgmma = true;
  /// The ring starts on a 1024-byte boundary (the swizzle's period).
  static constexpr int smem_bytes = base::ring_bytes + 1024;
  static constexpr int min_blocks = smem_bytes <= 113 * 1024 ? 2 : 1;
  static_assert(sizeof(T) == 2 && BM_ % 64 == 0 && (BN_ == 64 || BN_ == 128) && Stages >= 3,
                "cufuse: wgmma conv tiles are fp16 / bf16, whole warpgroups of 64 pixels, 64 or "
                "128 channels, at least 3 stages");
};
template <class Cfg>
inline constexpr bool wgmma_conv_v = requires { Cfg::wgmma; };

/// The halo tiles of 3x3-like convolutions with stride 1 (any R x S with R S <= 32, dilation 1,
/// the output as large as the input: P = H, Q = W). There, output pixel m's tap (r, s) reads
/// input pixel m + (r - ph) W + (s - pw), where it lies in the image: the A tiles of all R S
/// taps of BM consecutive pixels are row windows of one "halo" of BM + (R - 1) W + S - 1
/// consecutive input pixels. A block loads each BK-channel chunk of its halo once (about 2x BM
/// rows at W = 56, instead of R S x BM gathered rows) and reads every tap's fragments from it,
/// ldmatrix taking each lane's row from the halo, or from a zero row where the tap falls in
/// the padding. `Extra`: the largest (R - 1) W + S - 1 the halo buffers hold.
template <class Base, int Extra>
struct halo_config : Base {
  using T = typename Base::element;
  static constexpr bool halo = true;
  static constexpr int halo_extra = Extra;
  static constexpr int halo_rows = Base::BM + Extra;
  static constexpr int b_stage_bytes = Base::BN * Base::BK * int(sizeof(T));
  static constexpr int halo_bytes = halo_rows * Base::BK * int(sizeof(T));
  /// Stages of B, two halo buffers (a chunk's taps read one while the next chunk's fills the
  /// other) and 16 zero bytes; the epilogue stages C in the same memory.
  static constexpr int ring_bytes = Base::stages * b_stage_bytes + 2 * halo_bytes + 16;
  static constexpr int smem_bytes = ring_bytes + (wgmma_conv_v<Base> ? 1024 : 0);
  static constexpr int min_blocks = wgmma_conv_v<Base>
                                        ? (smem_bytes <= 113 * 1024 ? 2 : 1)
                                        : (Base::threads == 128 && smem_bytes <= 72 * 1024 ? 3 : 1);
  static_assert(Base::splits == 1, "cufuse: the halo tiles have no split-K");
  static_assert(smem_bytes <= 227 * 1024, "cufuse: a halo tile's stages overflow shared memory");
};
template <class Cfg>
inline constexpr bool halo_v = requires { Cfg::halo; };

/// What the warp step reads for one tile of the reduction: the stages' shared addresses (and
/// pointers), this lane's A fragment base (mma_frag_layout) and which A rows are zero.
template <class T, class Rows>
struct stage_view {
  unsigned ra, rb;
  const T* pa;
  const T* pb;
  int a_base;
  Rows rows;
};

/// The A rows of one tap of a halo tile: bit mi of `bits`: this lane's row of fragment mi lies
/// in the image (else it reads the 16 zero bytes at `zero`).
struct halo_rows {
  static constexpr bool zeroes = true;
  unsigned bits, zero;
  CUFUSE_DEVICE_FN bool keep(int mi) const { return (bits >> mi & 1u) != 0; }
};

/// The halo tile's loads and reads (see halo_config). Tiles of the reduction go chunk by chunk
/// (BK channels), all taps of a chunk in turn: the chunk's first tile also loads its halo,
/// into buffer chunk & 1. That buffer was last read by the tiles of chunk - 2, all done
/// before the load goes out (S - 1 tiles ahead) when R S >= S - 1 (mma_eligible's halo rule).
template <class Cfg>
struct halo_tiles {
  using T = typename Cfg::element;
  static constexpr int BM = Cfg::BM, BN = Cfg::BN, BK = Cfg::BK, E = Cfg::chunk, MI = Cfg::MI;
  static constexpr int per_row = BK / E;

  T* sb;                            // B stage 0
  unsigned s_b, s_halo, zero;       // shared addresses: B stages, halo buffers, the zero row
  int g0;                           // input pixel of halo row 0 (negative: before the first image)
  int halo_copies;                  // (BM + (R - 1) W + S - 1) x per_row 16-byte copies
  int lrow, lcol;                   // this lane's A row (warp tile included) and column (ldmatrix)
  unsigned mask[MI];                // bit r S + s: the lane's pixel of fragment mi sees tap (r, s)
  int load_chunk = 0, load_tap = 0; // the next tile load() fills
  int view_chunk = 0, view_tap = 0, view_fr = 0, view_fs = 0; // the next tile view() reads

  CUFUSE_DEVICE_FN halo_tiles(const conv_args& a, index_t m0, unsigned char* smem, int wm,
                              int lane) {
    sb = reinterpret_cast<T*>(smem);
    s_b = gemm_detail::smem_addr(smem);
    s_halo = s_b + unsigned(Cfg::stages * Cfg::b_stage_bytes);
    zero = s_halo + unsigned(2 * Cfg::halo_bytes);
    g0 = int(m0 - a.ph * a.wd - a.pw);
    halo_copies = int(BM + (a.r - 1) * a.wd + a.s - 1) * per_row;
    // ldmatrix rows of fragment 0 and the lane's column (mma_frag_layout::a_base, K-contiguous).
    lrow = wm * Cfg::WTM + (Cfg::tf32 ? (lane & 7) + ((lane >> 3) & 1) * 8 : lane & 15);
    lcol = Cfg::tf32 ? ((lane >> 4) & 1) * 4 : (lane >> 4) * 8;
    const int pixels = int(a.n * a.h * a.wd), hw = int(a.h * a.wd);
    CUFUSE_UNROLL
    for (int mi = 0; mi < MI; ++mi) {
      const int m = int(m0) + lrow + mi * 16;
      unsigned bits = 0;
      if (m < pixels) {
        const int rem = m % hw, p = rem / int(a.wd), q = rem % int(a.wd);
        for (int fr = 0; fr < int(a.r); ++fr) {
          for (int fs = 0; fs < int(a.s); ++fs) {
            const bool in = unsigned(p + fr - int(a.ph)) < unsigned(a.h) &&
                            unsigned(q + fs - int(a.pw)) < unsigned(a.wd);
            bits |= unsigned(in) << (fr * int(a.s) + fs);
          }
        }
      }
      mask[mi] = bits;
    }
  }

  /// Zeroes the zero row (before the main loop's first barrier).
  CUFUSE_DEVICE_FN void clear(int tid) const {
    if (tid < 4) {
      asm volatile("st.shared.u32 [%0], %1;\n" ::"r"(zero + 4u * unsigned(tid)), "r"(0u));
    }
  }

  /// Issues the next tile's copies into B stage `st` (and its chunk's halo on its first tap).
  CUFUSE_DEVICE_FN void load(const conv_args& a, const T* x, const T* w, int n0, int st, int tid) {
    const int c0 = load_chunk * BK;
    if (load_tap == 0) {
      const unsigned buf = s_halo + unsigned((load_chunk & 1) * Cfg::halo_bytes);
      const int pixels = int(a.n * a.h * a.wd), xs = int(a.xs[2]);
      for (int v = tid; v < halo_copies; v += Cfg::threads) {
        const int row = v / per_row, col = (v % per_row) * E;
        const int g = g0 + row;
        const bool ok = unsigned(g) < unsigned(pixels);
        const T* src = ok ? x + (g * xs + c0 + col) : x;
        gemm_detail::cp_async16_at(buf + unsigned(gemm_detail::swz<BK, E, false>(row, col)) *
                                             unsigned(sizeof(T)),
                                   src, ok ? 16 : 0);
      }
    }
    const int red = int(a.r * a.s * a.c);
    gemm_detail::mma_load_tile<Cfg, BN, true>(sb + st * BN * BK, w, a.ws[0], n0,
                                              load_tap * int(a.c) + c0, int(a.k), red, tid);
    if (++load_tap == int(a.r * a.s)) {
      load_tap = 0;
      ++load_chunk;
    }
  }

  /// The next tile's reads: its chunk's halo buffer, its tap's rows of it, B stage `st`.
  CUFUSE_DEVICE_FN stage_view<T, halo_rows> view(const conv_args& a, int st) {
    const int row0 = lrow + view_fr * int(a.wd) + view_fs;
    unsigned bits = 0;
    CUFUSE_UNROLL
    for (int mi = 0; mi < MI; ++mi) {
      bits |= (mask[mi] >> view_tap & 1u) << mi;
    }
    const unsigned rb = s_b + unsigned(st * Cfg::b_stage_bytes);
    stage_view<T, halo_rows> v{s_halo + unsigned((view_chunk & 1) * Cfg::halo_bytes),
                               rb,
                               nullptr,
                               nullptr,
                               gemm_detail::swz<BK, E, false>(row0, lcol),
                               halo_rows{bits, zero}};
    ++view_tap;
    if (++view_fs == int(a.s)) {
      view_fs = 0;
      if (++view_fr == int(a.r)) {
        view_fr = 0;
        view_tap = 0;
        ++view_chunk;
      }
    }
    return v;
  }
};

/// The implicit GEMM's main loop over `tiles` reduction tiles through a `stages`-deep ring:
/// load(t, st) issues tile t's copies into stage st (tiles in order), put(st) stores what the
/// element gather fetched into registers, view(st) gives the next tile's stage_view (tiles in
/// order). The mma.sync warp step of the GEMM kernels reads the fragments of the next k-step
/// between the rows of MMAs.
template <class Cfg, class Load, class Put, class View>
CUFUSE_DEVICE_FN void conv_mainloop(float (&acc)[Cfg::MI][Cfg::NI][4], int tiles, int lane, int wn,
                                    Load&& load, Put&& put, View&& view) {
  using namespace gemm_detail;
  constexpr int S = Cfg::stages;
  zero_acc(acc);
  CUFUSE_UNROLL
  for (int s = 0; s < S - 1; ++s) {
    if (s < tiles) {
      load(s, s);
      put(s);
    }
    cp_async_commit();
  }
  using L = mma_frag_layout<Cfg, false, true>;
  const int b_base = L::b_base(wn, lane);
  constexpr int KS = Cfg::BK / Cfg::MMA_K;
  static_assert(KS % 2 == 0, "cufuse: BK must hold an even number of MMA k-steps");
  unsigned fa[2][Cfg::MI][4];
  unsigned fb[2][Cfg::NI][2];
  cp_async_wait<S - 2>();
  __syncthreads();
  auto next = view(0);
  if (tiles > 0) {
    mma_fragments<Cfg, false, true>(next.ra, next.rb, next.pa, next.pb, next.a_base, b_base, 0,
                                    fa[0], fb[0], -1, next.rows);
  }
  int rs = 0;     // the stage this tile reads
  int ws = S - 1; // the stage it refills (last read before the previous tile's barrier)
  for (int t = 0; t < tiles; ++t) {
    const auto cur = next;
    const int refill = ws;
    rs = rs + 1 == S ? 0 : rs + 1;
    CUFUSE_UNROLL
    for (int ks = 0; ks < KS; ++ks) {
      if (ks == 0 && t + S - 1 < tiles) {
        load(t + S - 1, refill);
      }
      const bool last = ks + 1 == KS; // the next step is step 0 of the next stage
      if (last) {
        if (t + S - 1 < tiles) {
          put(refill);
        }
        cp_async_commit();
        cp_async_wait<S - 2>();
        __syncthreads();
        next = view(rs);
      }
      const auto& n = last ? next : cur;
      mma_step<Cfg, false, true>(acc, fa[ks & 1], fb[ks & 1], n.ra, n.rb, n.pa, n.pb, n.a_base,
                                 b_base, last ? 0 : ks + 1, fa[(ks + 1) & 1], fb[(ks + 1) & 1],
                                 n.rows);
    }
    ws = ws + 1 == S ? 0 : ws + 1;
  }
  cp_async_wait<0>();
}

/// The main loop of the wgmma tiles (wgmma_conv_config), over the same load(t, st) / view(st)
/// as conv_mainloop. One MMA group per K step, its A fragments in one of two register sets that
/// alternate (as the TF32 GEMM's register-A path, mainloop/wgmma.cuh run_rs): a step's registers
/// are rewritten only after the wait of the step after it, so a group runs while the next step's
/// fragments are read. A whole tile's fragments double-buffered instead (a group per K tile)
/// made ptxas serialize the MMAs (C7513) and ran 1-5% slower on ResNet's 3x3 layers
/// (bench/JOURNAL.md c6, c7). A tile's stage is refilled once every warpgroup's groups that read
/// it are complete (the wait of the next tile's first step, and its barrier), so loads run
/// S - 2 tiles ahead. cp.async writes shared memory through the generic proxy and wgmma reads it
/// through the async one: each thread fences its copies before the barrier.
template <class Cfg, class Load, class View>
CUFUSE_DEVICE_FN void conv_wgmma_mainloop(float (&acc)[Cfg::NI * 4], int tiles, Load&& load,
                                          View&& view) {
#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
  using namespace gemm_detail;
  using T = typename Cfg::element;
  constexpr int S = Cfg::stages, KS = Cfg::BK / 16;
  CUFUSE_UNROLL
  for (int i = 0; i < Cfg::NI * 4; ++i) {
    acc[i] = 0.0f;
  }
  CUFUSE_UNROLL
  for (int s = 0; s < S - 1; ++s) {
    if (s < tiles) {
      load(s, s);
    }
    cp_async_commit();
  }
  cp_async_wait<S - 2>();
  fence_async_shared();
  __syncthreads();
  static_assert(KS % 2 == 0, "cufuse: the K steps of a tile alternate two fragment sets");
  unsigned fs[2][4];
  int rs = 0; // the stage of tile t
  for (int t = 0; t < tiles; ++t) {
    const auto v = view(rs);
    CUFUSE_UNROLL
    for (int ks = 0; ks < KS; ++ks) {
      mma_a_fragment<Cfg, false, true>(v.ra, v.pa, v.a_base, 0, ks, fs[ks & 1], v.rows);
      wgmma_fence();
      wgmma_rs16<Cfg::BN, T>::run(acc, fs[ks & 1], wgmma_desc<false>(v.rb + unsigned(ks * 32)));
      wgmma_commit();
      wgmma_wait<1>(); // the previous step's group (at ks = 0: tile t - 1's last) is complete
    }
    // Tile t - 1's groups are complete (this warpgroup's): once every thread's copies of tile
    // t + 1 have landed and every warpgroup is past tile t - 1, its stage takes tile t + S - 1.
    cp_async_wait<S - 3>(); // tile t + 1 has landed (this thread's copies)
    fence_async_shared();
    __syncthreads(); // everyone's copies of tile t + 1; every group of tile t - 1 done
    const int refill = rs == 0 ? S - 1 : rs - 1;
    rs = rs + 1 == S ? 0 : rs + 1;
    if (t + S - 1 < tiles) {
      load(t + S - 1, refill);
    }
    cp_async_commit();
  }
  wgmma_wait<0>();
  cp_async_wait<0>();
#else
  (void)acc;
  (void)tiles;
  (void)load;
  (void)view;
#endif
}

/// Y = epilogue(X * W) on tensor cores: one block per BM x BN output tile (channel tiles of a
/// pixel tile in neighbouring blocks, which share the gathered pixels in L2), the reduction over
/// r s c in BK steps (conv_mainloop) with A gathered per tap (conv_gather, conv_gather_elem) or
/// read from the halo (halo_tiles), and the GEMM's epilogue through shared memory (`epi`: the
/// standard one or an expression over cufuse::acc).
template <class Cfg, class Epi>
__global__ void __launch_bounds__(Cfg::threads, Cfg::min_blocks)
    conv2d_mma_kernel(const conv_args a, const Epi epi) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
  using namespace gemm_detail;
  using T = typename Cfg::element;
  constexpr int BM = Cfg::BM, BN = Cfg::BN, BK = Cfg::BK, S = Cfg::stages;
  extern __shared__ __align__(128) unsigned char conv_dyn_smem[];
  constexpr bool wgmma = wgmma_conv_v<Cfg>;
#if !defined(__CUDA_ARCH_FEAT_SM90_ALL)
  if constexpr (wgmma) {
    __trap(); // never launched: the host probes for sm_90a code first
  }
#endif
  // wgmma tiles: the ring starts on a 1024-byte boundary (smem_bytes counts the slack).
  unsigned char* const conv_smem =
      conv_dyn_smem + (wgmma ? (1024u - (smem_addr(conv_dyn_smem) & 1023u)) & 1023u : 0u);

  const int tn = int((a.k + BN - 1) / BN);
  const index_t m0 = index_t(blockIdx.x / unsigned(tn)) * BM;
  const int n0 = int(blockIdx.x % unsigned(tn)) * BN;
  const int tid = static_cast<int>(threadIdx.x);
  const int lane = tid & 31, warp = tid >> 5;
  const int wm = warp / Cfg::WN, wn = warp % Cfg::WN;
  const T* x = static_cast<const T*>(a.x);
  const T* w = static_cast<const T*>(a.w);
  // The element gather pads each tap's channels (padded_channels) in the reduction.
  constexpr bool elem = elem_gather_v<Cfg>;
  const int red = int(a.r * a.s * (elem ? padded_channels(a.c) : a.c));
  // Split-K: split blockIdx.z takes its share of the reduction's tiles.
  constexpr bool split = Cfg::splits > 1;
  static_assert(!elem || !split, "cufuse: the element gather has no split-K");
  static_assert(!wgmma || (!elem && !split),
                "cufuse: the wgmma tiles gather 16-byte chunks, unsplit");
  int tiles = (red + BK - 1) / BK, t0 = 0;
  if (split && a.part != nullptr) {
    const int chunk = (tiles + a.splits - 1) / a.splits;
    t0 = ::min(tiles, int(blockIdx.z) * chunk);
    tiles = ::min(tiles, t0 + chunk) - t0;
  }

  float acc[Cfg::MI][Cfg::NI][4];
  // The wgmma main loop takes the accumulators as m64nBN's registers: the same floats.
  auto run = [&](auto&& load, auto&& put, auto&& view) {
    if constexpr (wgmma) {
      conv_wgmma_mainloop<Cfg>(*reinterpret_cast<float(*)[Cfg::NI * 4]>(&acc[0][0][0]), tiles, load,
                               view);
    } else {
      conv_mainloop<Cfg>(acc, tiles, lane, wn, load, put, view);
    }
  };
  if constexpr (halo_v<Cfg>) {
    halo_tiles<Cfg> h(a, m0, conv_smem, wm, lane);
    h.clear(tid);
    run([&](int, int st) { h.load(a, x, w, n0, st, tid); }, [](int) {},
        [&](int st) { return h.view(a, st); });
  } else {
    constexpr int a_elems = BM * BK, b_elems = BN * BK;
    using storage = stage_ring<T, S, a_elems, b_elems>;
    static_assert(sizeof(storage) <= Cfg::smem_bytes,
                  "cufuse: conv stages overflow the shared memory");
    storage& ring = *reinterpret_cast<storage*>(conv_smem);
    auto make_gather = [&] {
      if constexpr (elem) {
        return conv_gather_elem<Cfg>(a, m0, n0, tid);
      } else {
        return conv_gather<Cfg>(a, m0, t0 * BK, tid);
      }
    };
    auto gather = make_gather();
    constexpr unsigned a_stage = a_elems * sizeof(T), b_stage = b_elems * sizeof(T);
    const unsigned s_a = smem_addr(conv_smem), s_b = s_a + unsigned(offsetof(storage, b));
    const int a_base = mma_frag_layout<Cfg, false, true>::a_base(wm, lane);
    // Tiles are loaded in order (the gather's tap moves on with each). The element gather
    // fetches into registers here and stores at the end of the tile (put).
    auto load = [&](int t, int st) {
      if constexpr (elem) {
        gather.fetch(a, x, w);
      } else {
        gather.copy(a, x, s_a + unsigned(st) * a_stage);
        mma_load_tile<Cfg, BN, true>(ring.b[st], w, a.ws[0], n0, (t0 + t) * BK, int(a.k), red, tid);
      }
    };
    auto put = [&](int st) {
      if constexpr (elem) {
        gather.put(ring.a[st], ring.b[st]);
      }
    };
    auto view = [&](int st) {
      return stage_view<T, a_rows_as_staged>{s_a + unsigned(st) * a_stage,
                                             s_b + unsigned(st) * b_stage,
                                             ring.a[st],
                                             ring.b[st],
                                             a_base,
                                             {}};
    };
    run(load, put, view);
  }

  // The GEMM's epilogue over the [n p q, k] output matrix; a split block writes its partial tile
  // and the last of a tile's splits sums them, applies the epilogue and writes Y.
  gemm_args p_in{};
  p_in.c = a.y;
  p_in.ldc = a.ldy;
  p_in.m = int(a.n * a.p * a.q);
  p_in.n = int(a.k);
  p_in.k = red;
  p_in.batch = 1;
  p_in.splits = split && a.part != nullptr ? a.splits : 1;
  p_in.alpha = 1.0f;
  p_in.beta = 0.0f;
  p_in.out_type = a.out_type;
  p_in.ws = a.part;
  p_in.ws_count = a.part_count;
  const bool partial = split && a.part != nullptr;
  const gemm_args p = partial ? split_partial_args(p_in, p_in.n) : p_in;
  block_work bw{};
  bw.m0 = int(m0);
  bw.n0 = n0;
  bw.c = partial ? static_cast<void*>(a.part + std::int64_t(blockIdx.z) * p.split_stride_c) : a.y;
  mma_epilogue<Cfg, false, true, false>(acc, conv_smem, p, p_in, bw, epi, tid);
#else
  __trap(); // never launched: the host checks the device's architecture first
#endif
}

} // namespace cufuse::conv_detail
