// fmt's out-of-line functions (fmt::vformat and what it needs), compiled once into the program
// from the implementation header that libfmt-dev ships, instead of linking libfmt.so. That
// library needs the shared libstdc++, and loading and relocating those two cost every run about
// a millisecond at start-up (see bench/RESULTS.md); without them the program links libstdc++
// statically (CMakeLists.txt). The other sources include <fmt/format.h> as usual, so only this
// one file pays for compiling the implementation.
#include <fmt/format-inl.h>

// The two locale templates that header declares but leaves to the library to instantiate.
template auto fmt::detail::thousands_sep_impl<char>(locale_ref) -> thousands_sep_result<char>;
template auto fmt::detail::decimal_point_impl<char>(locale_ref) -> char;
