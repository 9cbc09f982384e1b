// cufuse::conv2d on the host side (no GPU): output sizes as PyTorch computes them, and the
// shape errors, which are thrown before anything touches the device (views of a device address
// that is never read).
#include <cufuse/conv.cuh>

#include <catch2/catch.hpp>

#include <string>

namespace {
using index_t = cufuse::index_t;

template <class T>
cufuse::tensor_view<T, 4, cufuse::device_space> fake(index_t n, index_t h, index_t w, index_t c,
                                                     std::uintptr_t at) {
  using V = cufuse::tensor_view<T, 4, cufuse::device_space>;
  const cufuse::extents<4> e{n, h, w, c};
  return V(reinterpret_cast<T*>(at), e, cufuse::row_major_strides(e), typename V::trusted{});
}

/// PyTorch's formula in plain integers.
index_t out_size(index_t in, index_t f, index_t st, index_t p0, index_t p1, index_t d) {
  const index_t span = in + p0 + p1 - d * (f - 1) - 1;
  return span < 0 ? 0 : span / st + 1;
}
} // namespace

TEST_CASE("conv2d_output_size follows PyTorch's formula", "[conv_api]") {
  for (index_t h : {1, 2, 7, 56, 224}) {
    for (index_t r : {1, 3, 5, 7}) {
      for (index_t st : {1, 2, 3}) {
        for (index_t pad : {0, 1, 3}) {
          for (index_t d : {1, 2}) {
            const cufuse::conv2d_params prm{
                .stride = {st, 1}, .padding = {pad, 0}, .dilation = {d, 1}};
            const auto [p, q] = cufuse::conv2d_output_size(h, 9, r, 1, prm);
            const index_t want = out_size(h, r, st, pad, pad, d);
            INFO("h " << h << " r " << r << " stride " << st << " pad " << pad << " dil " << d);
            if (want > 0) {
              CHECK(p == want);
            } else {
              CHECK(p <= 0);
            }
            CHECK(q == 9);
          }
        }
      }
    }
  }
  // Asymmetric padding: top 0, bottom 2.
  const auto [p, q] = cufuse::conv2d_output_size(
      8, 7, 3, 2, cufuse::conv2d_params{.padding = {0, 1}, .padding_end = {2, 0}});
  CHECK(p == 8);
  CHECK(q == 7);
  // ResNet's stem: 224 -> 112.
  CHECK(cufuse::conv2d_output_size(224, 224, 7, 7, {.stride = {2, 2}, .padding = {3, 3}})[0] ==
        112);
}

TEST_CASE("conv2d: shape errors name every shape and parameter, before any GPU work",
          "[conv_api]") {
  const std::uintptr_t base = 0x7f0000000000;
  const auto x = fake<float>(1, 5, 5, 3, base);
  const auto w8 = fake<float>(4, 3, 3, 8, base + (1 << 20));
  const auto w3 = fake<float>(4, 3, 3, 3, base + (2 << 20));
  const auto y = fake<float>(1, 5, 5, 4, base + (3 << 20));
  try {
    cufuse::conv2d(x, w8, y, {.padding = {1, 1}});
    FAIL("no shape_error");
  } catch (const cufuse::shape_error& e) {
    const std::string msg = e.what();
    CHECK(msg.find("X [1, 5, 5, 3] (NHWC)") != std::string::npos);
    CHECK(msg.find("W [4, 3, 3, 8] (KRSC)") != std::string::npos);
    CHECK(msg.find("Y [1, 5, 5, 4] (NPQK)") != std::string::npos);
    CHECK(msg.find("stride {1, 1}") != std::string::npos);
    CHECK(msg.find("padding {top 1, left 1, bottom 1, right 1}") != std::string::npos);
    CHECK(msg.find("dilation {1, 1}") != std::string::npos);
    CHECK(msg.find("X has 3 channels, W 8") != std::string::npos);
  }
  // The wrong output shape: Y must be [1, 3, 3, 4] without padding.
  try {
    cufuse::conv2d(x, w3, y, {});
    FAIL("no shape_error");
  } catch (const cufuse::shape_error& e) {
    CHECK(std::string(e.what()).find("Y must be [1, 3, 3, 4]") != std::string::npos);
  }
  // A filter larger than the padded input.
  const auto big = fake<float>(4, 7, 7, 3, base + (4 << 20));
  try {
    cufuse::conv2d(x, big, y, {});
    FAIL("no shape_error");
  } catch (const cufuse::shape_error& e) {
    CHECK(std::string(e.what()).find("the output would be -1 x -1") != std::string::npos);
  }
  CHECK_THROWS_AS(cufuse::conv2d(x, w3, y, {.stride = {0, 1}, .padding = {1, 1}}),
                  cufuse::shape_error);
  CHECK_THROWS_AS(cufuse::conv2d(x, w3, y, {.padding = {-1, 1}}), cufuse::shape_error);
  // Y overlapping X.
  const auto y_on_x = fake<float>(1, 5, 5, 4, base + 16);
  CHECK_THROWS_AS(cufuse::conv2d(x, w3, y_on_x, {.padding = {1, 1}}), cufuse::error);
}
