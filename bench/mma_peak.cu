// Instruction-throughput ceilings of this GPU, for reading the GEMM numbers: mma.sync
// (FP16/BF16 m16n8k16, TF32 m16n8k8 and m16n8k4) and FFMA, each from registers only (no memory
// traffic), with enough independent accumulators per warp and warps per SM to fill the pipes.
//   cufuse_bench_mma_peak [--json out.json]
// Prints TFLOP/s per instruction and the SM clock seen during the run.
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#define CHECK_CUDA(x)                                                                              \
  do {                                                                                             \
    cudaError_t e_ = (x);                                                                          \
    if (e_ != cudaSuccess) {                                                                       \
      std::fprintf(stderr, "%s:%d: %s: %s\n", __FILE__, __LINE__, #x, cudaGetErrorString(e_));     \
      std::exit(1);                                                                                \
    }                                                                                              \
  } while (0)

namespace {

constexpr int iters = 4096;

enum class op { f16, bf16, tf32, tf32k4, ffma };

/// `chains`: independent accumulators per warp (hides the MMA latency).
template <op Op, int chains>
__global__ void __launch_bounds__(256) peak_kernel(const unsigned* in, float* out) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
  const unsigned a0 = in[threadIdx.x % 32], a1 = in[32 + threadIdx.x % 32];
  float acc[chains][4] = {};
  for (int i = 0; i < iters; ++i) {
#pragma unroll
    for (int c = 0; c < chains; ++c) {
      if constexpr (Op == op::f16) {
        asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0,%1,%2,%3}, "
                     "{%4,%5,%6,%7}, {%8,%9}, {%0,%1,%2,%3};\n"
                     : "+f"(acc[c][0]), "+f"(acc[c][1]), "+f"(acc[c][2]), "+f"(acc[c][3])
                     : "r"(a0), "r"(a1), "r"(a0), "r"(a1), "r"(a0), "r"(a1));
      } else if constexpr (Op == op::bf16) {
        asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0,%1,%2,%3}, "
                     "{%4,%5,%6,%7}, {%8,%9}, {%0,%1,%2,%3};\n"
                     : "+f"(acc[c][0]), "+f"(acc[c][1]), "+f"(acc[c][2]), "+f"(acc[c][3])
                     : "r"(a0), "r"(a1), "r"(a0), "r"(a1), "r"(a0), "r"(a1));
      } else if constexpr (Op == op::tf32) {
        asm volatile("mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32 {%0,%1,%2,%3}, "
                     "{%4,%5,%6,%7}, {%8,%9}, {%0,%1,%2,%3};\n"
                     : "+f"(acc[c][0]), "+f"(acc[c][1]), "+f"(acc[c][2]), "+f"(acc[c][3])
                     : "r"(a0), "r"(a1), "r"(a0), "r"(a1), "r"(a0), "r"(a1));
      } else if constexpr (Op == op::tf32k4) {
        asm volatile("mma.sync.aligned.m16n8k4.row.col.f32.tf32.tf32.f32 {%0,%1,%2,%3}, "
                     "{%4,%5}, {%6}, {%0,%1,%2,%3};\n"
                     : "+f"(acc[c][0]), "+f"(acc[c][1]), "+f"(acc[c][2]), "+f"(acc[c][3])
                     : "r"(a0), "r"(a1), "r"(a0));
      } else {
        const float x = __uint_as_float(a0), y = __uint_as_float(a1);
#pragma unroll
        for (int e = 0; e < 4; ++e) {
          asm volatile("fma.rn.f32 %0, %1, %2, %0;\n" : "+f"(acc[c][e]) : "f"(x), "f"(y));
        }
      }
    }
  }
  float s = 0;
#pragma unroll
  for (int c = 0; c < chains; ++c) {
    s += acc[c][0] + acc[c][1] + acc[c][2] + acc[c][3];
  }
  out[blockIdx.x * blockDim.x + threadIdx.x] = s;
#endif
}

/// Floating-point operations one thread's loop performs.
double flops_per_thread(op o, int chains) {
  const double per_warp_mma = o == op::tf32     ? 2.0 * 16 * 8 * 8
                              : o == op::tf32k4 ? 2.0 * 16 * 8 * 4
                                                : 2.0 * 16 * 8 * 16;
  if (o == op::ffma) {
    return 2.0 * iters * chains * 4;
  }
  return per_warp_mma * iters * chains / 32.0;
}

template <op Op, int chains = 8>
double run(int blocks, const unsigned* in, float* out) {
  cudaEvent_t e0, e1;
  CHECK_CUDA(cudaEventCreate(&e0));
  CHECK_CUDA(cudaEventCreate(&e1));
  std::vector<float> ms;
  for (int r = 0; r < 7; ++r) {
    CHECK_CUDA(cudaEventRecord(e0));
    peak_kernel<Op, chains><<<blocks, 256>>>(in, out);
    CHECK_CUDA(cudaGetLastError());
    CHECK_CUDA(cudaEventRecord(e1));
    CHECK_CUDA(cudaEventSynchronize(e1));
    float t = 0;
    CHECK_CUDA(cudaEventElapsedTime(&t, e0, e1));
    if (r > 0) {
      ms.push_back(t);
    }
  }
  CHECK_CUDA(cudaEventDestroy(e0));
  CHECK_CUDA(cudaEventDestroy(e1));
  std::sort(ms.begin(), ms.end());
  const double sec = ms[ms.size() / 2] * 1e-3;
  return flops_per_thread(Op, chains) * blocks * 256.0 / sec / 1e12;
}

} // namespace

int main(int argc, char** argv) {
  int count = 0;
  if (cudaGetDeviceCount(&count) != cudaSuccess || count == 0) {
    std::printf("cufuse_bench_mma_peak: no CUDA device; nothing to measure.\n");
    return 0;
  }
  std::string json;
  for (int i = 1; i + 1 < argc; ++i) {
    if (std::string(argv[i]) == "--json") {
      json = argv[i + 1];
    }
  }
  cudaDeviceProp prop{};
  CHECK_CUDA(cudaGetDeviceProperties(&prop, 0));
  if (prop.major < 8) {
    std::printf("cufuse_bench_mma_peak: needs sm_80 or newer (found sm_%d%d).\n", prop.major,
                prop.minor);
    return 0;
  }
  const int blocks = prop.multiProcessorCount * 4; // 32 warps per SM
  unsigned* in = nullptr;
  float* out = nullptr;
  CHECK_CUDA(cudaMalloc(&in, 64 * sizeof(unsigned)));
  CHECK_CUDA(cudaMalloc(&out, std::size_t(blocks) * 256 * sizeof(float)));
  std::vector<unsigned> h(64, 0x3c003c00u); // fp16 1.0 pairs; small values for every type
  CHECK_CUDA(cudaMemcpy(in, h.data(), 64 * sizeof(unsigned), cudaMemcpyHostToDevice));
  const double f16 = run<op::f16>(blocks, in, out);
  const double bf16 = run<op::bf16>(blocks, in, out);
  const double tf32 = run<op::tf32>(blocks, in, out);
  const double tf32k4 = run<op::tf32k4>(blocks, in, out);
  const double ffma = run<op::ffma>(blocks, in, out);
  // At the occupancy of the 128x128 mma.sync GEMM tiles: 8 warps per SM (2 per scheduler),
  // 32 independent MMAs per warp (a 64x64 warp tile per k-step).
  const int sms = prop.multiProcessorCount;
  const double f16_8w = run<op::f16, 32>(sms, in, out);
  const double tf32_8w = run<op::tf32, 32>(sms, in, out);
  const double tf32k4_8w = run<op::tf32k4, 32>(sms, in, out);
  std::printf("%s, %d SMs: register-only throughput (TFLOP/s)\n", prop.name,
              prop.multiProcessorCount);
  std::printf("| instruction | TFLOP/s |\n|---|---|\n");
  std::printf("| mma.sync m16n8k16 f16 | %.1f |\n| mma.sync m16n8k16 bf16 | %.1f |\n", f16, bf16);
  std::printf("| mma.sync m16n8k8 tf32 | %.1f |\n| mma.sync m16n8k4 tf32 | %.1f |\n", tf32, tf32k4);
  std::printf("| FFMA (fp32) | %.1f |\n", ffma);
  std::printf("| mma.sync m16n8k16 f16, 8 warps/SM x 32 MMAs | %.1f |\n", f16_8w);
  std::printf("| mma.sync m16n8k8 tf32, 8 warps/SM x 32 MMAs | %.1f |\n", tf32_8w);
  std::printf("| mma.sync m16n8k4 tf32, 8 warps/SM x 32 MMAs | %.1f |\n", tf32k4_8w);
  if (!json.empty()) {
    if (FILE* f = std::fopen(json.c_str(), "w")) {
      std::fprintf(f,
                   "{\"device\": \"%s\", \"sms\": %d, \"mma_f16\": %.2f, \"mma_bf16\": %.2f, "
                   "\"mma_tf32\": %.2f, \"ffma\": %.2f, \"mma_f16_8warps\": %.2f, "
                   "\"mma_tf32_8warps\": %.2f, \"mma_tf32_k4\": %.2f, "
                   "\"mma_tf32_k4_8warps\": %.2f}\n",
                   prop.name, prop.multiProcessorCount, f16, bf16, tf32, ffma, f16_8w, tf32_8w,
                   tf32k4, tf32k4_8w);
      std::fclose(f);
    }
  }
  CHECK_CUDA(cudaFree(in));
  CHECK_CUDA(cudaFree(out));
  return 0;
}
