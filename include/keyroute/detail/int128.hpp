#pragma once

/// @file
/// The 128-bit product the reductions and the resize partitioners' mixing need: a compiler
/// without `unsigned __int128` stops here with a message that says so.

#if !defined(__SIZEOF_INT128__)
#error \
    "keyroute's partitioners need unsigned __int128: GCC or Clang on a 64-bit target (not MSVC, not 32-bit)"
#endif

namespace keyroute::detail {
__extension__ using uint128 = unsigned __int128;
}  // namespace keyroute::detail
