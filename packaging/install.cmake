# What `cmake --install` puts beside the binary and the man page: shell completions (built from
# packaging/completions/*.in and options.list), the examples and the documentation.

# The option table is substituted into each completion script, so that a new option is one line
# in options.list. fish has no here-documents: its copy goes into a single-quoted string.
set(REDLOCK_COMPLETIONS_DIR ${CMAKE_CURRENT_LIST_DIR}/completions)
set_property(DIRECTORY APPEND PROPERTY CMAKE_CONFIGURE_DEPENDS ${REDLOCK_COMPLETIONS_DIR}/options.list)
file(STRINGS ${REDLOCK_COMPLETIONS_DIR}/options.list option_lines REGEX "^[^#]")
list(JOIN option_lines "\n" REDLOCK_OPTIONS)
string(REPLACE "\\" "\\\\" REDLOCK_OPTIONS_FISH "${REDLOCK_OPTIONS}")
string(REPLACE "'" "\\'" REDLOCK_OPTIONS_FISH "${REDLOCK_OPTIONS_FISH}")
set(completions_out ${CMAKE_CURRENT_BINARY_DIR}/completions)
configure_file(${REDLOCK_COMPLETIONS_DIR}/redlock-run.bash.in ${completions_out}/redlock-run @ONLY)
configure_file(${REDLOCK_COMPLETIONS_DIR}/_redlock-run.zsh.in ${completions_out}/_redlock-run @ONLY)
configure_file(${REDLOCK_COMPLETIONS_DIR}/redlock-run.fish.in ${completions_out}/redlock-run.fish
               @ONLY)

install(FILES ${completions_out}/redlock-run
        DESTINATION ${CMAKE_INSTALL_DATADIR}/bash-completion/completions)
# Debian's zsh searches share/zsh/vendor-completions under /usr but share/zsh/site-functions
# under /usr/local. The prefix is known only at install time (cpack installs to /usr whatever
# the build was configured with, below its staging directory), so the choice is made then.
set(REDLOCK_ZSH_COMPLETION_DIR "" CACHE STRING
    "Where to install the zsh completion (default: by the install prefix, see packaging/install.cmake)")
install(CODE "
  set(zsh_dir \"${REDLOCK_ZSH_COMPLETION_DIR}\")
  if(zsh_dir STREQUAL \"\" AND CMAKE_INSTALL_PREFIX MATCHES \"/usr$\")
    set(zsh_dir share/zsh/vendor-completions)
  elseif(zsh_dir STREQUAL \"\")
    set(zsh_dir share/zsh/site-functions)
  endif()
  if(NOT IS_ABSOLUTE \"\${zsh_dir}\")
    set(zsh_dir \"\${CMAKE_INSTALL_PREFIX}/\${zsh_dir}\")
  endif()
  file(INSTALL DESTINATION \"\${zsh_dir}\" TYPE FILE FILES \"${completions_out}/_redlock-run\")
")
install(FILES ${completions_out}/redlock-run.fish
        DESTINATION ${CMAKE_INSTALL_DATADIR}/fish/vendor_completions.d)

install(FILES README.md packaging/copyright DESTINATION ${CMAKE_INSTALL_DOCDIR})
# The whole tree, fencing/ included. Its scripts lose their executable bit (install(DIRECTORY)'s
# default 644), as dh_fixperms would do to anything under /usr/share/doc: they are for copying.
install(DIRECTORY packaging/examples/ DESTINATION ${CMAKE_INSTALL_DOCDIR}/examples)
