/// \file Per-device state: properties, every variant prepared (shared-memory opt-in, which
/// also loads its kernels), the split-K workspace pool.
#include "engine.hpp"

#include <cufuse/core/error.hpp>

#include <map>
#include <memory>
#include <mutex>
#include <string>

namespace cufuse::gemm_detail {

const device_state& device_state_for(int ordinal) {
  static std::mutex mu;
  static std::map<int, std::unique_ptr<device_state>> states;
  std::lock_guard<std::mutex> g(mu);
  auto& slot = states[ordinal];
  if (!slot) {
    auto d = std::make_unique<device_state>();
    d->ordinal = ordinal;
    cudaDeviceProp prop{};
    CUFUSE_CUDA_CHECK(cudaGetDeviceProperties(&prop, ordinal));
    d->name = prop.name;
    d->sms = prop.multiProcessorCount;
    d->cc = prop.major * 10 + prop.minor;
    d->l2 = prop.l2CacheSize;
    d->smem_per_sm = static_cast<int>(prop.sharedMemPerMultiprocessor);
    CUFUSE_CUDA_CHECK(cudaRuntimeGetVersion(&d->runtime));
    for (const variant& v : registry()) {
      int a = 0;
      if (v.smem <= static_cast<int>(prop.sharedMemPerBlockOptin)) {
        CUFUSE_CUDA_CHECK_MSG(v.prepare(&a), "preparing GEMM variant " + v.name);
      }
      int c = 0;
      if (a > 0 && v.clusters != nullptr) {
        // A device that cannot hold one of its clusters (or will not say) never runs it.
        if (v.clusters(&c) != cudaSuccess || c < 1) {
          (void)cudaGetLastError();
          a = 0;
          c = 0;
        }
      }
      d->arch.push_back(a);
      d->clusters.push_back(c);
    }
    int pools = 0;
    if (cudaDeviceGetAttribute(&pools, cudaDevAttrMemoryPoolsSupported, ordinal) == cudaSuccess &&
        pools != 0) {
      cudaMemPoolProps props{};
      props.allocType = cudaMemAllocationTypePinned;
      props.location.type = cudaMemLocationTypeDevice;
      props.location.id = ordinal;
      CUFUSE_CUDA_CHECK_MSG(cudaMemPoolCreate(&d->pool, &props),
                            "creating the split-K workspace pool of device " +
                                std::to_string(ordinal));
      std::uint64_t keep = std::uint64_t(256) << 20;
      CUFUSE_CUDA_CHECK_MSG(
          cudaMemPoolSetAttribute(d->pool, cudaMemPoolAttrReleaseThreshold, &keep),
          "setting the release threshold of the split-K workspace pool");
    }
    slot = std::move(d);
  }
  return *slot;
}

int current_device() {
  int dev = 0;
  CUFUSE_CUDA_CHECK(cudaGetDevice(&dev));
  return dev;
}

} // namespace cufuse::gemm_detail
