# Binary packages with CPack, from an ordinary build tree:
#   cd build && cpack -G DEB      (redlock-run_X.Y.Z_<arch>.deb)
#   cd build && cpack -G RPM      (needs rpmbuild: apt-get install rpm)
# The package holds exactly what `cmake --install` installs, under /usr. Runtime dependencies
# are computed from the binary: dpkg-shlibdeps for the .deb, rpmbuild's own scan for the .rpm.
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
set(CPACK_DEBIAN_PACKAGE_SHLIBDEPS ON)
set(CPACK_DEBIAN_PACKAGE_SUGGESTS "redis-server, bash-completion")

set(CPACK_RPM_FILE_NAME RPM-DEFAULT)
set(CPACK_RPM_PACKAGE_LICENSE "Undecided")
set(CPACK_RPM_PACKAGE_GROUP "Applications/System")
set(CPACK_RPM_PACKAGE_AUTOREQ ON)
set(CPACK_RPM_PACKAGE_SUGGESTS "redis")
# Directories that the filesystem package owns on RPM systems.
set(CPACK_RPM_EXCLUDE_FROM_AUTO_FILELIST_ADDITION
    /usr/share/man /usr/share/man/man1 /usr/share/bash-completion
    /usr/share/bash-completion/completions /usr/share/zsh /usr/share/zsh/vendor-completions
    /usr/share/fish /usr/share/fish/vendor_completions.d /usr/share/doc)

include(CPack)
