/// \file What each variant can run: problem checks, then the rules of the variant's family.
#include "engine.hpp"

#include <cufuse/core/error.hpp>

#include <algorithm>
#include <climits>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace cufuse::gemm_detail {

namespace {
bool aligned(const void* p, std::int64_t bytes) {
  return reinterpret_cast<std::uintptr_t>(p) % static_cast<std::uintptr_t>(bytes) == 0;
}
} // namespace

int ab_align_class(const problem& p) {
  const int e = dtype_size(p.ab);
  for (int a : {8, 4, 2}) {
    bool ok =
        aligned(p.a.ptr, a * e) && aligned(p.b.ptr, a * e) && p.a.ld % a == 0 && p.b.ld % a == 0;
    if (p.batch > 1) {
      ok = ok && p.a.batch_stride % a == 0 && p.b.batch_stride % a == 0;
    }
    if (ok) {
      return a;
    }
  }
  return 1;
}

int c_align_class(const problem& p) {
  const int e = dtype_size(p.out);
  for (int a : {4, 2}) {
    if (aligned(p.c, a * e) && p.ldc % a == 0 && (p.batch <= 1 || p.stride_c % a == 0)) {
      return a;
    }
  }
  return 1;
}

std::pair<int, int> split_plan(const variant& v, const problem& p) {
  if (v.splits <= 1 || p.k == 0) {
    return {1, static_cast<int>(std::max<std::int64_t>(p.k, 1))};
  }
  const std::int64_t chunk = ceil_div(ceil_div(p.k, v.splits), v.bk) * v.bk;
  return {static_cast<int>(ceil_div(p.k, chunk)), static_cast<int>(chunk)};
}

constexpr std::int64_t max_workspace_bytes = std::int64_t(1) << 30;

namespace {
/// Whether a variant that needs `align`-element alignment reads operand `o` in place.
bool in_place(const operand& o, int align, int esize, std::int64_t batch) {
  return aligned(o.ptr, std::int64_t(align) * esize) && o.ld % align == 0 &&
         (batch <= 1 || o.batch_stride % align == 0);
}

/// The copy of `o` that a packing variant reads: rows padded to whole 16-byte units (what every
/// aligned variant accepts, and the copy kernel's store width), batches one after the other
/// (one matrix when every batch shares it).
operand packed_operand(const operand& o, int esize, std::int64_t batch, const void* at) {
  const std::int64_t unit = 16 / esize;
  operand c = o;
  c.ptr = at;
  c.ld = std::max<std::int64_t>(ceil_div(o.cols, unit) * unit, unit);
  c.batch_stride = batch > 1 && o.batch_stride != 0 ? o.rows * c.ld : 0;
  return c;
}

std::int64_t packed_bytes(const operand& o, int esize, std::int64_t batch) {
  const operand c = packed_operand(o, esize, batch, nullptr);
  return (batch > 1 && o.batch_stride != 0 ? batch : 1) * o.rows * c.ld * esize;
}
} // namespace

pack_plan plan_packing(const variant& base, const problem& p) {
  const int e = dtype_size(p.ab);
  pack_plan plan;
  plan.a = !in_place(p.a, base.align, e, p.batch);
  plan.b = !in_place(p.b, base.align, e, p.batch);
  plan.a_bytes = plan.a ? packed_bytes(p.a, e, p.batch) : 0;
  plan.b_bytes = plan.b ? packed_bytes(p.b, e, p.batch) : 0;
  return plan;
}

problem packed_problem(const problem& p, const pack_plan& plan, const void* a, const void* b) {
  const int e = dtype_size(p.ab);
  problem q = p;
  if (plan.a) {
    q.a = packed_operand(p.a, e, p.batch, a);
  }
  if (plan.b) {
    q.b = packed_operand(p.b, e, p.batch, b);
  }
  return q;
}

namespace {

/// One rule of what a variant can run: empty when it holds, else the reason it does not.
using rule = std::string (*)(const variant& v, int vi, const problem& p, const device_state& d);

std::string inputs(const variant& v, int, const problem& p, const device_state&) {
  if (v.ab != p.ab) {
    return std::string("it takes ") + dtype_name(v.ab) + " inputs, not " + dtype_name(p.ab);
  }
  if (v.tf32 && p.math != gemm_math::tf32) {
    return "it uses TF32 tensor cores and the call asks for fp32 math (gemm_options.math)";
  }
  return {};
}

std::string code_for_device(const variant& v, int vi, const problem&, const device_state& d) {
  if (d.arch[vi] < v.min_arch) {
    return "it needs sm_" + std::to_string(v.min_arch) + (v.min_arch == 90 ? "a" : "") +
           " code, which this library build has not for this device (compute capability " +
           std::to_string(d.cc) + ")";
  }
  return {};
}

std::string layout(const variant& v, int, const problem& p, const device_state&) {
  if (((v.layouts >> (2 * int(p.a.trans) + int(p.b.trans))) & 1) == 0) {
    return "it does not take this combination of transposes";
  }
  return {};
}

std::string alignment(const variant& v, int, const problem& p, const device_state&) {
  if (ab_align_class(p) < v.align) {
    return "it needs " + std::to_string(v.align * dtype_size(p.ab)) +
           "-byte aligned A/B pointers, leading dimensions and batch strides";
  }
  return {};
}

std::string grid(const variant& v, int, const problem& p, const device_state&) {
  const std::int64_t tiles = oriented_tiles(v, p.m, p.n, p.a.trans, p.b.trans);
  if (tiles > INT_MAX) {
    return "the output has more tiles than a grid can hold";
  }
  if (p.batch * split_plan(v, p).first > 65535) {
    return "batch x splits exceeds 65535";
  }
  return {};
}

std::string split_k(const variant& v, int, const problem& p, const device_state&) {
  const int splits = split_plan(v, p).first;
  if (p.k < std::int64_t(v.bk) * v.splits || splits < 2) {
    return "split-K needs K >= splits x BK";
  }
  if (!v.cluster_split && p.m * p.n * p.batch * splits * 4 > max_workspace_bytes) {
    return "its split-K workspace would exceed 1 GiB";
  }
  return {};
}

std::string persistent(const variant& v, int, const problem& p, const device_state&) {
  const double tiles = double(oriented_tiles(v, p.m, p.n, p.a.trans, p.b.trans));
  if (tiles * double(p.batch) * split_plan(v, p).first > INT_MAX) {
    return "its persistent blocks count batch x splits x tiles in 32 bits";
  }
  return {};
}

std::string tma_batches(const variant&, int, const problem& p, const device_state&) {
  // TMA walks batches as a third tensor dimension: each batch must start past the previous
  // one's last row (or every batch shares one matrix, stride 0).
  if (p.batch > 1) {
    for (const operand* o : {&p.a, &p.b}) {
      if (o->batch_stride != 0 && o->batch_stride < o->rows * o->ld) {
        return "its TMA loads need batch strides of at least rows x leading dimension";
      }
    }
  }
  return {};
}

/// A packing variant: its base variant's rules, on the problem with the aligned copies.
std::string packing(const variant& v, int, const problem& p, const device_state& d) {
  const variant& base = registry()[v.packs];
  const pack_plan plan = plan_packing(base, p);
  if (!plan.a && !plan.b) {
    return "its operands are aligned, and " + base.name + " reads them in place";
  }
  if (p.k == 0) {
    return "K = 0: there is nothing to copy";
  }
  if (plan.a_bytes + plan.b_bytes > max_workspace_bytes) {
    return "the aligned copies of A and B would exceed 1 GiB";
  }
  // The copies are allocated 256-byte aligned (cudaMallocFromPoolAsync); any such address
  // stands for them here.
  const void* at = reinterpret_cast<const void*>(std::uintptr_t(256));
  std::string why;
  if (!can_run(v.packs, packed_problem(p, plan, at, at), d, &why)) {
    return "on the aligned copies, " + base.name + " cannot run: " + why;
  }
  return {};
}

/// The rules that apply to a variant: every variant's, then its family's and its features'.
/// A variant can run a problem when all of them hold.
std::vector<rule> rules_of(const variant& v) {
  if (v.packs >= 0) {
    return {packing};
  }
  std::vector<rule> r{inputs, code_for_device, layout, alignment, grid};
  if (v.splits > 1) {
    r.push_back(split_k);
  }
  if (v.fam == family::wgmma) {
    r.push_back(persistent);
  }
  if (v.tma) {
    r.push_back(tma_batches);
  }
  return r;
}

} // namespace

bool can_run(int vi, const problem& p, const device_state& d, std::string* why) {
  const variant& v = registry()[vi];
  static const std::vector<std::vector<rule>> all = [] {
    std::vector<std::vector<rule>> out;
    for (const variant& x : registry()) {
      out.push_back(rules_of(x));
    }
    return out;
  }();
  for (rule r : all[vi]) {
    std::string no = r(v, vi, p, d);
    if (!no.empty()) {
      if (why) {
        *why = std::move(no);
      }
      return false;
    }
  }
  return true;
}

std::vector<int> valid_indices(const problem& p, const device_state& d) {
  std::vector<int> out;
  for (int i = 0; i < static_cast<int>(registry().size()); ++i) {
    if (can_run(i, p, d)) {
      out.push_back(i);
    }
  }
  return out;
}

void validate(const problem& p) {
  auto shape = [&] {
    return "m = " + std::to_string(p.m) + ", n = " + std::to_string(p.n) +
           ", k = " + std::to_string(p.k) + ", batch = " + std::to_string(p.batch);
  };
  if (p.m > INT_MAX || p.n > INT_MAX || p.k > INT_MAX) {
    throw shape_error("cufuse::gemm: each of m, n, k must be below 2^31 (" + shape() + ")");
  }
  if (p.batch > 65535) {
    throw shape_error("cufuse::gemm_batched: at most 65535 batches (" + shape() + ")");
  }
  if (p.ab == dtype::f32 && p.out != dtype::f32) {
    throw error("cufuse::gemm: float inputs need a float C");
  }
  if (p.sm_count < 0) {
    throw error("cufuse::gemm: gemm_options.sm_count must be 0 (all SMs) or positive, got " +
                std::to_string(p.sm_count));
  }
}

} // namespace cufuse::gemm_detail
