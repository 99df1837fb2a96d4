# Turns one Lua file into a C++ source defining `const char* const <VAR>`; run at build time so
# that editing a script rebuilds the binary without a reconfigure.
# PRELUDE, when set, is a list of Lua files shared by several scripts (scripts sent to Redis
# cannot share code), prepended in its order.
file(READ "${IN}" body)
set(prelude_text "")
foreach(lib IN LISTS PRELUDE)
  file(READ "${lib}" lib_text)
  string(APPEND prelude_text "${lib_text}")
endforeach()
set(body "${prelude_text}${body}")
set(delim "__redlock_lua__")
# The digest EVALSHA names the script by, computed here rather than at every start: OpenSSL's
# first digest initialises the library, which cost more time and memory than the rest of a run.
string(SHA1 sha1 "${body}")
file(WRITE "${OUT}.tmp" "// Generated from ${IN}; do not edit.\nnamespace redlock::scripts_src {\nextern const char* const ${VAR};\nconst char* const ${VAR} = R\"${delim}(${body})${delim}\";\nextern const char* const ${VAR}_sha1;\nconst char* const ${VAR}_sha1 = \"${sha1}\";\n}\n")
file(COPY_FILE "${OUT}.tmp" "${OUT}" ONLY_IF_DIFFERENT)
file(REMOVE "${OUT}.tmp")
