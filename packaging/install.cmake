# SPDX-License-Identifier: MIT
# What `cmake --install` puts beside the binary and the man page: shell completions (built from
# packaging/completions/*.in and options.list), the examples and the documentation.

# The option table is substituted into each completion script, so that a new option is one line
# in options.list. fish has no here-documents: its copy goes into a single-quoted string.
# Uninstalling: `xargs rm < build/install_manifest.txt` removes the files, not the directories
# the install had to create (share/doc/redlock-run, and under /usr/local often share/fish,
# share/bash-completion, share/man/man1, ...). This rule writes those to
# build/install_created_dirs.txt, deepest first, so that
# `xargs rmdir < build/install_created_dirs.txt` leaves the tree as it was (README.md, "Install").
# It runs after the binary and the man pages are installed (their rules come first) and before
# the rules below: share/man/man1 (man7) counts as created when it holds nothing but our page;
# bin is the prefix's own (FHS) and is never listed.
install(CODE "set(created_dirs_file \"${CMAKE_BINARY_DIR}/install_created_dirs.txt\")")
install(CODE [[
  set(root "$ENV{DESTDIR}${CMAKE_INSTALL_PREFIX}")
  set(created "")
  foreach(section 1 7)
    file(GLOB pages "${root}/share/man/man${section}/*")
    if(pages STREQUAL "${root}/share/man/man${section}/redlock-run.${section}")
      list(APPEND created "${root}/share/man/man${section}")
    endif()
  endforeach()
  foreach(dir share/bash-completion/completions share/zsh/site-functions
              share/zsh/vendor-completions share/fish/vendor_completions.d
              share/doc/redlock-run/examples/fencing)
    set(path "${root}/${dir}")
    while(NOT EXISTS "${path}" AND NOT path STREQUAL root)
      list(APPEND created "${path}")
      get_filename_component(path "${path}" DIRECTORY)
    endwhile()
  endforeach()
  # zsh's completion goes to one of its two directories only; the other was never made.
  if(CMAKE_INSTALL_PREFIX MATCHES "/usr$")
    list(FILTER created EXCLUDE REGEX "/site-functions$")
  else()
    list(FILTER created EXCLUDE REGEX "/vendor-completions$")
  endif()
  list(REMOVE_DUPLICATES created)
  list(SORT created ORDER DESCENDING)  # a directory before its parent
  list(JOIN created "\n" created)
  file(WRITE "${created_dirs_file}" "${created}\n")
]])

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
