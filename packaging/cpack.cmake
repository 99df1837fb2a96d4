# SPDX-License-Identifier: MIT
# A Debian package with CPack, from an ordinary build tree:
#   cd build && cpack -G DEB      (redlock-run_X.Y.Z_<arch>.deb)
# The package holds what `cmake --install` installs, under /usr, plus what Debian's policy
# wants of a package and a plain install does not need (deb-prebuild.cmake): the man page
# compressed and the changelog. Runtime dependencies are computed from the binary by
# dpkg-shlibdeps. No RPM: see packaging/README.md.
# OpenSSL is the exception: the binary loads libssl with dlopen for rediss:// only
# (src/redis/openssl_library.cpp), so no scan of the binary can see it, and it is added below from the
# same place dpkg-shlibdeps looks a library up: its package's shlibs entry.

# What goes into a package is built hardened (on for every build: see the file).
include(${CMAKE_CURRENT_LIST_DIR}/hardening.cmake)

set(CPACK_PACKAGE_NAME redlock-run)
set(CPACK_PACKAGE_VERSION ${PROJECT_VERSION})
set(CPACK_PACKAGE_CONTACT "The redlock-run authors <dev@redlock-run.invalid>")
set(CPACK_PACKAGE_VENDOR "The redlock-run authors")
set(CPACK_PACKAGE_DESCRIPTION_SUMMARY "run a command while holding a Redis lock")
set(CPACK_PACKAGE_DESCRIPTION_FILE ${CMAKE_CURRENT_LIST_DIR}/description.txt)
set(CPACK_PACKAGING_INSTALL_PREFIX /usr)
set(CPACK_GENERATOR DEB)
set(CPACK_STRIP_FILES ON)
set(CPACK_RESOURCE_FILE_LICENSE ${CMAKE_CURRENT_LIST_DIR}/copyright)

set(CPACK_DEBIAN_FILE_NAME DEB-DEFAULT)
set(CPACK_DEBIAN_PACKAGE_SECTION utils)
set(CPACK_DEBIAN_PACKAGE_PRIORITY optional)
set(CPACK_DEBIAN_PACKAGE_SHLIBDEPS ON)  # appended to CPACK_DEBIAN_PACKAGE_DEPENDS

file(REAL_PATH ${OPENSSL_SSL_LIBRARY} libssl_file)
get_filename_component(libssl_soname ${libssl_file} NAME)  # libssl.so.3
string(REGEX REPLACE "^libssl\\.so\\." "" libssl_major ${libssl_soname})
find_program(DPKG_QUERY dpkg-query)
if(DPKG_QUERY)
  execute_process(COMMAND ${DPKG_QUERY} -S ${libssl_file} OUTPUT_VARIABLE owner
                  RESULT_VARIABLE owner_status ERROR_QUIET)
  string(REGEX REPLACE ":.*" "" owner "${owner}")  # libssl3:amd64: /usr/lib/... -> libssl3
  if(owner_status EQUAL 0 AND owner)
    execute_process(COMMAND ${DPKG_QUERY} --control-show ${owner} shlibs OUTPUT_VARIABLE shlibs
                    ERROR_QUIET)
    if(shlibs MATCHES "(^|\n)libssl ${libssl_major} ([^\n]+)")
      set(CPACK_DEBIAN_PACKAGE_DEPENDS "${CMAKE_MATCH_2}")  # e.g. libssl3 (>= 3.0.19)
    endif()
  endif()
endif()
if(NOT CPACK_DEBIAN_PACKAGE_DEPENDS)
  set(CPACK_DEBIAN_PACKAGE_DEPENDS "libssl${libssl_major}")
endif()
# --ping loads libcurl with dlopen too (src/run/ping.cpp), only when given: recommended, not
# required, since a run without --ping never needs it.
set(CPACK_DEBIAN_PACKAGE_RECOMMENDS "libcurl4 | libcurl3-gnutls")
set(CPACK_DEBIAN_PACKAGE_SUGGESTS "redis-server, bash-completion")

# Compress the man page and add changelog.gz in the staging tree (after the install, before
# dpkg-deb): lintian's no-changelog and uncompressed-manual-page.
set(CPACK_REDLOCK_SOURCE_DIR ${PROJECT_SOURCE_DIR})
set(CPACK_REDLOCK_OBJCOPY ${CMAKE_OBJCOPY})
set(CPACK_PRE_BUILD_SCRIPTS ${CMAKE_CURRENT_LIST_DIR}/deb-prebuild.cmake)

include(CPack)
