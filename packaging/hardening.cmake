# SPDX-License-Identifier: MIT
# Debian's hardening flags (what `dpkg-buildflags --get CXXFLAGS/CPPFLAGS/LDFLAGS` adds on
# Debian 12 for the hardening features lintian checks), on by default: the program that
# `cmake --install` and the .deb install is built with them whether or not the builder
# exported dpkg-buildflags first. -DREDLOCK_HARDENING=OFF leaves the flags to the builder.
option(REDLOCK_HARDENING "Build redlock-run with Debian's hardening flags" ON)
if(REDLOCK_HARDENING)
  set(hardening_compile -fstack-protector-strong -Wformat -Werror=format-security)
  # _FORTIFY_SOURCE needs the optimizer (glibc warns without -O, an error under
  # REDLOCK_WERROR), and the sanitizers check the same calls better without it.
  if(NOT REDLOCK_SANITIZE)
    list(APPEND hardening_compile
         $<$<CONFIG:Release,RelWithDebInfo,MinSizeRel>:-D_FORTIFY_SOURCE=2>)
  endif()
  foreach(target IN LISTS REDLOCK_LAYER_TARGETS)
    target_compile_options(${target} PRIVATE ${hardening_compile})
  endforeach()
  target_compile_options(redlock-run PRIVATE ${hardening_compile})
  # Read-only relocations, resolved at start-up (relro + bindnow).
  target_link_options(redlock-run PRIVATE -Wl,-z,relro -Wl,-z,now)
endif()
