/// \file Internal to libcufuse: the pieces of the GEMM engine and how they call each other.
///
///   api.cu          entry points (cufuse::gemm, the tuning API) -> validate, tuner, launch
///   registry.cu     every variant, in order; lookup by name; the variant-set hash
///   device.cu       per-device state: SMs, the variants' code on this device, workspace pool
///   constraints.cu  can_run: the AND of the rules that apply to the variant's family
///   heuristic.cu    the static time model and its named rate table
///   launch.cu       one call of one variant, with its split-K workspace
///   pack.cu         a packing variant's call: aligned copies of A/B, then its base variant
///   tuner.cu        off / online (UCB) / frozen (database) choice per key
#pragma once

#include "registry.hpp"

#include <cufuse/gemm/problem.hpp>

#include <cuda_runtime.h>

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace cufuse::gemm_detail {

// ---- registry.cu ----------------------------------------------------------------------------
/// Every variant of this build, in a fixed order (indices are stable within a process).
const std::vector<variant>& registry();
/// FNV-1a over every variant name: a database written by another variant set is not used.
std::string variant_set_hash();
/// The index of the variant with this name, or -1.
int find_variant(const std::string& name);

// ---- device.cu ------------------------------------------------------------------------------
struct device_state {
  int ordinal = 0;
  std::string name;
  int sms = 0, cc = 0, l2 = 0, smem_per_sm = 0, runtime = 0;
  std::vector<int> arch; // per variant: SASS arch of its kernels on this device (0: none)
  // Per variant: the thread-block clusters it holds at once on this device (cluster split-K
  // variants with code here; else 0, and empty on a stand-in device: sms / splits is assumed).
  std::vector<int> clusters;
  // Split-K workspaces come from this pool, which keeps up to 256 MiB mapped between calls;
  // the default pool hands freed memory back to the driver at every synchronization, so the
  // next call paid for a fresh mapping (bench/JOURNAL.md g12, g15, g27). Null: the default pool.
  cudaMemPool_t pool = nullptr;
};
/// The state of device `ordinal`, built (every variant prepared) on first use.
const device_state& device_state_for(int ordinal);
int current_device();

// ---- constraints.cu -------------------------------------------------------------------------
constexpr std::int64_t ceil_div(std::int64_t a, std::int64_t b) { return (a + b - 1) / b; }
/// Largest element alignment (8, 4, 2 or 1) that A's and B's pointers, leading dimensions and
/// batch strides all share; the same for C (4, 2 or 1).
int ab_align_class(const problem& p);
int c_align_class(const problem& p);
/// Splits actually used for a problem (each split covers whole BK tiles) and its K chunk.
std::pair<int, int> split_plan(const variant& v, const problem& p);
/// How a packing variant (variant::packs) runs a problem: which of A and B its base variant
/// cannot read in place, and the bytes of their aligned copies.
struct pack_plan {
  bool a = false, b = false;
  std::int64_t a_bytes = 0, b_bytes = 0;
};
pack_plan plan_packing(const variant& base, const problem& p);
/// `p` with A (B) replaced by its copy at `a` (`b`, 16-byte aligned) where `plan` copies it:
/// rows padded to whole 16-byte units.
problem packed_problem(const problem& p, const pack_plan& plan, const void* a, const void* b);
/// Whether variant `vi` can run `p` on `d`; if not, `why` says which rule fails.
bool can_run(int vi, const problem& p, const device_state& d, std::string* why = nullptr);
std::vector<int> valid_indices(const problem& p, const device_state& d);
/// Problem-level checks (before any variant is considered); throws shape_error / error.
void validate(const problem& p);

// ---- heuristic.cu ---------------------------------------------------------------------------
double predicted_seconds(int vi, const problem& p, const device_state& d);
/// The valid variant with the smallest predicted time (the first of equals).
int heuristic(const problem& p, const device_state& d, const std::vector<int>& valid);

// ---- launch.cu ------------------------------------------------------------------------------
/// A call with an expression epilogue: its kernels by registry index (null where the set has
/// none) and the epilogue object they take.
struct fused_call {
  const launch_fn* kernels;
  const void* epi;
};
/// Runs variant `vi` on `p` (split-K: with its workspace); checks the launch. `f`: with an
/// expression epilogue's kernels instead of the standard ones.
void launch(int vi, const problem& p, const device_state& d, cudaStream_t stream,
            const fused_call* f = nullptr);

// ---- pack.cu --------------------------------------------------------------------------------
/// Runs packing variant `vi`: copies the operands its base variant cannot read in place to
/// aligned rows in a pool workspace, then runs the base variant on the copies.
void launch_packed(int vi, const problem& p, const device_state& d, cudaStream_t stream,
                   const fused_call* f);

} // namespace cufuse::gemm_detail
