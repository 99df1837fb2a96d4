# Binary packages with CPack, from an ordinary build tree:
#   cd build && cpack -G DEB      (redlock-run_X.Y.Z_<arch>.deb)
#   cd build && cpack -G RPM      (needs rpmbuild: apt-get install rpm)
# The package holds exactly what `cmake --install` installs, under /usr. Runtime dependencies
# are computed from the binary: dpkg-shlibdeps for the .deb, rpmbuild's own scan for the .rpm.
# OpenSSL is the exception: the binary loads libssl with dlopen for rediss:// only
# (src/redis/openssl_library.cpp), so no scan of the binary can see it, and it is added below from the
# same place dpkg-shlibdeps looks a library up: its package's shlibs entry.
set(CPACK_PACKAGE_NAME redlock-run)
set(CPACK_PACKAGE_VERSION ${PROJECT_VERSION})
set(CPACK_PACKAGE_CONTACT "redlock-run developers <dev@redlock-run.invalid>")
set(CPACK_PACKAGE_VENDOR "redlock-run developers")
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
set(CPACK_DEBIAN_PACKAGE_SUGGESTS "redis-server, bash-completion")

set(CPACK_RPM_FILE_NAME RPM-DEFAULT)
set(CPACK_RPM_PACKAGE_LICENSE "Undecided")
set(CPACK_RPM_PACKAGE_GROUP "Applications/System")
set(CPACK_RPM_PACKAGE_AUTOREQ ON)
if(CMAKE_SIZEOF_VOID_P EQUAL 8)
  set(CPACK_RPM_PACKAGE_REQUIRES "${libssl_soname}()(64bit)")  # rpm's name for the library
else()
  set(CPACK_RPM_PACKAGE_REQUIRES "${libssl_soname}")
endif()
set(CPACK_RPM_PACKAGE_SUGGESTS "redis")
# Directories that the filesystem package owns on RPM systems.
set(CPACK_RPM_EXCLUDE_FROM_AUTO_FILELIST_ADDITION
    /usr/share/man /usr/share/man/man1 /usr/share/bash-completion
    /usr/share/bash-completion/completions /usr/share/zsh /usr/share/zsh/vendor-completions
    /usr/share/fish /usr/share/fish/vendor_completions.d /usr/share/doc)

include(CPack)
