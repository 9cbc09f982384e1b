/// \file The variant registry: every set of src/gemm/variants_*.cu, in order.
#include "engine.hpp"

#include <cstdio>
#include <string>
#include <utility>
#include <vector>

namespace cufuse::gemm_detail {

const std::vector<variant>& registry() {
  static const std::vector<variant> all = [] {
    std::vector<variant> v;
    for (auto part :
         {simt_set(), f16_set(), bf16_set(), any_align_set(), tf32_set(), wgmma_set()}) {
      v.insert(v.end(), part.begin(), part.end());
    }
    // Every variant that needs aligned operands has a packing twin, for operands it cannot
    // read in place (src/gemm/pack.cu; docs/gemm.md, "Operands at any alignment").
    const std::size_t plain = v.size();
    for (std::size_t i = 0; i < plain; ++i) {
      if (v[i].align > 1) {
        variant twin = v[i];
        twin.name += "_pack";
        twin.align = 1;
        twin.packs = static_cast<int>(i);
        v.push_back(std::move(twin));
      }
    }
    return v;
  }();
  return all;
}

std::string variant_set_hash() {
  std::uint32_t h = 2166136261u; // FNV-1a over every name, in order
  for (const variant& v : registry()) {
    for (char c : v.name + "\n") {
      h = (h ^ static_cast<unsigned char>(c)) * 16777619u;
    }
  }
  char buf[16];
  std::snprintf(buf, sizeof buf, "%08x", h);
  return buf;
}

int find_variant(const std::string& name) {
  const auto& r = registry();
  for (std::size_t i = 0; i < r.size(); ++i) {
    if (r[i].name == name) {
      return static_cast<int>(i);
    }
  }
  return -1;
}

} // namespace cufuse::gemm_detail
