# What each installed header promises, used: test/CMakeLists.txt builds, for every header, a
# program that includes that header alone and runs this code in main() (built and linked, not
# run: some of it needs a GPU). A header missing from this list is a configure error, so a new
# header comes with its use.

# Every header that holds tensors: they can be filled and assigned (the evaluation engine comes
# with whichever cufuse header a file includes first). Host tensors take the same assign()
# templates as device ones, without a kernel to compile; the entry headers (cufuse.cuh,
# memory/tensor.cuh, gemm.cuh) also assign device tensors.
set(tensor_use [=[
  cufuse::host_tensor<float, 2> h({2, 3}), g({2, 3});
  h.fill(1.0f);
  g = h;
  h.view().fill(2.0f);
]=])
set(device_use [=[
  cufuse::tensor<float, 1> d({4});
  d.fill(0.5f);
  d = 1.0f;
]=])

set(use_cufuse.cuh "${tensor_use}" "${device_use}" [=[
  g = cufuse::sin(h) * 2.0f + cufuse::map([] __host__ __device__(float x) { return x; }, h);
  cufuse::host_tensor<float, 1> r({2});
  r = cufuse::sum(g, 1);
  g = cufuse::softmax(cufuse::slice(h, cufuse::all, cufuse::range(0, 3)), -1);
  cufuse::tie(h, g) = cufuse::pack(g + 1.0f, g * 2.0f);
]=])
set(use_graph.cuh [=[
  auto g = cufuse::capture(cudaStream_t{}, [] {});
  (void)g;
]=])
set(use_gemm.cuh "${tensor_use}" "${device_use}" [=[
  cufuse::tensor<float, 2> A({2, 2}), B({2, 2}), C({2, 2});
  cufuse::gemm(cufuse::transpose(A), B, C);
  (void)cufuse::gemm_variants(A, B, C);
  cufuse::tuning::set_mode(cufuse::tune_mode::off);
  const cufuse::gemm_problem p = cufuse::tuning::problem(A, B, C);
  (void)cufuse::tuning::time(p, cufuse::tuning::variants(p).at(0), cudaStream_t{});
  (void)cufuse::tuning::key(p);
]=])

set(use_core/config.hpp [=[
  static_assert(CUFUSE_VERSION_MAJOR >= 0 && sizeof(cufuse::index_t) == 8);
]=])
set(use_core/error.hpp [=[
  try {
    throw cufuse::shape_error("shapes [2] and [3]");
  } catch (const cufuse::error& e) {
    (void)e.what();
  }
]=])
set(use_core/extents.hpp [=[
  cufuse::extents<2> e(2, 3);
  (void)e.to_string();
]=])
set(use_core/types.cuh [=[
  static_assert(cufuse::detail::is_floating_v<__half>);
  static_assert(cufuse::element_type<float>);
]=])
set(use_core/concepts.hpp [=[
  static_assert(!cufuse::expression<int>);
]=])
set(use_core/pack.hpp [=[
  static_assert(sizeof(cufuse::detail::make_pack(1, 2.0f)) >= 8);
]=])
set(use_core/index.cuh [=[
  cufuse::detail::fast_divmod<std::uint32_t> d(7);
  (void)d;
]=])
set(use_core/pdl.cuh [=[
  static_assert(std::is_same_v<decltype(&cufuse::detail::pdl_wait), void (*)()>);
]=])

set(use_memory/device.hpp [=[
  (void)cufuse::device_available();
  (void)cufuse::device_count();
]=])
set(use_memory/stream.hpp [=[
  cufuse::stream_guard g(cufuse::current_stream());
]=])
set(use_memory/tensor.cuh "${tensor_use}" "${device_use}")
set(use_memory/tensor_view.cuh "${tensor_use}" [=[
  float mem[6] = {};
  cufuse::host_view(mem, {2, 3}).fill(3.0f);
]=])
set(use_memory/views.cuh "${tensor_use}" [=[
  cufuse::slice(h, 0, cufuse::all).fill(4.0f);
  cufuse::host_tensor<float, 2> t({3, 2});
  t = cufuse::transpose(h);
  auto r = cufuse::reshape(h, {3, 2});
  (void)r;
]=])

set(use_expr/node.cuh "${tensor_use}" [=[
  static_assert(cufuse::expression<decltype(h.node())>);
]=])
set(use_expr/operators.cuh "${tensor_use}" [=[
  g = h * 2.0f + h;
]=])
set(use_expr/functions.cuh "${tensor_use}" [=[
  g = cufuse::exp(h);
  g = cufuse::map([] __host__ __device__(float x) { return x + 1.0f; }, h);
]=])
set(use_expr/broadcast.cuh "${tensor_use}" [=[
  cufuse::host_tensor<float, 1> row({3});
  row.fill(1.0f);
  g = cufuse::broadcast_to(row, h.shape());
]=])

set(use_eval/assign.cuh "${tensor_use}" [=[
  cufuse::assign(g, h, cudaStream_t{});
]=])
set(use_eval/multi.cuh "${tensor_use}" [=[
  cufuse::tie(h, g) = cufuse::pack(g, h);
]=])
set(use_eval/bind.cuh "${tensor_use}")
set(use_eval/kernel.cuh "${tensor_use}")
set(use_eval/launch.cuh "${tensor_use}")
set(use_eval/plan.cuh "${tensor_use}")

set(use_reduce/node.cuh "${tensor_use}" [=[
  cufuse::host_tensor<float, 1> r({2});
  r = cufuse::sum(h, 1);
]=])
set(use_reduce/functions.cuh "${tensor_use}" [=[
  g = cufuse::softmax(h, -1);
]=])
set(use_reduce/reducers.cuh [=[
  static_assert(sizeof(cufuse::reducers::sum) > 0);
]=])
set(use_reduce/evaluate.cuh "${tensor_use}")
set(use_reduce/kernels.cuh "${tensor_use}")
set(use_reduce/rows.cuh "${tensor_use}")

set(use_ops/activation.cuh [=[
  static_assert(sizeof(cufuse::ops::relu) > 0);
]=])
set(use_ops/arithmetic.cuh [=[
  static_assert(sizeof(cufuse::ops::plus) > 0);
]=])
set(use_ops/compare.cuh [=[
  static_assert(sizeof(cufuse::ops::logical_and) > 0);
]=])
set(use_ops/math.cuh [=[
  static_assert(sizeof(cufuse::ops::rsqrt) > 0);
]=])
set(use_ops/traits.cuh [=[
  static_assert(sizeof(cufuse::ops::promoting) > 0);
]=])
set(use_ops/user.cuh [=[
  static_assert(sizeof(cufuse::ops::user<float (*)(float)>) > 0);
]=])

set(use_tune/bandit.hpp [=[
  cufuse::tune::ucb_bandit b(3, cufuse::tune::gemm_bandit_config(3));
  (void)b.arms();
]=])
set(use_tune/database.hpp [=[
  cufuse::tune::tuning_database db("/nonexistent/tune.db", cufuse::tune::validators{});
  (void)db;
]=])

set(use_gemm/problem.hpp [=[
  cufuse::gemm_options o;
  o.math = cufuse::gemm_math::tf32;
  cufuse::gemm_problem p;
  p.ab = cufuse::gemm_dtype::bf16;
  static_assert(cufuse::gemm_dtype_size(cufuse::gemm_dtype::bf16) == 2);
  if (o.math != cufuse::gemm_math::tf32 || p.ab != cufuse::gemm_dtype::bf16) {
    return 1;
  }
]=])
set(use_gemm/args.hpp [=[
  static_assert(sizeof(cufuse::gemm_detail::gemm_args) > 0);
  static_assert(cufuse::gemm_detail::dtype_size(cufuse::gemm_detail::dtype::f32) == 4);
]=])
# The kernel templates and the variant lists: libcufuse instantiates them (src/gemm). A
# kernel is named by its configuration, so these programs stay small.
set(use_gemm/kernels.cuh [=[
  static_assert(cufuse::gemm_detail::simt_config<float, 64, 64, 16, 1, 1, 4>::threads > 0);
  static_assert(cufuse::gemm_detail::mma_config<__half, 64, 64, 64, 2, 2, 4>::threads > 0);
]=])
set(use_gemm/kernels_sm90.cuh [=[
  static_assert(cufuse::gemm_detail::wgmma_config<__half, 128, 128, 6>::threads > 0);
]=])
set(use_gemm/variants.cuh [=[
  static_assert(sizeof(cufuse::gemm_detail::simt_variants) > 0);
  static_assert(cufuse::gemm_detail::mma<float, cufuse::gemm_detail::mma_tile{.bm = 64, .bn = 64, .bk = 32, .wm = 2, .wn = 2, .stages = 4}>::BM == 64);
]=])
set(use_gemm/arch/device.cuh [=[
  static_assert(sizeof(cufuse::gemm_detail::gemm_args) > 0);
]=])
set(use_gemm/arch/cp_async.cuh [=[
  static_assert(std::is_same_v<decltype(&cufuse::gemm_detail::cp_async_commit), void (*)()>);
]=])
set(use_gemm/arch/mma_sync.cuh [=[
  static_assert(std::is_same_v<decltype(&cufuse::gemm_detail::to_tf32), unsigned (*)(float)>);
]=])
set(use_gemm/arch/sm90.cuh [=[
  static_assert(std::is_same_v<decltype(&cufuse::gemm_detail::bulk_commit), void (*)()>);
]=])
set(use_gemm/epilogue/linear_combination.cuh [=[
  static_assert(sizeof(cufuse::gemm_detail::linear_combination) > 0);
]=])
set(use_gemm/epilogue/split_k.cuh [=[
  static_assert(std::is_function_v<decltype(cufuse::gemm_detail::split_partial_args)>);
]=])
set(use_gemm/tile.cuh [=[
  static_assert(sizeof(cufuse::gemm_detail::block_work) > 0);
  static_assert(cufuse::gemm_detail::persistent_tiles<128, 256>::grid(4096, 4096, 1, 132) == 132);
]=])
set(use_gemm/kernel/simt.cuh [=[
  static_assert(cufuse::gemm_detail::simt_config<float, 64, 64, 16, 1, 1, 4>::threads == 256);
]=])
set(use_gemm/mainloop/mma_smem.cuh [=[
  static_assert(cufuse::gemm_detail::mma_config<__half, 64, 64, 64, 2, 2, 4>::threads == 128);
]=])
set(use_gemm/kernel/mma.cuh [=[
  static_assert(std::is_function_v<decltype(cufuse::gemm_detail::mma_1688_tf32)>);
  static_assert(cufuse::gemm_detail::mma_config<__half, 64, 64, 64, 2, 2, 4>::threads == 128);
]=])
set(use_gemm/kernel/wgmma.cuh [=[
  static_assert(cufuse::gemm_detail::wgmma_config<__half, 128, 128, 6>::consumer_regs == 232);
]=])
set(use_gemm/mainloop/wgmma.cuh [=[
  using cfg = cufuse::gemm_detail::wgmma_config<__nv_bfloat16, 128, 256, 4>;
  static_assert(cfg::smem_bytes == sizeof(cfg::shared_storage) + 1024);
  static_assert(std::is_trivially_copyable_v<cufuse::gemm_detail::wgmma_smem<cfg>>);
]=])
set(use_gemm/epilogue/wgmma_store.cuh [=[
  using cfg = cufuse::gemm_detail::wgmma_config<__half, 128, 128, 6>;
  static_assert(sizeof(cufuse::gemm_detail::wgmma_tma_store<cfg, false, false,
                       cufuse::gemm_detail::linear_combination>) > 0);
]=])
set(use_gemm/kernel/mma_elem.cuh [=[
  static_assert(cufuse::gemm_detail::elem_loads<
                cufuse::gemm_detail::mma_config<__half, 64, 64, 32, 2, 2, 4, 1, false, true>>());
]=])
set(use_gemm/kernel/mma_tma.cuh [=[
  static_assert(cufuse::gemm_detail::mma_config<float, 128, 128, 32, 2, 2, 3, 1, true>::tma);
]=])
set(use_gemm/arch/barrier.cuh [=[
  static_assert(std::is_same_v<decltype(&cufuse::gemm_detail::named_bar_sync<64>), void (*)(int)>);
]=])
set(use_gemm/orient.hpp [=[
  static_assert(cufuse::gemm_detail::runs_transposed(true, false, false));
  static_assert(std::is_pointer_v<cufuse::gemm_detail::launch_fn>);
]=])
set(use_gemm/fused.hpp [=[
  cufuse::gemm_detail::fused_set set{"none", {}};
  (void)set;
  static_assert(std::is_function_v<decltype(cufuse::gemm_detail::run_fused)>);
]=])
set(use_gemm/launch.cuh [=[
  using cfg = cufuse::gemm_detail::simt<float, cufuse::gemm_detail::simt_tile{.bm = 64, .bn = 64, .bk = 16, .rm = 1, .rn = 1, .vec = 4}>;
  cufuse::gemm_detail::launch_fn f = &cufuse::gemm_detail::launch_variant<cfg, cufuse::gemm_detail::linear_combination>;
  if (f == nullptr) {
    return 1;
  }
]=])
set(use_conv.cuh "${tensor_use}" "${device_use}" [=[
  cufuse::tensor<float, 4> x({1, 5, 5, 3}), w({4, 3, 3, 3}), y({1, 5, 5, 4});
  cufuse::conv2d(x, w, y, {.padding = {1, 1}});
  const auto [p, q] = cufuse::conv2d_output_size(5, 5, 3, 3, {.padding = {1, 1}});
  (void)p;
  (void)q;
]=])
set(use_conv/implicit_gemm.cuh [=[
  cufuse::conv_detail::conv_args a{};
  a.c = 8;
  a.s = 3;
  static_assert(std::is_trivially_copyable_v<cufuse::conv_detail::conv_args>);
  if (cufuse::conv_detail::tap_of(a, 30).fs != 0) {
    return 1;
  }
]=])
set(use_conv/simt.cuh [=[
  static_assert(sizeof(cufuse::conv_detail::conv_tile) ==
                sizeof(float) * 16 * (68 + 68));
  static_assert(sizeof(cufuse::conv_detail::conv_thread<float>) > 0);
]=])
set(use_conv/mma.cuh [=[
  using cfg = cufuse::conv_detail::mma_conv_config<__nv_bfloat16, 128, 128, 32, 5>;
  static_assert(cufuse::conv_detail::conv_gather<cfg>::count == 4);
  static_assert(cfg::threads == 128);
]=])
set(use_conv/problem.cuh [=[
  const auto [p, q] = cufuse::conv2d_output_size(7, 9, 3, 3, {.stride = {2, 2}, .padding = {1, 1}});
  if (p != 4 || q != 5) {
    return 1;
  }
]=])
set(use_conv/variants.cuh [=[
  static_assert(cufuse::conv_detail::blocks_per_sm<
                    cufuse::conv_detail::mma_conv_config<__half, 64, 64, 64, 4>>() == 3);
  if (cufuse::conv_detail::mma_name<cufuse::conv_detail::mma_conv_config<__half, 64, 64, 64, 4, 4>>() !=
      "conv_mma_f16_64x64x64_s4_k4") {
    return 1;
  }
]=])
set(use_conv/tuning.hpp [=[
  cufuse::conv_detail::conv_key k;
  const cufuse::conv_detail::conv_set set{"", {"conv_simt_64x64x16"}};
  if (cufuse::conv_detail::conv_family(k, set).rfind("conv.", 0) != 0) {
    return 1;
  }
]=])
set(use_gemm/epilogue/tuning.cuh [=[
  cufuse::tensor<__nv_bfloat16, 2> a({8, 8}), b({8, 8}), y({8, 8});
  cufuse::tensor<__nv_bfloat16, 1> bias({8});
  const auto names = cufuse::tuning::epilogue_variants(a, b, y, cufuse::acc + bias);
  (void)names;
]=])
set(use_gemm/epilogue/expression.cuh [=[
  cufuse::tensor<__nv_bfloat16, 2> a({8, 8}), b({8, 8}), y({8, 8});
  cufuse::tensor<__nv_bfloat16, 1> bias({8});
  cufuse::gemm(a, b, y, cufuse::relu(cufuse::acc + bias));
]=])
