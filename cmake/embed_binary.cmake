# Turns one binary file into a C++ source defining `const unsigned char <VAR>[]` and
# `const std::size_t <VAR>_size`; run at build time, after the file is built.
file(READ "${IN}" hex HEX)
string(LENGTH "${hex}" hex_length)
math(EXPR size "${hex_length} / 2")
string(REGEX REPLACE "([0-9a-f][0-9a-f])" "0x\\1," bytes "${hex}")
# Lines of 24 bytes, so that the generated file stays readable in a diff tool.
string(REGEX REPLACE "((0x..,){24})" "\\1\n" bytes "${bytes}")
file(WRITE "${OUT}.tmp" "// Generated from ${IN}; do not edit.\n#include <cstddef>\nnamespace redlock::embedded {\nextern const unsigned char ${VAR}[];\nextern const std::size_t ${VAR}_size;\nconst unsigned char ${VAR}[] = {\n${bytes}\n};\nconst std::size_t ${VAR}_size = ${size};\n}\n")
file(COPY_FILE "${OUT}.tmp" "${OUT}" ONLY_IF_DIFFERENT)
file(REMOVE "${OUT}.tmp")
