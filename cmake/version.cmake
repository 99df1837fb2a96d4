# The version that --version prints: the project version, plus `git describe` when the source tree
# is a git checkout of its own (not a tarball unpacked inside some other repository). Runs at
# configure time only: a build tree does not rebuild itself when HEAD moves, so that packaging
# or installing it (cpack builds its "preinstall" target) never relinks the binary under test.
#
# Also usable as a script, so that a test can check the fallback without a build:
#   cmake -DSOURCE_DIR=DIR -DPROJECT_VERSION=X.Y.Z -P cmake/version.cmake   (prints the version)

function(redlock_version source_dir base out_var)
  set(version "${base}")
  find_package(Git QUIET)
  if(GIT_FOUND)
    execute_process(
      COMMAND ${GIT_EXECUTABLE} -C "${source_dir}" rev-parse --show-toplevel
      OUTPUT_VARIABLE toplevel
      RESULT_VARIABLE rc
      OUTPUT_STRIP_TRAILING_WHITESPACE ERROR_QUIET)
    # A tarball unpacked under another checkout would otherwise describe that checkout.
    if(rc EQUAL 0)
      file(REAL_PATH "${toplevel}" toplevel)
      file(REAL_PATH "${source_dir}" source_real)
    endif()
    if(rc EQUAL 0 AND toplevel STREQUAL source_real)
      execute_process(
        COMMAND ${GIT_EXECUTABLE} -C "${source_dir}" describe --tags --always --dirty
        OUTPUT_VARIABLE describe
        RESULT_VARIABLE rc
        OUTPUT_STRIP_TRAILING_WHITESPACE ERROR_QUIET)
      if(rc EQUAL 0 AND NOT describe STREQUAL "")
        set(version "${base} (git ${describe})")
      endif()
    endif()
  endif()
  set(${out_var} "${version}" PARENT_SCOPE)
endfunction()

if(CMAKE_SCRIPT_MODE_FILE STREQUAL CMAKE_CURRENT_LIST_FILE)
  redlock_version("${SOURCE_DIR}" "${PROJECT_VERSION}" version)
  message("${version}")
endif()
