# SPDX-License-Identifier: MIT
# Run by cpack (CPACK_PRE_BUILD_SCRIPTS) on the staging tree, after the install rules put the
# files there and before dpkg-deb packs them. Debian's policy wants two things that
# `cmake --install` has no reason to do: man pages compressed with gzip -9n (no name or
# timestamp in the header, so that rebuilds are identical), and a changelog in
# /usr/share/doc/<package>/. The package is native (its version has no Debian revision), so
# the changelog is changelog.gz, made from packaging/changelog (Debian's changelog format).
# CPACK_STRIP_FILES has stripped the binary; like dh_strip, also drop the compiler's .comment
# notes, which nothing reads (lintian: binary-has-unneeded-section).
set(root "${CPACK_TEMPORARY_DIRECTORY}${CPACK_PACKAGING_INSTALL_PREFIX}")
if(NOT IS_DIRECTORY "${root}/share/doc/redlock-run")
  message(FATAL_ERROR "deb-prebuild.cmake: no ${root}/share/doc/redlock-run in the staging tree")
endif()

execute_process(COMMAND ${CPACK_REDLOCK_OBJCOPY} --remove-section=.comment "${root}/bin/redlock-run"
                COMMAND_ERROR_IS_FATAL ANY)

find_program(GZIP gzip REQUIRED)
file(GLOB_RECURSE man_pages "${root}/share/man/*.[1-9]")
foreach(page IN LISTS man_pages)
  execute_process(COMMAND ${GZIP} -9nf "${page}" COMMAND_ERROR_IS_FATAL ANY)
endforeach()

set(changelog "${root}/share/doc/redlock-run/changelog")
file(COPY_FILE "${CPACK_REDLOCK_SOURCE_DIR}/packaging/changelog" "${changelog}")
file(CHMOD "${changelog}" PERMISSIONS OWNER_READ OWNER_WRITE GROUP_READ WORLD_READ)
execute_process(COMMAND ${GZIP} -9nf "${changelog}" COMMAND_ERROR_IS_FATAL ANY)
