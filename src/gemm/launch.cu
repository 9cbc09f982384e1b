/// \file One call of one variant: the kernel arguments, and for split-K the workspace from
/// the device's pool, the counters and (8 or more splits) the reduction kernel.
#include "engine.hpp"

#include <cufuse/core/error.hpp>

#include <algorithm>
#include <string>

namespace cufuse::gemm_detail {

void launch(int vi, const problem& p, const device_state& d, cudaStream_t stream,
            const fused_call* f) {
  const variant& v = registry()[vi];
  if (v.packs >= 0) {
    launch_packed(vi, p, d, stream, f);
    return;
  }
  const launch_fn run = f != nullptr ? f->kernels[vi] : v.launch;
  const void* epi = f != nullptr ? f->epi : nullptr;
  const int sms = p.sm_count > 0 ? std::min(p.sm_count, d.sms) : d.sms;
  const auto [splits, chunk] = split_plan(v, p);
  gemm_args args{};
  args.a = p.a.ptr;
  args.b = p.b.ptr;
  args.lda = p.a.ld;
  args.ldb = p.b.ld;
  args.stride_a = p.a.batch_stride;
  args.stride_b = p.b.batch_stride;
  args.m = static_cast<int>(p.m);
  args.n = static_cast<int>(p.n);
  args.k = static_cast<int>(p.k);
  args.batch = static_cast<int>(p.batch);
  args.splits = splits;
  args.k_chunk = chunk;
  const dim3 grid(static_cast<unsigned>(ceil_div(p.m, v.bm) * ceil_div(p.n, v.bn)), 1,
                  static_cast<unsigned>(p.batch * splits));
  gemm_args out = args;
  out.c = p.c;
  out.ldc = p.ldc;
  out.stride_c = p.stride_c;
  out.split_stride_c = 0;
  out.alpha = p.alpha;
  out.beta = p.beta;
  out.out_type = int(p.out);
  if (v.cluster_split || v.splits == 1 || (splits == 1 && v.fixup)) {
    // Unsplit, or split over a thread-block cluster that sums the tile itself (the launcher
    // sets the kernel's split count to the cluster's size; `chunk` is each block's K range).
    // A configuration the reduction kernel finishes always writes partials (split_k.cuh,
    // writes_partials), even in the one split a short K leaves it (its K >= splits x BK rule
    // prevents that).
    CUFUSE_CUDA_CHECK_MSG(run(out, epi, p.a.trans, p.b.trans, grid, sms, stream),
                          "preparing the launch of GEMM variant " + v.name);
    CUFUSE_CUDA_CHECK_MSG(cudaGetLastError(), "launching GEMM variant " + v.name);
    return;
  }
  // Split-K. Up to 4 splits: one launch; each block writes its partial tile to the workspace
  // and the last split of a tile to arrive (a counter per tile) sums them and writes C
  // (split_k.cuh splitk_fixup). More splits: the blocks write partials only and a reduction
  // kernel sums them over the whole GPU, since one block per tile reading 8 or 16 partials
  // was slower than the second launch (bench/JOURNAL.md g27).
  const bool fixup = v.fixup; // the kernels compile one or the other (finishes_in_kernel)
  if (!fixup && f != nullptr) {
    throw error("cufuse::gemm: internal: an expression epilogue ran a variant of more than 4 "
                "splits (" +
                v.name + "), whose reduction kernel has the standard epilogue only");
  }
  // Counters for every output tile of the grid the kernel runs, in the orientation it runs the
  // problem (variant.hpp: runs_transposed).
  const std::int64_t tiles = oriented_tiles(v, p.m, p.n, p.a.trans, p.b.trans) * p.batch;
  const std::size_t ws_bytes = static_cast<std::size_t>(p.m * p.n * p.batch * splits * 4);
  const std::size_t count_at = (ws_bytes + 255) / 256 * 256;
  const std::size_t bytes =
      fixup ? count_at + static_cast<std::size_t>(tiles) * sizeof(unsigned) : ws_bytes;
  void* ws = nullptr;
  const std::string what = "the " + std::to_string(bytes) + "-byte split-K workspace of " + v.name;
  CUFUSE_CUDA_CHECK_MSG(d.pool ? cudaMallocFromPoolAsync(&ws, bytes, d.pool, stream)
                               : cudaMallocAsync(&ws, bytes, stream),
                        "allocating " + what);
  out.ws = static_cast<float*>(ws);
  cudaError_t e = cudaSuccess;
  if (fixup) {
    out.ws_count = reinterpret_cast<unsigned*>(static_cast<char*>(ws) + count_at);
    e = cudaMemsetAsync(out.ws_count, 0, bytes - count_at, stream);
  }
  if (e == cudaSuccess) {
    e = run(out, epi, p.a.trans, p.b.trans, grid, sms, stream);
  }
  if (e == cudaSuccess) {
    e = cudaGetLastError();
  }
  if (e == cudaSuccess && !fixup) {
    e = launch_splitk_reduce(out.ws, out, static_cast<int>(p.batch), d.sms, stream);
  }
  const cudaError_t freed = cudaFreeAsync(ws, stream);
  CUFUSE_CUDA_CHECK_MSG(e, "launching GEMM variant " + v.name);
  CUFUSE_CUDA_CHECK_MSG(freed, "freeing " + what);
}

} // namespace cufuse::gemm_detail
