/// \file pack<Ts...>: a minimal aggregate tuple that stays trivially copyable (kernel parameters).
#pragma once

#include "config.hpp"

#include <cstddef>

namespace cufuse::detail {

template <class... Ts>
struct pack;

template <>
struct pack<> {};

template <class T, class... Ts>
struct pack<T, Ts...> {
  T head;
  pack<Ts...> tail;
};

template <std::size_t I, class T, class... Ts>
CUFUSE_INLINE constexpr const auto& get(const pack<T, Ts...>& p) {
  if constexpr (I == 0) {
    return p.head;
  } else {
    return get<I - 1>(p.tail);
  }
}

template <std::size_t I, class T, class... Ts>
CUFUSE_INLINE constexpr auto& get(pack<T, Ts...>& p) {
  if constexpr (I == 0) {
    return p.head;
  } else {
    return get<I - 1>(p.tail);
  }
}

template <class... Ts>
CUFUSE_INLINE constexpr pack<Ts...> make_pack(const Ts&... ts) {
  return pack<Ts...>{ts...};
}

} // namespace cufuse::detail
