# The version that --version prints: the project version, plus `git describe` when the source tree
# is a git checkout of its own (not a tarball unpacked inside some other repository). Runs at
# configure time; each commit or checkout re-runs the configure step (see redlock_watch_git).
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

# Re-runs the configure step when HEAD moves, so that the described commit does not go stale.
function(redlock_watch_git source_dir)
  find_package(Git QUIET)
  if(NOT GIT_FOUND)
    return()
  endif()
  execute_process(
    COMMAND ${GIT_EXECUTABLE} -C "${source_dir}" rev-parse --path-format=absolute --git-path logs/HEAD
    OUTPUT_VARIABLE head_log
    RESULT_VARIABLE rc
    OUTPUT_STRIP_TRAILING_WHITESPACE ERROR_QUIET)
  if(rc EQUAL 0 AND EXISTS "${head_log}")
    set_property(DIRECTORY "${source_dir}" APPEND PROPERTY CMAKE_CONFIGURE_DEPENDS "${head_log}")
  endif()
endfunction()

if(CMAKE_SCRIPT_MODE_FILE STREQUAL CMAKE_CURRENT_LIST_FILE)
  redlock_version("${SOURCE_DIR}" "${PROJECT_VERSION}" version)
  message("${version}")
endif()
