/// \file Packing variants (variant::packs): a GEMM whose A or B rows are not 16-byte aligned
/// runs an aligned variant (TMA, cp.async) on copies of those operands with aligned rows.
///
/// The tensor-core tiles that read unaligned operands in place (kernel/mma_elem.cuh) issue a
/// load per 2, 4 or 8 bytes, and every operand element is loaded once per output tile that
/// needs it: at 4095^3 bf16 (2-byte aligned rows) they ran at 0.35-0.40x cuBLAS, bound by load
/// instructions (bench/JOURNAL.md t2). A copy loads each element once, for one pass over the
/// operand at memory speed, after which the fastest kernels of the set run as on aligned
/// operands. The copy is a second kernel and a workspace from the device's pool; the tuner
/// weighs it (heuristic.cu) against the in-place tiles, which stay for small problems.
#include "engine.hpp"

#include <cufuse/core/error.hpp>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <string>

namespace cufuse::gemm_detail {

namespace {

/// One operand's copy: `batches` matrices of `rows x cols` elements, rows `ld` and matrices
/// `stride` elements apart, to rows `dst_ld` (a multiple of 16 bytes) and matrices `dst_stride`
/// apart; each row's padding is written as zeros.
struct pack_job {
  const unsigned char* src = nullptr;
  unsigned char* dst = nullptr;
  std::int64_t rows = 0, cols = 0, ld = 0, stride = 0, dst_ld = 0, dst_stride = 0;
  std::int64_t batches = 0;
};

/// Each lane writes 16-byte chunks of a row of the copy from element loads (the source's rows
/// are unaligned; consecutive lanes read consecutive elements, so a warp's loads coalesce). A
/// warp takes one row at a time, or 32 / L rows where a row has L <= 16 chunks.
template <class E>
__global__ void __launch_bounds__(256) pack_kernel(pack_job j0, pack_job j1, int jobs) {
  constexpr int V = 16 / int(sizeof(E));
  const int lane = int(threadIdx.x % 32);
  const std::int64_t warp = (std::int64_t(blockIdx.x) * blockDim.x + threadIdx.x) / 32;
  const std::int64_t warps = std::int64_t(gridDim.x) * blockDim.x / 32;
  for (int ji = 0; ji < jobs; ++ji) {
    const pack_job j = ji == 0 ? j0 : j1;
    const std::int64_t chunks = j.dst_ld / V;
    int lanes = 1;
    while (lanes < 32 && lanes < chunks) {
      lanes *= 2;
    }
    const int per_warp = 32 / lanes;
    const std::int64_t total = j.rows * j.batches;
    for (std::int64_t r0 = warp * per_warp; r0 < total; r0 += warps * per_warp) {
      const std::int64_t row = r0 + lane / lanes;
      if (row >= total) {
        continue;
      }
      const std::int64_t b = row / j.rows, r = row - b * j.rows;
      const E* s = reinterpret_cast<const E*>(j.src) + b * j.stride + r * j.ld;
      uint4* d = reinterpret_cast<uint4*>(j.dst) + (b * j.dst_stride + r * j.dst_ld) / V;
      for (std::int64_t c = lane % lanes; c < chunks; c += lanes) {
        E v[V];
#pragma unroll
        for (int e = 0; e < V; ++e) {
          const std::int64_t col = c * V + e;
          v[e] = col < j.cols ? s[col] : E(0);
        }
        uint4 out;
        std::memcpy(&out, v, sizeof out);
        d[c] = out;
      }
    }
  }
}

pack_job job_of(const operand& from, const operand& to, std::int64_t batch) {
  pack_job j;
  j.src = static_cast<const unsigned char*>(from.ptr);
  j.dst = static_cast<unsigned char*>(const_cast<void*>(to.ptr));
  j.rows = from.rows;
  j.cols = from.cols;
  j.ld = from.ld;
  j.stride = from.batch_stride;
  j.dst_ld = to.ld;
  j.dst_stride = to.batch_stride;
  j.batches = batch > 1 && from.batch_stride != 0 ? batch : 1;
  return j;
}

cudaError_t launch_pack(const pack_job* jobs, int count, int esize, int sms, cudaStream_t stream) {
  std::int64_t warps = 0; // enough for every row of the larger copy at once
  for (int i = 0; i < count; ++i) {
    warps = std::max(warps, jobs[i].rows * jobs[i].batches);
  }
  const std::int64_t blocks =
      std::clamp<std::int64_t>(ceil_div(warps, 8), 1, std::int64_t(sms) * 8);
  const pack_job none{};
  const pack_job& second = count > 1 ? jobs[1] : none;
  if (esize == 2) {
    pack_kernel<std::uint16_t><<<unsigned(blocks), 256, 0, stream>>>(jobs[0], second, count);
  } else {
    pack_kernel<std::uint32_t><<<unsigned(blocks), 256, 0, stream>>>(jobs[0], second, count);
  }
  return cudaGetLastError();
}

} // namespace

void launch_packed(int vi, const problem& p, const device_state& d, cudaStream_t stream,
                   const fused_call* f) {
  const variant& v = registry()[vi];
  const variant& base = registry()[v.packs];
  const pack_plan plan = plan_packing(base, p);
  const std::size_t b_at = static_cast<std::size_t>(ceil_div(plan.a_bytes, 256) * 256);
  const std::size_t bytes = b_at + static_cast<std::size_t>(plan.b_bytes);
  // The messages are built only on an error: a call costs no string work.
  const auto what = [&] {
    return "the " + std::to_string(bytes) + "-byte aligned copies of A/B for GEMM variant " +
           v.name;
  };
  void* ws = nullptr;
  CUFUSE_CUDA_CHECK_MSG(d.pool ? cudaMallocFromPoolAsync(&ws, bytes, d.pool, stream)
                               : cudaMallocAsync(&ws, bytes, stream),
                        "allocating " + what());
  unsigned char* at = static_cast<unsigned char*>(ws);
  const problem q = packed_problem(p, plan, at, at + b_at);
  pack_job jobs[2];
  int count = 0;
  if (plan.a) {
    jobs[count++] = job_of(p.a, q.a, p.batch);
  }
  if (plan.b) {
    jobs[count++] = job_of(p.b, q.b, p.batch);
  }
  const cudaError_t e = launch_pack(jobs, count, dtype_size(p.ab), d.sms, stream);
  if (e == cudaSuccess) {
    try {
      launch(v.packs, q, d, stream, f);
    } catch (...) {
      (void)cudaFreeAsync(ws, stream);
      throw;
    }
  }
  const cudaError_t freed = cudaFreeAsync(ws, stream);
  CUFUSE_CUDA_CHECK_MSG(e, "copying A/B to aligned rows for GEMM variant " + v.name);
  CUFUSE_CUDA_CHECK_MSG(freed, "freeing " + what());
}

} // namespace cufuse::gemm_detail
